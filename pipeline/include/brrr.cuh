// Helpers shared by every op's kernel.cu: input checks, launch sizing, the current stream,
// and the binding macro. The builder defines BRRR_NAMESPACE (one per build, so an edited
// kernel can be loaded beside an older one in the same process).
#pragma once
// The lightest headers that give at::Tensor, empty_like/empty and dtype dispatch: ATen/ATen.h
// would pull in every operator and nearly double the compile time. An op that needs another
// operator includes its own header, e.g. <ATen/ops/sum.h>.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>


#ifndef BRRR_NAMESPACE
#define BRRR_NAMESPACE brrr_unbound
#endif

namespace brrr {

inline void check_input(const at::Tensor& t, const char* name) {
    TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor, got one on ", t.device());
    TORCH_CHECK(at::isFloatingType(t.scalar_type()), name, " must be a floating-point tensor, got ", t.scalar_type());
}

// Same device and dtype (shapes may differ: a matrix and a bias, say).
inline void check_compatible(const at::Tensor& a, const at::Tensor& b, const char* an, const char* bn) {
    check_input(b, bn);
    TORCH_CHECK(a.device() == b.device(), an, " and ", bn, " must be on one device: ", a.device(), " vs ", b.device());
    TORCH_CHECK(a.scalar_type() == b.scalar_type(), an, " and ", bn, " must have one dtype: ", a.scalar_type(), " vs ", b.scalar_type());
}

inline void check_same(const at::Tensor& a, const at::Tensor& b, const char* an, const char* bn) {
    check_compatible(a, b, an, bn);
    TORCH_CHECK(a.sizes() == b.sizes(), an, " and ", bn, " must have one shape: ", a.sizes(), " vs ", b.sizes());
}

// W consecutive elements moved as one access: 16 bytes (one LDG.128/STG.128) when W = 16 / sizeof(T).
template <typename T, int W>
struct alignas(sizeof(T) * W) Pack {
    T v[W];
};

inline bool aligned16(const at::Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0; }

inline unsigned int blocks_for(int64_t n, int threads) {
    return static_cast<unsigned int>((n + threads - 1) / threads);
}

inline cudaStream_t stream() { return at::cuda::getCurrentCUDAStream(); }

}  // namespace brrr

#define BRRR_CHECK_LAUNCH() C10_CUDA_KERNEL_LAUNCH_CHECK()
// Launch on the tensor's own GPU, not whichever one is current (multi-GPU machines).
#define BRRR_DEVICE_GUARD(t) const c10::cuda::CUDAGuard brrr_device_guard((t).device())
#define BRRR_BIND(m) TORCH_LIBRARY(BRRR_NAMESPACE, m)
