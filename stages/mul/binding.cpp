// Mul, CUDA C stage, host side: forward and backward on torch tensors (the functions every
// stage defines), checking their inputs, allocating outputs and calling kernel.cu's launchers.
#include "brrr.cuh"

#include <tuple>

// Defined in kernel.cu for float, double, __half and __nv_bfloat16.
template <typename T> void mul_forward(const T* a, const T* b, T* y, int64_t n, cudaStream_t stream);
template <typename T>
void mul_backward(const T* grad_y, const T* a, const T* b, T* grad_a, T* grad_b, int64_t n, cudaStream_t stream);

at::Tensor forward(at::Tensor a, at::Tensor b) {
    brrr::check_input(a, "a");
    brrr::check_same(a, b, "a", "b");
    BRRR_DEVICE_GUARD(a);
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto y = at::empty_like(ac);
    const int64_t n = ac.numel();
    if (n == 0) return y;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ac.scalar_type(), "mul_forward", [&] {
        mul_forward(brrr::data<scalar_t>(ac), brrr::data<scalar_t>(bc), brrr::data<scalar_t>(y), n, brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

std::tuple<at::Tensor, at::Tensor> backward(at::Tensor grad_y, at::Tensor a, at::Tensor b) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, a, "grad_y", "a");
    brrr::check_same(a, b, "a", "b");
    BRRR_DEVICE_GUARD(a);
    auto gc = grad_y.contiguous();
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto grad_a = at::empty_like(ac);
    auto grad_b = at::empty_like(bc);
    const int64_t n = ac.numel();
    if (n == 0) return {grad_a, grad_b};
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, ac.scalar_type(), "mul_backward", [&] {
        mul_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(ac), brrr::data<scalar_t>(bc),
                     brrr::data<scalar_t>(grad_a), brrr::data<scalar_t>(grad_b), n, brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return {grad_a, grad_b};
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
