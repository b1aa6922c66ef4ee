// Helpers for an op's kernel.cu. Only CUDA's own headers on purpose: kernel.cu is the file a
// kernel engineer edits dozens of times an hour, and including torch here would add ten
// seconds or more to every rebuild. Everything that touches torch lives in binding.cpp (see
// brrr.cuh), which brrr compiles once and links against each new kernel.cu.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace brrr {

// W consecutive elements moved as one access: 16 bytes (one LDG.128/STG.128) when W = 16 / sizeof(T).
template <typename T, int W>
struct alignas(sizeof(T) * W) Pack {
    T v[W];
};

inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// A 16-byte load of data every block reads again (a norm's weight and bias, read once a row), kept
// ahead of the rows streaming past it: an L1 evict_last priority and an L2 evict_last policy, as
// Triton lowers eviction_policy="evict_last". On an H200, layernorm's forward at 4096 x 8192 runs
// 0.6-1.1 us faster with them (bfloat16 38.3 -> 37.7 us back to back, 39.2 -> 38.3 after an L2 flush;
// float32 70.5 -> 69.6, 71.4 -> 70.3; benchmarks/results/2026-11-30-h200-kept-loads). Only for data
// this small: lines under an evict_last policy outlive the kernel (even a flush by normal writes
// leaves them), so a large tensor loaded this way stays in the L2 for later kernels.
// A plain load before sm_80 and on the CPU. Not volatile: the compiler may schedule it as any load
// (the data does not change in a kernel).
template <typename P>
__device__ __forceinline__ P load_kept(const P* p) {
    static_assert(sizeof(P) == 16, "one 16-byte pack");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint64_t policy;
    uint4 bits;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    asm("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
        : "=r"(bits.x), "=r"(bits.y), "=r"(bits.z), "=r"(bits.w) : "l"(p), "l"(policy));
    P out;
    memcpy(&out, &bits, 16);
    return out;
#else
    return *p;
#endif
}

inline unsigned int blocks_for(int64_t n, int threads) {
    return static_cast<unsigned int>((n + threads - 1) / threads);
}

// The type arithmetic is done in: float for the 16-bit types (one rounding, at the store),
// the type itself otherwise.
template <typename T> struct Acc { using type = T; };
template <> struct Acc<__half> { using type = float; };
template <> struct Acc<__nv_bfloat16> { using type = float; };
template <typename T> using acc_t = typename Acc<T>::type;

// Conversions through CUDA's intrinsics, because torch's extension builds (brrr export) define
// __CUDA_NO_HALF_CONVERSIONS__, which removes __half's implicit ones.
template <typename T> __device__ __forceinline__ acc_t<T> to_acc(T v) { return v; }
template <> __device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_acc(acc_t<T> v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_acc<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// exp(v) for a kernel whose results are stored as T. The 16-bit types keep 8 or 11 bits of a result
// computed in float, so PTX's ex2.approx.f32 (one MUFU.EX2 and a multiply; relative error about 2^-22
// plus what rounding v * log2(e) costs, 2^-24 |v| log2(e)) is as good as the libm exp there and
// costs 2 instructions instead of 8: in a 16-bit elementwise kernel on an H200 the accurate exp made
// the issue rate, not the memory, the limit. The non-.ftz form on purpose: a result below 2^-126
// stays a subnormal, as the accurate exp's does (__expf's .ftz would flush it to zero, and
// gradients that multiply it by a large factor back into the normal range would come out 0).
// float and double keep the accurate exp their tolerances are set for.
template <typename T> __device__ __forceinline__ acc_t<T> exp_for(acc_t<T> v) {
    if constexpr (sizeof(T) == 2) {
        const float scaled = v * 1.4426950408889634f;
#ifdef __CUDA_ARCH__
        float r;
        asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(scaled));
        return r;
#else  // the CPU execution (and nvcc's host pass): the same scaled argument, exp2 correctly rounded
        return exp2f(scaled);
#endif
    } else {
        return exp(v);
    }
}

// Sums and maxima across the 32 lanes of a warp: every lane gets the result.
template <typename T> __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

template <typename T> __device__ __forceinline__ T warp_max(T v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Programmatic dependent launch (compute capability 9.0): a kernel launched with
// cudaLaunchAttributeProgrammaticStreamSerialization may start before the kernel ahead of it in the
// stream ends; wait_for_prior_grid() holds it until that kernel has finished and its writes are
// visible, and allow_dependents() lets the next kernel start launching now. Both are no-ops for a
// kernel launched the ordinary way, on older GPUs, and on the CPU (where launches run one by one).
__device__ __forceinline__ void wait_for_prior_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
}

// Launch facts of the current device, asked of the runtime once per device (a launcher that needs
// them asks on every call, and each runtime query costs host time a call pays again and again).
// device_attribute: one cudaDeviceAttr. blocks_per_sm: how many blocks of `kernel` an SM holds at
// `threads` threads and `smem` bytes of dynamic shared memory, at least 1. Past 48 KB a kernel must
// be allowed its dynamic shared memory (allow_shared) before each launch that takes it: the
// allowance is the kernel's, so a launch of the same kernel with another size, here or in another
// thread, may have changed it since.
namespace detail {
inline std::mutex& facts_mutex() {
    static std::mutex m;
    return m;
}
inline int current_device() {
    int device = 0;
    cudaGetDevice(&device);
    return device;
}
}  // namespace detail

inline int device_attribute(cudaDeviceAttr attr) {
    static std::map<std::pair<int, int>, int> known;
    const std::pair<int, int> key{detail::current_device(), static_cast<int>(attr)};
    const std::lock_guard<std::mutex> hold(detail::facts_mutex());
    const auto found = known.find(key);
    if (found != known.end()) return found->second;
    int value = 0;
    cudaDeviceGetAttribute(&value, attr, key.first);
    return known[key] = value;
}

template <typename... P>
inline void allow_shared(void (*kernel)(P...), size_t smem) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
}

template <typename... P>
inline int blocks_per_sm(void (*kernel)(P...), int threads, size_t smem) {
    static std::map<std::tuple<const void*, int, int, size_t>, int> known;
    const std::tuple<const void*, int, int, size_t> key{reinterpret_cast<const void*>(kernel), detail::current_device(),
                                                        threads, smem};
    const std::lock_guard<std::mutex> hold(detail::facts_mutex());
    const auto found = known.find(key);
    if (found != known.end()) return found->second;
    allow_shared(kernel, smem);
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem);
    return known[key] = per_sm > 0 ? per_sm : 1;
}

// A launch that may begin while the kernel before it in the stream still runs: programmatic dependent
// launch, on a GPU that has it (compute capability 9.0 and up; elsewhere, and on the CPU, an ordinary
// launch). The kernel must call wait_for_prior_grid() before it reads or writes global memory, so it
// still sees every write of the kernel before it and never overwrites what that kernel still reads;
// what it saves is its own launch, which overlaps the last blocks of a kernel that calls
// allow_dependents(). Each op's kernel.cu says what that was measured to save.
template <typename... P, typename... A>
inline void launch_early(void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A... args) {
    cudaLaunchAttribute early[1];
    early[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    early[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config{};
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = smem;
    config.stream = stream;
    config.attrs = early;
    config.numAttrs = device_attribute(cudaDevAttrComputeCapabilityMajor) >= 9 ? 1 : 0;
    cudaLaunchKernelEx(&config, kernel, args...);
}

}  // namespace brrr
