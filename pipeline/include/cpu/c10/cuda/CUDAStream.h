// brrr's CPU stand-in for torch's <c10/cuda/CUDAStream.h>: on the CPU execution there is one stream,
// the default one (0), and a torch extension's wrapper launches on it as written.
#pragma once
#include <c10/core/Device.h>
#include <cuda_runtime.h>

namespace c10::cuda {
struct CUDAStream {
    cudaStream_t stream() const { return nullptr; }
    operator cudaStream_t() const { return nullptr; }
    c10::DeviceIndex device_index() const { return 0; }
    void synchronize() const {}
};
inline CUDAStream getCurrentCUDAStream(c10::DeviceIndex = -1) { return {}; }
inline CUDAStream getDefaultCUDAStream(c10::DeviceIndex = -1) { return {}; }
inline CUDAStream getStreamFromPool(bool = false, c10::DeviceIndex = -1) { return {}; }
}  // namespace c10::cuda
