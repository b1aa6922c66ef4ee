// ld and st in inline PTX on the CPU (tests/cuda/test_cpu_ldst.py), written as public kernels write
// their cache-hinted vector loads and flag stores. `prog CASE` prints the output's numbers, or the
// launch's fault. Built by nvcc too (benchmarks/tensor_core_agreement.py): the same numbers on a GPU.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "case_buffers.h"

constexpr int kThreads = 32;

// 4 floats a thread through 16-byte loads and stores with cache qualifiers: out = 2 x + 1.
__global__ void vector_copy(const float* x, float* out) {
    float v[4];
    asm volatile("ld.global.nc.L1::no_allocate.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "l"(x + 4 * threadIdx.x));
    for (float& e : v) e = 2.0f * e + 1.0f;
    asm volatile("st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};"
                 :: "l"(out + 4 * threadIdx.x), "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3]) : "memory");
}

// Narrow loads into 32-bit registers: .s8 and .s16 sign-extend, .u8 and .b16 zero-extend; a .b16 into a
// 16-bit register; a .v2.u32 pair and a .b64.
__global__ void widening(const int8_t* bytes, float* out) {
    const int8_t* p = bytes + 2 * threadIdx.x;
    int s8, s16;
    unsigned u8, b16;
    unsigned short h;
    unsigned pair[2];
    unsigned long long wide;
    asm volatile("ld.global.s8 %0, [%1];" : "=r"(s8) : "l"(p));
    asm volatile("ld.global.u8 %0, [%1];" : "=r"(u8) : "l"(p));
    asm volatile("ld.global.s16 %0, [%1];" : "=r"(s16) : "l"(p));
    asm volatile("ld.global.b16 %0, [%1];" : "=r"(b16) : "l"(p));
    asm volatile("ld.global.nc.b16 %0, [%1];" : "=h"(h) : "l"(p));
    asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(pair[0]), "=r"(pair[1]) : "l"(bytes + 8 * (threadIdx.x / 4)));
    asm volatile("ld.global.b64 %0, [%1];" : "=l"(wide) : "l"(bytes + 8 * (threadIdx.x / 4)));
    float* o = out + 8 * threadIdx.x;
    o[0] = static_cast<float>(s8), o[1] = static_cast<float>(u8), o[2] = static_cast<float>(s16);
    o[3] = static_cast<float>(b16), o[4] = static_cast<float>(h), o[5] = static_cast<float>(pair[0] & 0xffffu);
    o[6] = static_cast<float>(pair[1] >> 16), o[7] = static_cast<float>((wide >> 40) & 0xffffu);
}

// Shared memory by its .shared address: st.shared.v2.f32, then a neighbour's pair by ld.shared.v2.f32;
// an ordered pair (st.release / ld.acquire at .gpu scope) on global memory.
__global__ void shared_and_ordered(const float* x, float* out, unsigned* flags) {
    __shared__ alignas(8) float pairs[kThreads][2];
    const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(&pairs[threadIdx.x][0]));
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(at), "f"(x[2 * threadIdx.x]), "f"(x[2 * threadIdx.x + 1]) : "memory");
    __syncthreads();
    const unsigned next = static_cast<unsigned>(__cvta_generic_to_shared(&pairs[(threadIdx.x + 1) % kThreads][0]));
    float a, b;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];" : "=f"(a), "=f"(b) : "r"(next));
    asm volatile("st.release.gpu.global.b32 [%0], %1;" :: "l"(flags + threadIdx.x), "r"(threadIdx.x + 7u) : "memory");
    unsigned seen;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(seen) : "l"(flags + threadIdx.x) : "memory");
    out[3 * threadIdx.x] = a, out[3 * threadIdx.x + 1] = b, out[3 * threadIdx.x + 2] = static_cast<float>(seen);
}

// The bit-level instructions kernels write around their loads: prmt (two selectors, one with sign
// replication), lop3 (xor of three, majority), mov packing halves and back, and the one-element
// conversions to and from f16 and bf16. Each 32-bit result is stored as its two 16-bit halves.
__global__ void bits(const unsigned* words, float* out) {
    const unsigned a = words[threadIdx.x], b = words[(threadIdx.x + 5) % kThreads], c = words[(threadIdx.x + 11) % kThreads];
    unsigned r[8];
    asm("prmt.b32 %0, %1, %2, 0x5140;" : "=r"(r[0]) : "r"(a), "r"(b));
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r[1]) : "r"(a), "r"(b), "r"(0x9b3fu));
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r[2]) : "r"(a), "r"(b), "r"(c));
    asm("lop3.b32 %0, %1, %2, %3, 0xe8;" : "=r"(r[3]) : "r"(a), "r"(b), "r"(c));
    unsigned short lo, hi;
    asm("mov.b32 {%0, %1}, %2;" : "=h"(lo), "=h"(hi) : "r"(a));
    asm("mov.b32 %0, {%1, %2};" : "=r"(r[4]) : "h"(hi), "h"(lo));
    const float f = static_cast<float>(static_cast<int>(a % 20001u) - 10000) / 7.0f;
    unsigned short h, bf;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bf) : "f"(f));
    float back_h, back_bf;
    asm("cvt.f32.f16 %0, %1;" : "=f"(back_h) : "h"(h));
    asm("cvt.f32.bf16 %0, %1;" : "=f"(back_bf) : "h"(bf));
    r[5] = h | (static_cast<unsigned>(bf) << 16);
    asm("mov.b32 %0, %1;" : "=r"(r[6]) : "f"(back_h));
    asm("mov.b32 %0, %1;" : "=r"(r[7]) : "f"(back_bf));
    for (int k = 0; k < 8; ++k) {
        out[16 * threadIdx.x + 2 * k] = static_cast<float>(r[k] & 0xffffu);
        out[16 * threadIdx.x + 2 * k + 1] = static_cast<float>(r[k] >> 16);
    }
}

// Planted: a 16-byte load one float into the row (not 16-byte aligned). All four lanes are used: of
// a vector only partly used, ptxas may emit narrower loads, which a GPU then does not fault on.
__global__ void misaligned_vector(const float* x, float* out) {
    float v[4];
    asm volatile("ld.global.v4.f32 {%0, %1, %2, %3}, [%4];"  // misaligned load
                 : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "l"(x + 4 * threadIdx.x + 1));
    out[threadIdx.x] = v[0] + v[1] + v[2] + v[3];
}

// Planted: the last thread's pair runs one float past its shared array.
__global__ void shared_past_end(const float* x, float* out) {
    __shared__ alignas(8) float row[kThreads + 1];
    __shared__ alignas(8) float after[2];
    row[threadIdx.x] = x[threadIdx.x];
    if (threadIdx.x == 0) after[0] = after[1] = 0.0f;
    __syncthreads();
    const int at = threadIdx.x == kThreads - 1 ? kThreads : 2 * (threadIdx.x / 2);
    float a, b;
    asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];"  // shared read
                 : "=f"(a), "=f"(b) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&row[at]))));
    out[threadIdx.x] = a + b + after[0];
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    Vec<float> x(4 * kThreads + 4), out(16 * kThreads, -7.0f);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 13) * 0.5f - 2.0f;
    Vec<int8_t> bytes(2 * kThreads + 8);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<int8_t>(static_cast<int>(i * 37 % 256) - 128);
    Vec<unsigned> flags(kThreads, 0), words(kThreads);
    for (int i = 0; i < kThreads; ++i) words[i] = 0x9e3779b9u * static_cast<unsigned>(i + 1) ^ 0x85ebca6bu;
    size_t n = 4 * kThreads;
    try {
        if (c == "vector_copy") vector_copy<<<1, kThreads>>>(x.data(), out.data());
        else if (c == "widening") widening<<<1, kThreads>>>(bytes.data(), out.data()), n = 8 * kThreads;
        else if (c == "shared_and_ordered") shared_and_ordered<<<1, kThreads>>>(x.data(), out.data(), flags.data()), n = 3 * kThreads;
        else if (c == "bits") bits<<<1, kThreads>>>(words.data(), out.data()), n = 16 * kThreads;
        else if (c == "misaligned_vector") misaligned_vector<<<1, kThreads>>>(x.data(), out.data()), n = kThreads;
        else if (c == "shared_past_end") shared_past_end<<<1, kThreads>>>(x.data(), out.data()), n = kThreads;
        else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
        if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
        for (size_t i = 0; i < n; ++i) std::printf("%.9g ", static_cast<double>(out[i]));
        std::printf("\n");
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
