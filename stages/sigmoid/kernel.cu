// Sigmoid, CUDA C stage: a line-for-line translation of numba_kernel.py.
// One thread per element, 64-bit indices (tensors above 2^31 elements exist).
#include "brrr.cuh"

template <typename scalar_t>
__global__ void sigmoid_forward_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const scalar_t v = x[i];
    // exp of a non-positive number never overflows: pick the branch that keeps it so.
    if (v >= 0) {
        y[i] = scalar_t(1) / (scalar_t(1) + exp(-v));
    } else {
        const scalar_t e = exp(v);
        y[i] = e / (scalar_t(1) + e);
    }
}

template <typename scalar_t>
__global__ void sigmoid_backward_kernel(const scalar_t* __restrict__ grad_y, const scalar_t* __restrict__ y,
                                        scalar_t* __restrict__ grad_x, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    grad_x[i] = grad_y[i] * y[i] * (scalar_t(1) - y[i]);
}

constexpr int kThreads = 256;

at::Tensor forward(at::Tensor x) {
    brrr::check_input(x, "x");
    BRRR_DEVICE_GUARD(x);
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "sigmoid_forward", [&] {
        sigmoid_forward_kernel<scalar_t><<<brrr::blocks_for(n, kThreads), kThreads, 0, brrr::stream()>>>(
            xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), n);
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
    const int64_t n = yc.numel();
    if (n == 0) return grad_x;
    AT_DISPATCH_FLOATING_TYPES(yc.scalar_type(), "sigmoid_backward", [&] {
        sigmoid_backward_kernel<scalar_t><<<brrr::blocks_for(n, kThreads), kThreads, 0, brrr::stream()>>>(
            gc.data_ptr<scalar_t>(), yc.data_ptr<scalar_t>(), grad_x.data_ptr<scalar_t>(), n);
    });
    BRRR_CHECK_LAUNCH();
    return grad_x;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
