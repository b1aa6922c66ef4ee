// CPU execution of a CUDA C stage, host side: the types and runtime-API calls that both kernel.cu
// and binding.cpp see (dim3, vector types, cudaStream_t, cudaError_t, cudaMemset, ...). No torch
// and nothing that executes a kernel: brrr_cpu.h adds that for kernel.cu. brrr puts this folder
// first on the include path of a CPU build, so <cuda_runtime.h> is brrr's, not the CUDA toolkit's.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <chrono>
#include <cstring>

#ifndef BRRR_CPU
#define BRRR_CPU 1
#endif

// Qualifiers: on the CPU every function is a host function and every variable host memory.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
// Empty, not noinline: libstdc++ spells __attribute__((__noinline__)) and must still compile.
#define __noinline__
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__
#define __managed__
#define __grid_constant__
#ifndef __CUDACC_RTC__
#define __builtin_align__(n) __attribute__((aligned(n)))
#endif

// ---- vector types, with CUDA's sizes and alignments ----------------------------------------------
#define BRRR_VEC2(T, name, align) \
    struct __attribute__((aligned(align))) name { T x, y; };
#define BRRR_VEC3(T, name) \
    struct name { T x, y, z; };
#define BRRR_VEC4(T, name, align) \
    struct __attribute__((aligned(align))) name { T x, y, z, w; };
BRRR_VEC2(char, char2, 2) BRRR_VEC3(char, char3) BRRR_VEC4(char, char4, 4)
BRRR_VEC2(unsigned char, uchar2, 2) BRRR_VEC3(unsigned char, uchar3) BRRR_VEC4(unsigned char, uchar4, 4)
BRRR_VEC2(short, short2, 4) BRRR_VEC3(short, short3) BRRR_VEC4(short, short4, 8)
BRRR_VEC2(unsigned short, ushort2, 4) BRRR_VEC3(unsigned short, ushort3) BRRR_VEC4(unsigned short, ushort4, 8)
BRRR_VEC2(int, int2, 8) BRRR_VEC3(int, int3) BRRR_VEC4(int, int4, 16)
BRRR_VEC2(unsigned int, uint2, 8) BRRR_VEC3(unsigned int, uint3) BRRR_VEC4(unsigned int, uint4, 16)
BRRR_VEC2(long long, longlong2, 16) BRRR_VEC2(unsigned long long, ulonglong2, 16)
BRRR_VEC2(float, float2, 8) BRRR_VEC3(float, float3) BRRR_VEC4(float, float4, 16)
BRRR_VEC2(double, double2, 16) BRRR_VEC3(double, double3)
#undef BRRR_VEC2
#undef BRRR_VEC3
#undef BRRR_VEC4

#define BRRR_MAKE2(T, name) inline name make_##name(T x, T y) { return name{x, y}; }
#define BRRR_MAKE3(T, name) inline name make_##name(T x, T y, T z) { return name{x, y, z}; }
#define BRRR_MAKE4(T, name) inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }
BRRR_MAKE2(int, int2) BRRR_MAKE3(int, int3) BRRR_MAKE4(int, int4)
BRRR_MAKE2(unsigned int, uint2) BRRR_MAKE3(unsigned int, uint3) BRRR_MAKE4(unsigned int, uint4)
BRRR_MAKE2(float, float2) BRRR_MAKE3(float, float3) BRRR_MAKE4(float, float4)
BRRR_MAKE2(double, double2) BRRR_MAKE3(double, double3)
BRRR_MAKE2(long long, longlong2) BRRR_MAKE2(unsigned long long, ulonglong2)
BRRR_MAKE4(char, char4) BRRR_MAKE4(unsigned char, uchar4) BRRR_MAKE2(short, short2) BRRR_MAKE2(unsigned short, ushort2)
#undef BRRR_MAKE2
#undef BRRR_MAKE3
#undef BRRR_MAKE4

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

// ---- the runtime API, as far as a kernel file or a binding uses it -------------------------------
enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorLaunchFailure = 719,
    cudaErrorCooperativeLaunchTooLarge = 720,
};
typedef cudaError_t cudaError;
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaStreamLegacy ((cudaStream_t)0x1)

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
};

enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMaxBlockDimX = 2,
    cudaDevAttrMaxGridDimX = 5,
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrWarpSize = 10,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
    cudaDevAttrCooperativeLaunch = 95,
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9,
};

// cudaLaunchKernelEx's configuration (brrr_cpu.h launches it), with CUDA's names and values.
enum cudaLaunchAttributeID {
    cudaLaunchAttributeIgnore = 0,
    cudaLaunchAttributeAccessPolicyWindow = 1,
    cudaLaunchAttributeCooperative = 2,
    cudaLaunchAttributeSynchronizationPolicy = 3,
    cudaLaunchAttributeClusterDimension = 4,
    cudaLaunchAttributeClusterSchedulingPolicyPreference = 5,
    cudaLaunchAttributeProgrammaticStreamSerialization = 6,
    cudaLaunchAttributeProgrammaticEvent = 7,
    cudaLaunchAttributePriority = 8,
    cudaLaunchAttributeMemSyncDomainMap = 9,
    cudaLaunchAttributeMemSyncDomain = 10,
};
typedef cudaLaunchAttributeID cudaLaunchAttributeId;
union cudaLaunchAttributeValue {
    char pad[64];
    int cooperative;
    struct { unsigned int x, y, z; } clusterDim;
    int programmaticStreamSerializationAllowed;
    int priority;
};
struct cudaLaunchAttribute {
    cudaLaunchAttributeID id;
    char pad[8 - sizeof(cudaLaunchAttributeID)];
    cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
    dim3 gridDim;
    dim3 blockDim;
    size_t dynamicSmemBytes;
    cudaStream_t stream;
    cudaLaunchAttribute* attrs;
    unsigned int numAttrs;
};
typedef cudaLaunchConfig_t cudaLaunchConfig;

struct cudaDeviceProp {
    char name[256];
    size_t sharedMemPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int major;
    int minor;
    int multiProcessorCount;
    size_t sharedMemPerBlockOptin;
    // What benchmark helpers read (llm.c's common.h: threads per SM, the L2 to flush between runs).
    int maxThreadsPerMultiProcessor;
    int l2CacheSize;
    size_t totalGlobalMem;
    int regsPerBlock;
    int clockRate;
};

namespace brrr_cpu {
// What cudaDeviceGetAttribute and cudaGetDeviceProperties report: an H100's limits, but few SMs
// (BRRR_CPU_SMS, default 4), so that grid-stride loops sized to the chip loop on the CPU too.
int device_attribute(cudaDeviceAttr attr);
// cudaFuncSetAttribute's cudaFuncAttributeMaxDynamicSharedMemorySize, kept per kernel as a GPU keeps it
// (the last call wins): a launch then takes no more dynamic shared memory than a GPU would let it.
void set_max_dynamic_shared(const void* kernel, size_t bytes);
}  // namespace brrr_cpu

inline const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "no error";
        case cudaErrorInvalidValue: return "invalid argument";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        case cudaErrorCooperativeLaunchTooLarge: return "too many blocks in cooperative launch";
        default: return "unspecified launch failure";
    }
}
inline const char* cudaGetErrorName(cudaError_t e) { return cudaGetErrorString(e); }
// Faults are thrown by the launch itself (see brrr_cpu.h), so nothing is ever left pending here.
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline cudaError_t cudaPeekAtLastError() { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* device) { *device = 0; return cudaSuccess; }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* count) { *count = 1; return cudaSuccess; }
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int) {
    *value = brrr_cpu::device_attribute(attr);
    return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
    std::memset(p, 0, sizeof(*p));
    std::strcpy(p->name, "brrr CPU execution");
    p->sharedMemPerBlock = brrr_cpu::device_attribute(cudaDevAttrMaxSharedMemoryPerBlock);
    p->sharedMemPerBlockOptin = brrr_cpu::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = p->maxThreadsDim[1] = 1024;
    p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647;
    p->maxGridSize[1] = p->maxGridSize[2] = 65535;
    p->major = brrr_cpu::device_attribute(cudaDevAttrComputeCapabilityMajor);
    p->minor = brrr_cpu::device_attribute(cudaDevAttrComputeCapabilityMinor);
    p->multiProcessorCount = brrr_cpu::device_attribute(cudaDevAttrMultiProcessorCount);
    p->maxThreadsPerMultiProcessor = 2048;
    p->l2CacheSize = 50 * 1024 * 1024;
    p->totalGlobalMem = size_t(80) << 30;
    p->regsPerBlock = 65536;
    p->clockRate = 1755000;
    return cudaSuccess;
}

// Events time the host's wall clock: a launch has ended when it returns on the CPU execution, so a
// benchmark helper that records, synchronizes and reads the elapsed time runs as written.
struct CUevent_st {
    std::chrono::steady_clock::time_point at{};
};
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = new CUevent_st; return cudaSuccess; }
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
    e->at = std::chrono::steady_clock::now();
    return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    *ms = std::chrono::duration<float, std::milli>(end->at - start->at).count();
    return cudaSuccess;
}
template <typename F>
inline cudaError_t cudaFuncSetAttribute(F kernel, cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;  // the carveout: a hint
    if (value < 0 || value > brrr_cpu::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin)) return cudaErrorInvalidValue;
    brrr_cpu::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel), static_cast<size_t>(value));
    return cudaSuccess;
}
inline cudaError_t cudaMemset(void* p, int v, size_t n) { std::memset(p, v, n); return cudaSuccess; }
inline cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t = nullptr) { std::memset(p, v, n); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) { std::memmove(d, s, n); return cudaSuccess; }
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind, cudaStream_t = nullptr) {
    std::memmove(d, s, n);
    return cudaSuccess;
}
inline cudaError_t cudaMalloc(void** p, size_t n) {
    *p = std::aligned_alloc(256, (n + 255) / 256 * 256);
    return *p || n == 0 ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <typename T>
inline cudaError_t cudaMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
inline cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
// Managed memory is host memory here, as all of it is.
constexpr unsigned int cudaMemAttachGlobal = 1;
template <typename T>
inline cudaError_t cudaMallocManaged(T** p, size_t n, unsigned int = cudaMemAttachGlobal) {
    return cudaMalloc(reinterpret_cast<void**>(p), n);
}
template <typename F>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, F, int threads, size_t) {
    // An H100's limits: 2048 threads and 32 blocks an SM.
    *blocks = threads > 0 ? (2048 / threads < 32 ? 2048 / threads : 32) : 0;
    return cudaSuccess;
}
