// brrr's CPU stand-in for torch's <c10/cuda/CUDAGuard.h>: one device on the CPU execution, so the
// guards a wrapper sets (OptionalCUDAGuard guard(device_of(x))) have nothing to switch.
#pragma once
#include <optional>
#include <c10/core/Device.h>
#include <c10/cuda/CUDAStream.h>

namespace c10::cuda {
struct CUDAGuard {
    explicit CUDAGuard(c10::DeviceIndex) {}
    explicit CUDAGuard(c10::Device) {}
    void set_device(c10::Device) {}
    void set_index(c10::DeviceIndex) {}
};
struct OptionalCUDAGuard {
    OptionalCUDAGuard() = default;
    explicit OptionalCUDAGuard(std::optional<c10::Device>) {}
    explicit OptionalCUDAGuard(c10::Device) {}
    explicit OptionalCUDAGuard(c10::DeviceIndex) {}
    void set_device(c10::Device) {}
    void reset_device(c10::Device) {}
    void set_index(c10::DeviceIndex) {}
};
}  // namespace c10::cuda

namespace at::cuda {
using c10::cuda::CUDAGuard;
using c10::cuda::OptionalCUDAGuard;
}  // namespace at::cuda
