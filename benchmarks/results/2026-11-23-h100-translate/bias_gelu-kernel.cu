// bias_gelu, CUDA C stage, device side: translated from numba_kernel.py by `brrr translate`, line by line
// (same names and order; 64-bit indices). A first version to validate and then tune; `brrr validate`
// checks it against the numba stage and the reference.
#include "brrr_kernel.cuh"

#include <cmath>

constexpr double K = 0.7978845608028654;
constexpr double C = 0.044715;

__host__ __device__ inline int64_t py_mod(int64_t a, int64_t b) {
    const int64_t r = a % b;
    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}

// numba_kernel.py:18
template <typename T>
struct sigmoids_result { double v0; double v1; };
template <typename T>
__device__ sigmoids_result<T> sigmoids(brrr::acc_t<T> u) {
    // sigmoid(2z) and sigmoid(-2z) from one exp of a non-positive number, which cannot overflow.
    double z = K * (u + C * u * u * u);
    double e = exp(-2.0 * fabs(z));
    if (z >= 0) {
        return {1.0 / (1.0 + e), e / (1.0 + e)};
    }
    return {e / (1.0 + e), 1.0 / (1.0 + e)};
}

// numba_kernel.py:28
template <typename T>
__global__ void bias_gelu_forward_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y, int64_t n, int64_t cols) {
    int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    brrr::acc_t<T> u = brrr::to_acc(x[i]) + brrr::to_acc(bias[py_mod(i, cols)]);
    auto [s, _] = sigmoids<T>(u);
    y[i] = brrr::from_acc<T>(u * s);
}

// numba_kernel.py:38
template <typename T>
__global__ void bias_gelu_backward_kernel(const T* __restrict__ grad_y, const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ grad_x, int64_t n, int64_t cols) {
    int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) {
        return;
    }
    brrr::acc_t<T> u = brrr::to_acc(x[i]) + brrr::to_acc(bias[py_mod(i, cols)]);
    auto [s, s_neg] = sigmoids<T>(u);
    grad_x[i] = brrr::from_acc<T>(brrr::to_acc(grad_y[i]) * (s + 2.0 * u * s * s_neg * K * (1.0 + 3.0 * C * u * u)));
}

// numba_kernel.py:48
template <typename T>
__global__ void column_sum_kernel(const T* __restrict__ grad_x, T* __restrict__ grad_bias, int64_t rows, int64_t cols) {
    // One thread walks one column, always top to bottom: the same order every run, no atomics.
    int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= cols) {
        return;
    }
    double acc = double(0.0);  // float64 in every dtype: the sum is where rounding errors pile up
    for (int64_t r = 0; r < rows; ++r) {
        acc += brrr::to_acc(grad_x[r * cols + c]);
    }
    grad_bias[c] = brrr::from_acc<T>(acc);
}

// The launchers binding.cpp calls, one per kernel: numba's kernel[grid, block](...).
template <typename T>
void bias_gelu_forward(dim3 grid, dim3 block, const T* x, const T* bias, T* y, int64_t n, int64_t cols, cudaStream_t stream) {
    bias_gelu_forward_kernel<T><<<grid, block, 0, stream>>>(x, bias, y, n, cols);
}
template <typename T>
void bias_gelu_backward(dim3 grid, dim3 block, const T* grad_y, const T* x, const T* bias, T* grad_x, int64_t n, int64_t cols, cudaStream_t stream) {
    bias_gelu_backward_kernel<T><<<grid, block, 0, stream>>>(grad_y, x, bias, grad_x, n, cols);
}
template <typename T>
void column_sum(dim3 grid, dim3 block, const T* grad_x, T* grad_bias, int64_t rows, int64_t cols, cudaStream_t stream) {
    column_sum_kernel<T><<<grid, block, 0, stream>>>(grad_x, grad_bias, rows, cols);
}

// The dtypes binding.cpp dispatches to.
template void bias_gelu_forward<float>(dim3 grid, dim3 block, const float* x, const float* bias, float* y, int64_t n, int64_t cols, cudaStream_t stream);
template void bias_gelu_forward<double>(dim3 grid, dim3 block, const double* x, const double* bias, double* y, int64_t n, int64_t cols, cudaStream_t stream);
template void bias_gelu_forward<__half>(dim3 grid, dim3 block, const __half* x, const __half* bias, __half* y, int64_t n, int64_t cols, cudaStream_t stream);
template void bias_gelu_forward<__nv_bfloat16>(dim3 grid, dim3 block, const __nv_bfloat16* x, const __nv_bfloat16* bias, __nv_bfloat16* y, int64_t n, int64_t cols, cudaStream_t stream);
template void bias_gelu_backward<float>(dim3 grid, dim3 block, const float* grad_y, const float* x, const float* bias, float* grad_x, int64_t n, int64_t cols, cudaStream_t stream);
template void bias_gelu_backward<double>(dim3 grid, dim3 block, const double* grad_y, const double* x, const double* bias, double* grad_x, int64_t n, int64_t cols, cudaStream_t stream);
template void bias_gelu_backward<__half>(dim3 grid, dim3 block, const __half* grad_y, const __half* x, const __half* bias, __half* grad_x, int64_t n, int64_t cols, cudaStream_t stream);
template void bias_gelu_backward<__nv_bfloat16>(dim3 grid, dim3 block, const __nv_bfloat16* grad_y, const __nv_bfloat16* x, const __nv_bfloat16* bias, __nv_bfloat16* grad_x, int64_t n, int64_t cols, cudaStream_t stream);
template void column_sum<float>(dim3 grid, dim3 block, const float* grad_x, float* grad_bias, int64_t rows, int64_t cols, cudaStream_t stream);
template void column_sum<double>(dim3 grid, dim3 block, const double* grad_x, double* grad_bias, int64_t rows, int64_t cols, cudaStream_t stream);
template void column_sum<__half>(dim3 grid, dim3 block, const __half* grad_x, __half* grad_bias, int64_t rows, int64_t cols, cudaStream_t stream);
template void column_sum<__nv_bfloat16>(dim3 grid, dim3 block, const __nv_bfloat16* grad_x, __nv_bfloat16* grad_bias, int64_t rows, int64_t cols, cudaStream_t stream);
