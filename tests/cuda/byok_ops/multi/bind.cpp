// The torch wrapper and the module, compiled by the host compiler: y = 2 x + 1 through both .cu files.
#include <torch/extension.h>

void scale(float* y, const float* x, float s, int64_t n);
void shift(float* y, float by, int64_t n);

torch::Tensor affine_forward(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    if (xc.numel() > 0) {
        scale(y.data_ptr<float>(), xc.data_ptr<float>(), 2.0f, xc.numel());
        shift(y.data_ptr<float>(), 1.0f, xc.numel());
    }
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &affine_forward); }
