// Row sums, one block a row, in brrr's layout (kernel.cu + binding.cpp), written as llm.c writes
// its kernels: the block reduction comes from common.h and the host launcher has the kernel's name.
#include "brrr_kernel.cuh"
#include "common.h"

template <typename T>
__global__ void row_sum(T* out, const T* x, int64_t cols) {
    const int64_t row = blockIdx.x;
    T acc = T(0);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) acc += x[row * cols + c];
    acc = block_sum(acc);
    if (threadIdx.x == 0) out[row] = acc;
}

template <typename T>
void row_sum(T* out, const T* x, int64_t rows, int64_t cols, cudaStream_t stream) {
    row_sum<T><<<rows, 128, 0, stream>>>(out, x, cols);
}

template void row_sum(float*, const float*, int64_t, int64_t, cudaStream_t);
template void row_sum(double*, const double*, int64_t, int64_t, cudaStream_t);
