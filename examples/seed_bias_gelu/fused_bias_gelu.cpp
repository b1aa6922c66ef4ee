// fused_bias_gelu.cpp: seed 002's binding file as written (this comment line is brrr's).
#include <torch/extension.h>
// Forward declarations of CUDA functions
torch::Tensor fused_bias_gelu_fwd_cuda(torch::Tensor input,
torch::Tensor bias);
torch::Tensor fused_bias_gelu_bwd_cuda(torch::Tensor grad_out,
torch::Tensor input,
torch::Tensor bias);
// Input validation + dispatch
torch::Tensor fused_bias_gelu_fwd(torch::Tensor input,
torch::Tensor bias) {
TORCH_CHECK(input.device().is_cuda(),
"fused_bias_gelu only supports CUDA tensors");
return fused_bias_gelu_fwd_cuda(input, bias);
}
torch::Tensor fused_bias_gelu_bwd(torch::Tensor grad_out,
torch::Tensor input,
torch::Tensor bias) {
return fused_bias_gelu_bwd_cuda(grad_out, input, bias);
}
// pybind11 module definition
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
m.def("forward", &fused_bias_gelu_fwd,
"Fused bias + GELU forward (CUDA)");
m.def("backward", &fused_bias_gelu_bwd,
"Fused bias + GELU backward (CUDA)");
}
