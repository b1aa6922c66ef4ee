// 8-bit floats on the CPU (tests/cuda/test_cpu_fp8.py), through cuda_fp8.h as kernels use it: the
// conversions to and from E4M3 and E5M2, and the classes' constructors, packing and conversions; and
// inline PTX's cvt forms of fp8 pairs.
// `prog CASE` prints the 32-bit words it computed, or the launch's fault.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "case_buffers.h"

constexpr int kHalves = 1 << 16;  // every half's value: every tie and neighbour of an fp8 step
constexpr int kHashed = 1 << 12;  // and float bit patterns of every kind (NaN and infinity included)

__device__ float input(int i) {
    if (i < kHalves) return __half2float(__ushort_as_half(static_cast<unsigned short>(i)));
    const unsigned bits = (static_cast<unsigned>(i) * 0x9e3779b9u) ^ 0x85ebca6bu;
    return __uint_as_float(bits);
}

// Each input to the four (kind, saturation) conversions, one byte each: E4M3 no-sat, E4M3 satfinite,
// E5M2 no-sat, E5M2 satfinite from the low byte up.
__global__ void encode(unsigned* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float x = input(i);
    out[i] = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3) | __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) << 8 |
             __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2) << 16 | __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2) << 24;
}

// Each of the 256 bytes as E4M3 and E5M2: the float's bits, and the two halves' bits in one word.
__global__ void decode(unsigned* out) {
    const auto b = static_cast<__nv_fp8_storage_t>(threadIdx.x);
    __nv_fp8_e4m3 e4;
    __nv_fp8_e5m2 e5;
    e4.__x = e5.__x = b;
    out[3 * b] = __float_as_uint(static_cast<float>(e4));
    out[3 * b + 1] = __float_as_uint(static_cast<float>(e5));
    out[3 * b + 2] = __nv_cvt_fp8_to_halfraw(b, __NV_E4M3).x | __nv_cvt_fp8_to_halfraw(b, __NV_E5M2).x << 16;
}

// The classes and the pairs' order, a word each (test_cpu_fp8.py says what each must be and why).
__global__ void classes(unsigned* out) {
    if (threadIdx.x != 0) return;
    out[0] = __nv_fp8_e4m3(1000.0f).__x;
    out[1] = __nv_fp8_e5m2(-1e9).__x;
    out[2] = __nv_fp8x2_e4m3(make_float2(1.0f, -2.0f)).__x;
    out[3] = __nv_fp8x4_e5m2(make_float4(1.0f, 2.0f, 3.0f, 4.0f)).__x;
    out[4] = static_cast<unsigned>(static_cast<int>(__nv_fp8_e4m3(-3.7f)));
    out[5] = static_cast<unsigned char>(__nv_fp8_e4m3(-2.0f));
    const float2 pair = static_cast<float2>(__nv_fp8x2_e5m2(__floats2half2_rn(0.5f, 96.0f)));
    out[6] = __float_as_uint(pair.x);
    out[7] = __float_as_uint(pair.y);
    out[8] = __half_as_ushort(static_cast<__half>(__nv_fp8_e4m3(__float2bfloat16(0.1f))));
    out[9] = __nv_cvt_float2_to_fp8x2(make_float2(1e-9f, -448.0f), __NV_NOSAT, __NV_E4M3);
    out[10] = static_cast<bool>(__nv_fp8_e5m2(-0.0f)) | static_cast<bool>(__nv_fp8_e5m2(1e-30f)) << 1 |
              static_cast<bool>(__nv_fp8_e5m2(3.0f)) << 2;
}

// Inline PTX on pairs: input i with input (7i + 3) mod n, four words: the f32 pair to E4M3 (low half)
// and with .relu to E5M2 (high half); the pair as f16x2 to E4M3; the 16 bits i as an E5M2 pair to
// f16x2; and as an E4M3 pair with .relu.
__global__ void ptx_pairs(unsigned* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float a = input(i), b = input((7 * i + 3) % n);
    unsigned short e4, e5, h4;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(e4) : "f"(a), "f"(b));
    asm("cvt.rn.satfinite.relu.e5m2x2.f32 %0, %1, %2;" : "=h"(e5) : "f"(a), "f"(b));
    const unsigned halves = static_cast<unsigned>(__half_as_ushort(__float2half(a))) << 16 | __half_as_ushort(__float2half(b));
    asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(h4) : "r"(halves));
    const auto bits = static_cast<unsigned short>(i);
    unsigned back5, back4;
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(back5) : "h"(bits));
    asm("cvt.rn.relu.f16x2.e4m3x2 %0, %1;" : "=r"(back4) : "h"(bits));
    out[4 * i] = e4 | static_cast<unsigned>(e5) << 16;
    out[4 * i + 1] = h4;
    out[4 * i + 2] = back5;
    out[4 * i + 3] = back4;
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    const int n = kHalves + kHashed;
    Vec<unsigned> out(4 * n, 0xdeadbeefu);
    size_t shown = 0;
    try {
        if (c == "encode") encode<<<(n + 255) / 256, 256>>>(out.data(), n), shown = n;
        else if (c == "decode") decode<<<1, 256>>>(out.data()), shown = 3 * 256;
        else if (c == "classes") classes<<<1, 32>>>(out.data()), shown = 11;
        else if (c == "ptx_pairs") ptx_pairs<<<(n + 255) / 256, 256>>>(out.data(), n), shown = 4 * static_cast<size_t>(n);
        else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
        if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
        for (size_t i = 0; i < shown; ++i) std::printf("%u ", out[i]);
        std::printf("\n");
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
