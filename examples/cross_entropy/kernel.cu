// cross_entropy, CUDA C stage, device side: numba_kernel.py's kernels translated. A loss per row of
// logits [rows, classes] against int64 targets target [rows]: one block of kThreads per row (threads stride
// over the row; warp-shuffle max and sum, then one shared slot a warp), thread 0 writes the loss;
// backward recomputes the max and sum. 64-bit indices, sums in double. Only CUDA's headers here.
#include <cmath>

#include "brrr_kernel.cuh"


constexpr int kThreads = 256;  // spec.py's CUDA_BLOCK: its sim sizes have rows longer than this, so every warp works
constexpr int kWarps = kThreads / 32;

// The max (or the sum) of `value` over the block, returned to every thread: each warp reduces its
// lanes with shuffles, lane 0 writes one slot, and every thread folds the slots in the same order.
template <bool kMax>
__device__ double block_reduce(double value, double* partial) {
    for (int offset = 16; offset > 0; offset /= 2) {
        const double other = __shfl_xor_sync(0xffffffffu, value, offset);
        value = kMax ? fmax(value, other) : value + other;
    }
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
    __syncthreads();
    double result = partial[0];
    for (int w = 1; w < kWarps; ++w) result = kMax ? fmax(result, partial[w]) : result + partial[w];
    __syncthreads();  // nobody may overwrite `partial` before every thread has read it
    return result;
}

// The row's max m and its sum of terms: the same in forward and backward.
template <typename T>
__device__ void row_max_and_sum(const T* xr, int64_t cols, double* partial, double& m, double& total) {
    m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmax(m, static_cast<double>(xr[c]));
    m = block_reduce<true>(m, partial);  // the row's largest value: subtract it before exp, so exp never overflows
    total = 0.0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const double v = static_cast<double>(xr[c]);
        total += exp(v - m);
    }
    total = block_reduce<false>(total, partial);
}

template <typename T>
__global__ void cross_entropy_forward_kernel(const T* __restrict__ logits, const int64_t* __restrict__ target,
                                       T* __restrict__ loss, int64_t cols) {
    __shared__ double partial[kWarps];
    const int64_t row = blockIdx.x;
    const T* xr = logits + row * cols;
    double m, total;
    row_max_and_sum(xr, cols, partial, m, total);
    if (threadIdx.x == 0) {
        const int64_t k = target[row];
        if (k < 0 || k >= cols) {
            loss[row] = static_cast<T>(NAN);  // a target outside the row: no loss to give
        } else {
            loss[row] = static_cast<T>(log(total) + m - static_cast<double>(xr[k]));
        }
    }
}

template <typename T>
__global__ void cross_entropy_backward_kernel(const T* __restrict__ grad_loss, const T* __restrict__ logits,
                                        const int64_t* __restrict__ target, T* __restrict__ grad_logits, int64_t cols) {
    __shared__ double partial[kWarps];
    const int64_t row = blockIdx.x;
    const T* xr = logits + row * cols;
    double m, total;
    row_max_and_sum(xr, cols, partial, m, total);
    const double g = static_cast<double>(grad_loss[row]);
    const int64_t k = target[row];
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const double v = static_cast<double>(xr[c]);
        const double hit = c == k ? 1.0 : 0.0;  // the target's column
        grad_logits[row * cols + c] = static_cast<T>(g * (exp(v - m) / total - hit));
    }
}

template <typename T>
void cross_entropy_forward(const T* logits, const int64_t* target, T* loss, int64_t rows, int64_t cols, cudaStream_t stream) {
    cross_entropy_forward_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(logits, target, loss, cols);
}

template <typename T>
void cross_entropy_backward(const T* grad_loss, const T* logits, const int64_t* target, T* grad_logits, int64_t rows, int64_t cols,
                      cudaStream_t stream) {
    cross_entropy_backward_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(grad_loss, logits, target,
                                                                                        grad_logits, cols);
}

// One line per launcher and dtype binding.cpp dispatches to.
template void cross_entropy_forward(const float*, const int64_t*, float*, int64_t, int64_t, cudaStream_t);
template void cross_entropy_forward(const double*, const int64_t*, double*, int64_t, int64_t, cudaStream_t);
template void cross_entropy_backward(const float*, const float*, const int64_t*, float*, int64_t, int64_t, cudaStream_t);
template void cross_entropy_backward(const double*, const double*, const int64_t*, double*, int64_t, int64_t, cudaStream_t);
