// Sigmoid, CUDA C stage, host side: forward and backward on torch tensors (the functions every
// stage defines), checking their inputs, allocating outputs and calling kernel.cu's launchers.
#include "brrr.cuh"

// Defined in kernel.cu for float, double, __half and __nv_bfloat16.
template <typename T> void sigmoid_forward(const T* x, T* y, int64_t n, cudaStream_t stream);
template <typename T> void sigmoid_backward(const T* grad_y, const T* y, T* grad_x, int64_t n, cudaStream_t stream);

at::Tensor forward(at::Tensor x) {
    brrr::check_input(x, "x");
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    if (xc.numel() == 0) return y;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "sigmoid_forward", [&] {
        sigmoid_forward(brrr::data<scalar_t>(xc), brrr::data<scalar_t>(y), xc.numel(), brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor backward(at::Tensor grad_y, at::Tensor y) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, y, "grad_y", "y");
    BRRR_DEVICE_GUARD(y);
    auto gc = grad_y.contiguous();
    auto yc = y.contiguous();
    auto grad_x = at::empty_like(yc);
    if (yc.numel() == 0) return grad_x;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, yc.scalar_type(), "sigmoid_backward", [&] {
        sigmoid_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(yc), brrr::data<scalar_t>(grad_x),
                         yc.numel(), brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return grad_x;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
