// brrr's CPU stand-in for torch's <ATen/cuda/CUDAContext.h> (the real one pulls in cuBLAS, cuSPARSE
// and cuSOLVER): the current stream and the device's properties a torch extension's wrapper asks for.
#pragma once
#include <cuda_runtime.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace at::cuda {
using c10::cuda::CUDAStream;
using c10::cuda::getCurrentCUDAStream;
using c10::cuda::getDefaultCUDAStream;
using c10::cuda::getStreamFromPool;
inline cudaDeviceProp* getCurrentDeviceProperties() {
    static cudaDeviceProp prop = [] {
        cudaDeviceProp p{};
        cudaGetDeviceProperties(&p, 0);
        return p;
    }();
    return &prop;
}
inline int getNumGPUs() { return 1; }
inline bool is_available() { return true; }
}  // namespace at::cuda
