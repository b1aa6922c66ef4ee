// Helpers as public CUDA code keeps them in a common.h beside the kernels: a block reduction with
// its __shared__ slots declared inside the template, and headers of CUDA's libraries, never called:
// cuBLAS (brrr's stand-in declares its handles) and cuSPARSE (brrr has none: an empty stand-in).
#pragma once
#include <cublas_v2.h>
#include <cusparse.h>

#define WARP_SIZE 32

template <typename T>
__device__ T block_sum(T v) {
    __shared__ T partial[WARP_SIZE];
    const int lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
#pragma unroll
    for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = threadIdx.x < blockDim.x / WARP_SIZE ? partial[threadIdx.x] : T(0);
    if (warp == 0) {
        for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    return v;
}
