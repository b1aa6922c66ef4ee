// Bias + GELU, CUDA C stage, host side: forward and backward on torch tensors (the functions
// every stage defines), checking their inputs, allocating outputs and the backward's scratch,
// and calling kernel.cu's launchers.
#include "brrr.cuh"

#include <tuple>

// Defined in kernel.cu for float, double, __half and __nv_bfloat16.
template <typename T>
void bias_gelu_forward(const T* x, const T* bias, T* y, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T>
void bias_gelu_forward_v1(const T* x, const T* bias, T* y, int64_t rows, int64_t cols, cudaStream_t stream);
template <typename T>
void bias_gelu_backward(const T* grad_y, const T* x, const T* bias, T* grad_x, T* grad_bias, double* partial,
                        int64_t rows, int64_t cols, cudaStream_t stream);
int64_t bias_gelu_backward_parts(int64_t rows, int64_t cols);

static void check_inputs(const at::Tensor& x, const at::Tensor& bias) {
    brrr::check_input(x, "x");
    brrr::check_compatible(x, bias, "x", "bias");
    TORCH_CHECK(x.dim() == 2, "x must be a 2-D matrix [rows, cols], got shape ", x.sizes());
    TORCH_CHECK(bias.dim() == 1 && bias.size(0) == x.size(1), "bias must have shape [", x.size(1), "], got ",
                bias.sizes());
}

// forward and forward_v1 differ only in the launcher they call.
template <typename Launch>
static at::Tensor forward_with(const at::Tensor& x, const at::Tensor& bias, Launch launch) {
    check_inputs(x, bias);
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto y = at::empty_like(xc);
    if (xc.numel() == 0) return y;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "bias_gelu_forward", [&] {
        launch(brrr::data<scalar_t>(xc), brrr::data<scalar_t>(bc), brrr::data<scalar_t>(y), xc.size(0), xc.size(1));
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor forward(at::Tensor x, at::Tensor bias) {
    return forward_with(x, bias, [](auto* xp, auto* bp, auto* yp, int64_t rows, int64_t cols) {
        bias_gelu_forward(xp, bp, yp, rows, cols, brrr::stream());
    });
}

// The previous forward (see kernel.cu), for brrr bench to time beside forward.
at::Tensor forward_v1(at::Tensor x, at::Tensor bias) {
    return forward_with(x, bias, [](auto* xp, auto* bp, auto* yp, int64_t rows, int64_t cols) {
        bias_gelu_forward_v1(xp, bp, yp, rows, cols, brrr::stream());
    });
}

std::tuple<at::Tensor, at::Tensor> backward(at::Tensor grad_y, at::Tensor x, at::Tensor bias) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, x, "grad_y", "x");
    check_inputs(x, bias);
    BRRR_DEVICE_GUARD(x);
    auto gc = grad_y.contiguous();
    auto xc = x.contiguous();
    auto bc = bias.contiguous();
    auto grad_x = at::empty_like(xc);
    auto grad_bias = at::empty_like(bc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (cols == 0) return {grad_x, grad_bias};
    // One partial column sum per block row, summed in order by the second kernel: no atomics.
    auto partial = at::empty({bias_gelu_backward_parts(rows, cols), cols}, xc.options().dtype(at::kDouble));
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "bias_gelu_backward", [&] {
        bias_gelu_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(xc), brrr::data<scalar_t>(bc),
                           brrr::data<scalar_t>(grad_x), brrr::data<scalar_t>(grad_bias), partial.data_ptr<double>(),
                           rows, cols, brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return {grad_x, grad_bias};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("forward_v1", &forward_v1);
    m.def("backward", &backward);
}
