// brrr's CPU stand-in for torch's <c10/cuda/CUDAException.h>: the checks wrappers wrap CUDA calls
// and launches in. torch's own version calls into libc10_cuda, which the CPU wheel lacks. On the CPU
// execution a kernel's fault is reported by brrr's runtime where it happens, so a launch check has
// nothing left to find; a runtime call that returns an error still raises, naming the call.
#pragma once
#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>

#define C10_CUDA_CHECK(EXPR)                                                                       \
    do {                                                                                           \
        const cudaError_t brrr_err_ = (EXPR);                                                      \
        TORCH_CHECK(brrr_err_ == cudaSuccess, "CUDA error: ", cudaGetErrorString(brrr_err_), " (", \
                    #EXPR, ")");                                                                   \
    } while (0)
#define C10_CUDA_CHECK_WARN(EXPR)                                                                  \
    do {                                                                                           \
        const cudaError_t brrr_err_ = (EXPR);                                                      \
        if (brrr_err_ != cudaSuccess) TORCH_WARN("CUDA warning: ", cudaGetErrorString(brrr_err_)); \
    } while (0)
#define C10_CUDA_ERROR_HANDLED(EXPR) EXPR
#define C10_CUDA_IGNORE_ERROR(EXPR) \
    do {                            \
        (void)(EXPR);               \
    } while (0)
#define C10_CUDA_CLEAR_ERROR() \
    do {                       \
    } while (0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
