// Faults made through CUDA's load/store intrinsics and vector types, in the idioms of public
// kernels (llm.c's streaming __ldcs/__stcs, float4 loads): the memory checks must name this file's
// lines and the kernels' parameter names, not brrr's stand-in headers or argument positions.
#include <cuda_runtime.h>
#include <cstdint>

#include "common.h"

// A streaming copy, correct: forward.
__global__ void copy_kernel(float* out, const float* inp1, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) __stcs(&out[i], __ldcs(&inp1[i]));
}

// The same with an off-by-one: the last thread stores one past the end of out.
__global__ void copy_past_end_kernel(float* out, const float* inp1, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) __stcs(&out[i + 1], __ldg(&inp1[i]));
}

// float4 loads from a pointer one float into the tensor: in bounds, but 4 bytes past a multiple of 16.
__global__ void float4_offset_kernel(float* out, const float* inp1, int64_t n4) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        const float4 v = reinterpret_cast<const float4*>(inp1 + 1)[i];
        out[i] = v.x + v.y + v.z + v.w;
    }
}

// The off-by-one again, the store made inside common.h's helper: the fault is placed there, and
// still names this kernel's parameter.
__global__ void helper_past_end_kernel(float* out, const float* inp1, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) store_streaming(out, i + 1, load_streaming(inp1, i));
}

void copy(float* out, const float* inp1, int64_t n, cudaStream_t stream) {
    copy_kernel<<<(n + 127) / 128, 128, 0, stream>>>(out, inp1, n);
}

void copy_past_end(float* out, const float* inp1, int64_t n, cudaStream_t stream) {
    copy_past_end_kernel<<<(n + 127) / 128, 128, 0, stream>>>(out, inp1, n);
}

void float4_offset(float* out, const float* inp1, int64_t n4, cudaStream_t stream) {
    float4_offset_kernel<<<(n4 + 127) / 128, 128, 0, stream>>>(out, inp1, n4);
}

void helper_past_end(float* out, const float* inp1, int64_t n, cudaStream_t stream) {
    helper_past_end_kernel<<<(n + 127) / 128, 128, 0, stream>>>(out, inp1, n);
}
