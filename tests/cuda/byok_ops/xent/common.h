// Helpers shared by the kernels, as public CUDA code keeps them in a common.h.
#pragma once
#include <cuda_runtime.h>
#include <cublas_v2.h>  // included, never called: a common.h pulls it in for the matmul kernels beside these

#define WARP_SIZE 32
#define CEIL_DIV(a, b) (((a) + (b) - 1) / (b))

__device__ inline float warp_reduce_sum(float v) {
#pragma unroll
    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// A block-wide reduction through one __shared__ slot per warp, declared inside the template.
template <typename Op>
__device__ float block_reduce(float v, Op op, float identity) {
    __shared__ float partial[WARP_SIZE];
    const int lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
#pragma unroll
    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    __syncthreads();  // a previous call's readers are done with partial
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    const int warps = CEIL_DIV(blockDim.x, WARP_SIZE);
    v = threadIdx.x < warps ? partial[threadIdx.x] : identity;
    if (warp == 0) {
        for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
        if (lane == 0) partial[0] = v;
    }
    __syncthreads();
    return partial[0];
}

struct Max {
    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
    __device__ float operator()(float a, float b) const { return a + b; }
};
