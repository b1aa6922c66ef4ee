// rmsnorm_shuffle, CUDA C stage, device side: numba_kernel.py's kernels translated. One block of kThreads
// per row (threads stride over the row; a warp-shuffle sum, then one shared slot a warp); 64-bit
// indices; statistics and sums in double. Only CUDA's headers here.
// grad_weight: one thread per column, walking down the rows.
#include "brrr_kernel.cuh"


constexpr int kThreads = 256;  // spec.py's CUDA_BLOCK: its sim sizes have rows longer than this, so every warp works
constexpr int kWarps = kThreads / 32;

// The sum of `value` over the block, returned to every thread: each warp sums its lanes with
// shuffles, lane 0 of each writes one slot, and every thread folds the slots in the same order.
__device__ double block_sum(double value, double* partial) {
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
    __syncthreads();
    double result = 0.0;
    for (int w = 0; w < kWarps; ++w) result += partial[w];
    __syncthreads();  // nobody may overwrite `partial` before every thread has read it
    return result;
}

template <typename T>
__global__ void rmsnorm_shuffle_forward_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y,
                                       double* __restrict__ rstd, int64_t cols, double eps) {
    __shared__ double partial[kWarps];
    const int64_t row = blockIdx.x;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    double total = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const double v = static_cast<double>(xr[c]);
        total += v * v;
    }
    const double r = 1.0 / sqrt(block_sum(total, partial) / cols + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const double v = static_cast<double>(xr[c]);
        yr[c] = static_cast<T>(v * r * static_cast<double>(weight[c]));
    }
    if (threadIdx.x == 0) rstd[row] = r;
}

template <typename T>
__global__ void rmsnorm_shuffle_backward_x_kernel(const T* __restrict__ grad_y, const T* __restrict__ x,
                                          const T* __restrict__ weight, const double* __restrict__ rstd,
                                          T* __restrict__ grad_x, int64_t cols) {
    __shared__ double partial[kWarps];
    const int64_t row = blockIdx.x;
    const double r = rstd[row];
    const T* gr = grad_y + row * cols;
    const T* xr = x + row * cols;
    double total = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const double g = static_cast<double>(gr[c]) * static_cast<double>(weight[c]);
        total += g * static_cast<double>(xr[c]) * r;
    }
    const double row_sum = block_sum(total, partial);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const double g = static_cast<double>(gr[c]) * static_cast<double>(weight[c]);
        grad_x[row * cols + c] = static_cast<T>(r * (g - static_cast<double>(xr[c]) * r * row_sum / cols));
    }
}

template <typename T>
__global__ void rmsnorm_shuffle_backward_weight_kernel(const T* __restrict__ grad_y, const T* __restrict__ x,
                                               const double* __restrict__ rstd, T* __restrict__ grad_weight,
                                               int64_t rows, int64_t cols) {
    // One thread owns a column and walks down the rows: a sum in a fixed order, no atomics.
    const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    double total = 0.0;
    for (int64_t row = 0; row < rows; ++row) {
        const int64_t i = row * cols + c;
        total += static_cast<double>(grad_y[i]) * static_cast<double>(x[i]) * rstd[row];
    }
    grad_weight[c] = static_cast<T>(total);
}

template <typename T>
void rmsnorm_shuffle_forward(const T* x, const T* weight, T* y, double* rstd, int64_t rows, int64_t cols, double eps,
                     cudaStream_t stream) {
    rmsnorm_shuffle_forward_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(x, weight, y, rstd, cols, eps);
}

template <typename T>
void rmsnorm_shuffle_backward(const T* grad_y, const T* x, const T* weight, const double* rstd, T* grad_x, T* grad_weight,
                      int64_t rows, int64_t cols, cudaStream_t stream) {
    rmsnorm_shuffle_backward_x_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(grad_y, x, weight, rstd,
                                                                                          grad_x, cols);
    rmsnorm_shuffle_backward_weight_kernel<T><<<brrr::blocks_for(cols, kThreads), kThreads, 0, stream>>>(grad_y, x, rstd,
                                                                                                grad_weight, rows, cols);
}

// One line per launcher and dtype binding.cpp dispatches to.
template void rmsnorm_shuffle_forward(const float*, const float*, float*, double*, int64_t, int64_t, double, cudaStream_t);
template void rmsnorm_shuffle_forward(const double*, const double*, double*, double*, int64_t, int64_t, double, cudaStream_t);
template void rmsnorm_shuffle_backward(const float*, const float*, const float*, const double*, float*, float*, int64_t,
                               int64_t, cudaStream_t);
template void rmsnorm_shuffle_backward(const double*, const double*, const double*, const double*, double*, double*, int64_t,
                               int64_t, cudaStream_t);
