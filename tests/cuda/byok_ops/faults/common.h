// Helpers as llm.c's common.h has them: the access is made here, in a header, not in kernel.cu.
#pragma once
#include <cuda_runtime.h>
#include <cstdint>

__device__ inline float load_streaming(const float* from, int64_t i) { return __ldcs(from + i); }

__device__ inline void store_streaming(float* to, int64_t i, float v) { __stcs(to + i, v); }
