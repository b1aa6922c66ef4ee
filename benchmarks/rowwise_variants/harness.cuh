// Timing and checking helpers for the standalone variant benchmarks of this folder (plain nvcc, no
// torch: seconds to build, so one GPU call can time every variant). Each benchmark includes an op's
// kernel.cu itself, so the variants timed are the ones the op ships, not copies.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t err_ = (call);                                                                   \
        if (err_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

namespace bench {

// A buffer over twice the L2 (50 MB on an H100), written before each timed run so no input is
// served from the cache.
struct Flush {
    void* p = nullptr;
    size_t n = 256u << 20;
    Flush() { CHECK(cudaMalloc(&p, n)); }
    ~Flush() { cudaFree(p); }
    void operator()() { CHECK(cudaMemsetAsync(p, 1, n)); }
};

// Median of `runs` event-timed calls, each after an L2 flush, after `warm` untimed calls. The
// launch errors of every call are checked.
// ONCE=1 in the environment: one untimed call, 0 returned (for Nsight Compute to profile each kernel once).
// B2B=1: each run is kBackToBack calls back to back between the events, no flush (as `brrr bench`
// times: a call's kernels start as the last call's end, the host far ahead), over kBackToBack.
constexpr int kBackToBack = 20;
inline double median_us(const std::function<void()>& fn, int runs = 30, int warm = 3) {
    static Flush flush;
    if (std::getenv("ONCE")) {
        fn();
        CHECK(cudaDeviceSynchronize());
        return 0;
    }
    const int calls = std::getenv("B2B") ? kBackToBack : 1;
    for (int i = 0; i < warm; ++i) fn();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) {
        if (calls == 1) flush();
        CHECK(cudaEventRecord(a));
        for (int k = 0; k < calls; ++k) fn();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        CHECK(cudaGetLastError());
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1e3 / calls);
    }
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, int64_t n) {
    for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
        dst[i] = src[i];
    }
}

// kUnroll float4 a thread, loads first, no loop: the mapping of a kernel whose blocks each take
// their own slice (a row) and leave; the best such a kernel can do at a size is this copy's speed.
template <int kUnroll>
__global__ void copy_slices_kernel(const float4* __restrict__ src, float4* __restrict__ dst, int64_t n) {
    const int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;
    float4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
        if (base + u * blockDim.x < n) v[u] = src[base + u * blockDim.x];
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
        if (base + u * blockDim.x < n) dst[base + u * blockDim.x] = v[u];
    }
}

// GB/s (bytes read + written) of a 1 GiB device-to-device copy, the better of cudaMemcpy (what
// torch's copy_ runs) and a float4 grid-stride kernel.
inline double copy_gbps() {
    const size_t n = 1u << 30;
    void *s, *d;
    CHECK(cudaMalloc(&s, n));
    CHECK(cudaMalloc(&d, n));
    CHECK(cudaMemset(s, 0x3c, n));
    const double memcpy_us = median_us([&] { CHECK(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToDevice)); }, 10);
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const double kernel_us = median_us([&] {
        copy_kernel<<<sms * 8, 256>>>(static_cast<const float4*>(s), static_cast<float4*>(d), n / 16);
    }, 10);
    CHECK(cudaFree(s));
    CHECK(cudaFree(d));
    const double best = std::min(memcpy_us, kernel_us);
    std::printf("copy 1 GiB: cudaMemcpy %.1f us (%.0f GB/s), float4 kernel %.1f us (%.0f GB/s)\n", memcpy_us,
                2.0 * n / memcpy_us / 1e3, kernel_us, 2.0 * n / kernel_us / 1e3);
    return 2.0 * n / best / 1e3;
}

template <typename T> inline T from_float(float v) { return static_cast<T>(v); }
template <> inline __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
template <typename T> inline double to_double(T v) { return static_cast<double>(v); }
template <> inline double to_double(__nv_bfloat16 v) { return static_cast<double>(__bfloat162float(v)); }

template <typename T> const char* name();
template <> inline const char* name<float>() { return "f32"; }
template <> inline const char* name<__nv_bfloat16>() { return "bf16"; }

// A device copy of host values, and back.
template <typename T>
T* upload(const std::vector<T>& h) {
    T* d;
    CHECK(cudaMalloc(&d, h.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}
template <typename T>
std::vector<T> download(const T* d, size_t n) {
    std::vector<T> h(n);
    CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

// ||out - ref|| / ||ref||, NaN if any output is not finite (an unwritten, poisoned element is NaN).
template <typename T>
double rel_err(const std::vector<T>& out, const std::vector<double>& ref) {
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double o = to_double(out[i]);
        if (!std::isfinite(o)) return NAN;
        num += (o - ref[i]) * (o - ref[i]);
        den += ref[i] * ref[i];
    }
    return std::sqrt(num / den);
}

// NaN in every byte pattern torch's dtypes share: 0xff bytes are NaN in float, bfloat16 and double.
inline void poison(void* d, size_t bytes) { CHECK(cudaMemset(d, 0xff, bytes)); }

struct Row {
    std::string what;
    double us, gbps, of_copy, err;
    bool same_bits;
};

inline void print_rows(const std::vector<Row>& rows) {
    std::printf("%-58s %10s %8s %8s %10s %s\n", "variant", "us", "GB/s", "% copy", "rel err", "deterministic");
    for (const Row& r : rows) {
        std::printf("%-58s %10.1f %8.0f %7.1f%% %10.2e %s\n", r.what.c_str(), r.us, r.gbps, 100 * r.of_copy, r.err,
                    r.same_bits ? "yes" : "NO");
    }
}

}  // namespace bench
