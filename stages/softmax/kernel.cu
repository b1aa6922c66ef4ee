// Softmax over the last dim, CUDA C stage: numba_kernel.py's kernels, with each block reduction
// done by warp shuffles plus one shared slot per warp (the simulator has no shuffles, so numba
// takes one slot per thread). One block per row; its threads stride over the row, so rows of any
// length fit. 64-bit indices: rows * cols passes 2^31 long before memory runs out.
#include <ATen/OpMathType.h>

#include <cstdint>
#include <limits>

#include "brrr.cuh"

constexpr int kThreads = 256;  // a multiple of 32: the reduction works in whole warps
constexpr int kWarps = kThreads / 32;

struct Max {
    template <typename T>
    __device__ T operator()(T a, T b) const { return b > a ? b : a; }
};

struct Sum {
    template <typename T>
    __device__ T operator()(T a, T b) const { return a + b; }
};

// The reduction of `value` over the block, returned to every thread. After the xor butterfly all
// lanes of a warp hold the same value (a + b == b + a exactly), and every thread then folds the
// per-warp values in one fixed order, so all threads, and all runs, agree bit for bit.
template <typename T, typename Op>
__device__ T block_reduce(T value, T* partial, Op op) {
    for (int offset = 16; offset > 0; offset /= 2) {
        value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
    }
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
    __syncthreads();
    T result = partial[0];
    for (int w = 1; w < kWarps; ++w) result = op(result, partial[w]);
    // No thread may write `partial` for the next reduction until every thread has read this one.
    __syncthreads();
    return result;
}

// Half types are read into float (at::opmath_type) and only the result is rounded back.
template <typename scalar_t>
__global__ void softmax_forward_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int64_t cols) {
    using acc_t = at::opmath_type<scalar_t>;
    __shared__ acc_t partial[kWarps];
    const int64_t row = blockIdx.x;
    const scalar_t* xr = x + row * cols;
    scalar_t* yr = y + row * cols;
    acc_t m = -std::numeric_limits<acc_t>::infinity();  // threads past the end of a short row add the identity
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) m = Max{}(m, static_cast<acc_t>(xr[c]));
    m = block_reduce(m, partial, Max{});
    acc_t total = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) total += exp(static_cast<acc_t>(xr[c]) - m);
    total = block_reduce(total, partial, Sum{});
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        yr[c] = static_cast<scalar_t>(exp(static_cast<acc_t>(xr[c]) - m) / total);
    }
}

template <typename scalar_t>
__global__ void softmax_backward_kernel(const scalar_t* __restrict__ grad_y, const scalar_t* __restrict__ y,
                                        scalar_t* __restrict__ grad_x, int64_t cols) {
    using acc_t = at::opmath_type<scalar_t>;
    __shared__ acc_t partial[kWarps];
    const int64_t row = blockIdx.x;
    const scalar_t* gr = grad_y + row * cols;
    const scalar_t* yr = y + row * cols;
    scalar_t* gxr = grad_x + row * cols;
    acc_t dot = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) dot += static_cast<acc_t>(gr[c]) * static_cast<acc_t>(yr[c]);
    dot = block_reduce(dot, partial, Sum{});
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        gxr[c] = static_cast<scalar_t>(static_cast<acc_t>(yr[c]) * (static_cast<acc_t>(gr[c]) - dot));
    }
}

static void check_rows(const at::Tensor& t, const char* name) {
    TORCH_CHECK(t.dim() == 2, name, " must be [rows, cols], got shape ", t.sizes());
    TORCH_CHECK(t.size(0) <= std::numeric_limits<int32_t>::max(), name, ": one block per row allows at most 2^31 - 1 rows, got ",
                t.size(0));
}

at::Tensor forward(at::Tensor x) {
    brrr::check_input(x, "x");
    check_rows(x, "x");
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    if (xc.numel() == 0) return y;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, xc.scalar_type(), "softmax_forward", [&] {
        softmax_forward_kernel<scalar_t><<<static_cast<unsigned int>(rows), kThreads, 0, brrr::stream()>>>(
            xc.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), cols);
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor backward(at::Tensor grad_y, at::Tensor y) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, y, "grad_y", "y");
    check_rows(y, "y");
    auto gc = grad_y.contiguous();
    auto yc = y.contiguous();
    auto grad_x = at::empty_like(yc);
    const int64_t rows = yc.size(0), cols = yc.size(1);
    if (yc.numel() == 0) return grad_x;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, yc.scalar_type(), "softmax_backward", [&] {
        softmax_backward_kernel<scalar_t><<<static_cast<unsigned int>(rows), kThreads, 0, brrr::stream()>>>(
            gc.data_ptr<scalar_t>(), yc.data_ptr<scalar_t>(), grad_x.data_ptr<scalar_t>(), cols);
    });
    BRRR_CHECK_LAUNCH();
    return grad_x;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
