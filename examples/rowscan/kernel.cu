// rowscan, CUDA C stage, device side: numba_kernel.py's kernels translated. A running sum along each
// row: one block of kThreads per row walks it in chunks, each scanned in shared memory (log2(kThreads)
// steps between barriers), the chunk's total carried on. Sums in double. Only CUDA's headers here.
#include "brrr_kernel.cuh"


constexpr int kThreads = 256;  // spec.py's CUDA_BLOCK: its sim sizes have rows longer than this, so every warp works

// (the inclusive running sum of `value` over the block's threads up to this one, the block's total)
__device__ void block_scan(double value, double* buf, double& inclusive, double& total) {
    const int t = threadIdx.x;
    buf[t] = value;
    __syncthreads();
    for (int offset = 1; offset < kThreads; offset *= 2) {
        const double add = t >= offset ? buf[t - offset] : 0.0;
        __syncthreads();  // every read of this step before any write
        buf[t] += add;
        __syncthreads();
    }
    inclusive = buf[t];
    total = buf[kThreads - 1];
    __syncthreads();  // nobody may overwrite `buf` before every thread has read it
}

template <typename T>
__global__ void rowscan_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
    __shared__ double buf[kThreads];
    const int64_t row = blockIdx.x;
    double carry = 0.0;
    for (int64_t start = 0; start < cols; start += kThreads) {
        const int64_t c = start + threadIdx.x;
        double term = 0.0;
        if (c < cols) {
            term = static_cast<double>(x[row * cols + c]);
        }
        double s, total;
        block_scan(term, buf, s, total);
        if (c < cols) {
            y[row * cols + c] = static_cast<T>(carry + s);
        }
        carry += total;
    }
}

template <typename T>
__global__ void rowscan_backward_kernel(const T* __restrict__ grad_y, const T* __restrict__ x,
                                        T* __restrict__ grad_x, int64_t cols) {
    // The same scan from the row's end: element c gets the sum over the elements c..cols-1.
    __shared__ double buf[kThreads];
    const int64_t row = blockIdx.x;
    double carry = 0.0;
    for (int64_t start = 0; start < cols; start += kThreads) {
        const int64_t c = cols - 1 - (start + threadIdx.x);
        double term = 0.0;
        if (c >= 0) {
            term = static_cast<double>(grad_y[row * cols + c]);
        }
        double s, total;
        block_scan(term, buf, s, total);
        if (c >= 0) {
            grad_x[row * cols + c] = static_cast<T>(carry + s);
        }
        carry += total;
    }
}

template <typename T>
void rowscan_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    rowscan_forward_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(x, y, cols);
}

template <typename T>
void rowscan_backward(const T* grad_y, const T* x, T* grad_x, int64_t rows, int64_t cols, cudaStream_t stream) {
    rowscan_backward_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(grad_y, x, grad_x, cols);
}

// One line per launcher and dtype binding.cpp dispatches to.
template void rowscan_forward(const float*, float*, int64_t, int64_t, cudaStream_t);
template void rowscan_forward(const double*, double*, int64_t, int64_t, cudaStream_t);
template void rowscan_backward(const float*, const float*, float*, int64_t, int64_t, cudaStream_t);
template void rowscan_backward(const double*, const double*, double*, int64_t, int64_t, cudaStream_t);
