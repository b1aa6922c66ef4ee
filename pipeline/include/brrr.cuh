// Helpers for an op's binding.cpp, the host side of its CUDA C stage: input checks, the current
// stream and device, torch's 16-bit types as CUDA's, and the binding macro. binding.cpp is
// compiled once per change to it (torch's headers take seconds); kernel.cu, which includes
// only brrr_kernel.cuh, is recompiled on every edit and linked against it.
//
// With BRRR_CPU defined (brrr's CPU execution of the cuda stage, include/cpu/ first on the include
// path) the same binding.cpp takes CPU tensors: no c10/cuda headers, no streams, and a kernel's
// fault is thrown by the launch itself (see include/cpu/brrr_cpu.h).
#pragma once
// The lightest headers that give at::Tensor, empty_like/empty and dtype dispatch: ATen/ATen.h
// would pull in every operator. An op that needs another operator includes its own header,
// e.g. <ATen/ops/sum.h>.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#ifdef BRRR_CPU
#include "brrr_cpu_host.h"
#else
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <torch/library.h>

namespace brrr {

inline void check_input(const at::Tensor& t, const char* name) {
#ifdef BRRR_CPU
    TORCH_CHECK(t.is_cpu(), name, " must be a CPU tensor (the cuda stage executed on the CPU), got one on ", t.device());
#else
    TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor, got one on ", t.device());
#endif
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

// kernel.cu sees CUDA's __half and __nv_bfloat16, which have the bit layout of at::Half and
// at::BFloat16: data<scalar_t>(t) is t's data as the type kernel.cu's launchers take.
template <typename T> struct Device { using type = T; };
template <> struct Device<at::Half> { using type = __half; };
template <> struct Device<at::BFloat16> { using type = __nv_bfloat16; };

template <typename scalar_t>
typename Device<scalar_t>::type* data(const at::Tensor& t) {
    return reinterpret_cast<typename Device<scalar_t>::type*>(t.data_ptr<scalar_t>());
}

#ifdef BRRR_CPU
inline cudaStream_t stream() { return nullptr; }
#else
inline cudaStream_t stream() { return at::cuda::getCurrentCUDAStream(); }
#endif

}  // namespace brrr

#ifdef BRRR_CPU
// A launch that faults throws from the launch (the message names kernel.cu:line, block, thread).
#define BRRR_CHECK_LAUNCH() ((void)0)
#define BRRR_DEVICE_GUARD(t) ((void)(t))
#else
#define BRRR_CHECK_LAUNCH() C10_CUDA_KERNEL_LAUNCH_CHECK()
// Launch on the tensor's own GPU, not whichever one is current (multi-GPU machines).
#define BRRR_DEVICE_GUARD(t) const c10::cuda::CUDAGuard brrr_device_guard((t).device())
#endif

// BRRR_BIND(m) { m.def("forward", &forward); ... } registers the op's functions with torch.
// brrr names the library when it links a build (a one-line object defining brrr_namespace),
// so binding.cpp's object is reused across kernel edits while each build still gets a
// namespace of its own; a package built without brrr (brrr export) defines BRRR_NAMESPACE.
#ifdef BRRR_NAMESPACE
#define BRRR_BIND(m) TORCH_LIBRARY(BRRR_NAMESPACE, m)
#else
extern "C" const char brrr_namespace[];
#define BRRR_BIND(m)                                                                                   \
    static void brrr_bind(torch::Library&);                                                            \
    static const torch::detail::TorchLibraryInit brrr_bind_init(torch::Library::DEF, &brrr_bind,       \
                                                                brrr_namespace, std::nullopt, __FILE__, \
                                                                __LINE__);                             \
    void brrr_bind(torch::Library& m)
#endif
