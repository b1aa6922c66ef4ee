// CPU stand-in for CUDA's cuda_fp8.h: the two 8-bit float kinds and their conversions.
// The formats and their rounding are brrr_cpu_fp8.h's; __NV_SATFINITE is what the classes' constructors
// use. NaNs as CUDA's own host code gives them: a float's (or half's, bfloat16's) is 0x7F in either
// kind, a double's keeps its sign (and in E5M2 its two top payload bits).
// Pairs and quads pack their first element in the lowest byte, as CUDA's storage types do.
#pragma once
#include <cmath>
#include <type_traits>

#include "brrr_cpu_fp8.h"
#include "cuda_bf16.h"
#include "cuda_fp16.h"

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short int __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;

typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

constexpr brrr_cpu::fp8::Kind brrr_cpu_fp8_kind(__nv_fp8_interpretation_t k) {
    return k == __NV_E4M3 ? brrr_cpu::fp8::Kind::E4M3 : brrr_cpu::fp8::Kind::E5M2;
}

inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return brrr_cpu::fp8::encode(x, s == __NV_SATFINITE, brrr_cpu_fp8_kind(k));
}
inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return std::isnan(x) ? 0x7F : brrr_cpu::fp8::encode(x, s == __NV_SATFINITE, brrr_cpu_fp8_kind(k));
}
inline __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return __nv_cvt_float_to_fp8(__half2float(__half(x)), s, k);
}
inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t s,
                                                      __nv_fp8_interpretation_t k) {
    return __nv_cvt_float_to_fp8(__bfloat162float(__nv_bfloat16(x)), s, k);
}
inline __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t k) {
    return __half_raw{brrr_cpu::fp8::to_half_bits(x, brrr_cpu_fp8_kind(k))};
}

// The pairs: the first element (x, or a half2's low half) in the low byte.
inline __nv_fp8x2_storage_t brrr_cpu_pack_fp8x2(__nv_fp8_storage_t lo, __nv_fp8_storage_t hi) {
    return static_cast<__nv_fp8x2_storage_t>(lo | (hi << 8));
}
inline __nv_fp8x2_storage_t __nv_cvt_double2_to_fp8x2(double2 x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return brrr_cpu_pack_fp8x2(__nv_cvt_double_to_fp8(x.x, s, k), __nv_cvt_double_to_fp8(x.y, s, k));
}
inline __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2 x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return brrr_cpu_pack_fp8x2(__nv_cvt_float_to_fp8(x.x, s, k), __nv_cvt_float_to_fp8(x.y, s, k));
}
inline __nv_fp8x2_storage_t __nv_cvt_halfraw2_to_fp8x2(__half2_raw x, __nv_saturation_t s,
                                                       __nv_fp8_interpretation_t k) {
    return brrr_cpu_pack_fp8x2(__nv_cvt_halfraw_to_fp8(__half_raw{x.x}, s, k),
                               __nv_cvt_halfraw_to_fp8(__half_raw{x.y}, s, k));
}
inline __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x, __nv_saturation_t s,
                                                           __nv_fp8_interpretation_t k) {
    return brrr_cpu_pack_fp8x2(__nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{x.x}, s, k),
                          __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{x.y}, s, k));
}
inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t k) {
    const brrr_cpu::fp8::Kind kind = brrr_cpu_fp8_kind(k);
    return __half2_raw{brrr_cpu::fp8::to_half_bits(x & 0xFF, kind), brrr_cpu::fp8::to_half_bits(x >> 8, kind)};
}

// One fp8 value of a kind, as CUDA's classes: explicit conversions both ways, saturating to finite.
template <__nv_fp8_interpretation_t Kind>
struct alignas(1) brrr_cpu_fp8 {
    __nv_fp8_storage_t __x;
    static constexpr brrr_cpu::fp8::Kind kKind = brrr_cpu_fp8_kind(Kind);
    brrr_cpu_fp8() = default;
    explicit brrr_cpu_fp8(double f) : __x(brrr_cpu::fp8::encode(f, true, kKind)) {}
    explicit brrr_cpu_fp8(float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, Kind)) {}
    explicit brrr_cpu_fp8(__half f) : brrr_cpu_fp8(__half2float(f)) {}
    explicit brrr_cpu_fp8(__nv_bfloat16 f) : brrr_cpu_fp8(__bfloat162float(f)) {}
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    explicit brrr_cpu_fp8(I i) : brrr_cpu_fp8(static_cast<float>(i)) {}  // via float, as CUDA's
    explicit operator float() const { return brrr_cpu::fp8::decode(__x, kKind); }
    explicit operator double() const { return static_cast<float>(*this); }
    explicit operator __half() const { return brrr_cpu_half(brrr_cpu::fp8::to_half_bits(__x, kKind)); }
    explicit operator __nv_bfloat16() const { return __float2bfloat16(static_cast<float>(*this)); }
    explicit operator bool() const { return (__x & 0x7F) != 0; }
    template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
    explicit operator I() const { return brrr_cpu::fp8::to_integer<I>(static_cast<float>(*this)); }
};

template <__nv_fp8_interpretation_t Kind>
struct alignas(2) brrr_cpu_fp8x2 {
    __nv_fp8x2_storage_t __x;
    static constexpr brrr_cpu::fp8::Kind kKind = brrr_cpu_fp8_kind(Kind);
    brrr_cpu_fp8x2() = default;
    explicit brrr_cpu_fp8x2(float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, Kind)) {}
    explicit brrr_cpu_fp8x2(double2 f) : __x(__nv_cvt_double2_to_fp8x2(f, __NV_SATFINITE, Kind)) {}
    explicit brrr_cpu_fp8x2(__half2 f) : brrr_cpu_fp8x2(__half22float2(f)) {}
    explicit brrr_cpu_fp8x2(__nv_bfloat162 f) : brrr_cpu_fp8x2(__bfloat1622float2(f)) {}
    explicit operator float2() const {
        return float2{brrr_cpu::fp8::decode(__x & 0xFF, kKind), brrr_cpu::fp8::decode(__x >> 8, kKind)};
    }
    explicit operator __half2() const {
        const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(__x, Kind);
        return __half2(__half(__half_raw{r.x}), __half(__half_raw{r.y}));
    }

};

template <__nv_fp8_interpretation_t Kind>
struct alignas(4) brrr_cpu_fp8x4 {
    __nv_fp8x4_storage_t __x;
    static constexpr brrr_cpu::fp8::Kind kKind = brrr_cpu_fp8_kind(Kind);
    brrr_cpu_fp8x4() = default;
    explicit brrr_cpu_fp8x4(float4 f) : __x(pack(float2{f.x, f.y}, float2{f.z, f.w})) {}
    explicit brrr_cpu_fp8x4(__half2 lo, __half2 hi) : __x(pack(__half22float2(lo), __half22float2(hi))) {}
    explicit brrr_cpu_fp8x4(__nv_bfloat162 lo, __nv_bfloat162 hi)
        : __x(pack(__bfloat1622float2(lo), __bfloat1622float2(hi))) {}
    explicit operator float4() const {
        return float4{brrr_cpu::fp8::decode(__x & 0xFF, kKind), brrr_cpu::fp8::decode((__x >> 8) & 0xFF, kKind),
                      brrr_cpu::fp8::decode((__x >> 16) & 0xFF, kKind), brrr_cpu::fp8::decode(__x >> 24, kKind)};
    }

  private:
    static __nv_fp8x4_storage_t pack(float2 lo, float2 hi) {
        return __nv_cvt_float2_to_fp8x2(lo, __NV_SATFINITE, Kind) |
               (static_cast<__nv_fp8x4_storage_t>(__nv_cvt_float2_to_fp8x2(hi, __NV_SATFINITE, Kind)) << 16);
    }
};

typedef brrr_cpu_fp8<__NV_E4M3> __nv_fp8_e4m3;
typedef brrr_cpu_fp8<__NV_E5M2> __nv_fp8_e5m2;
typedef brrr_cpu_fp8x2<__NV_E4M3> __nv_fp8x2_e4m3;
typedef brrr_cpu_fp8x2<__NV_E5M2> __nv_fp8x2_e5m2;
typedef brrr_cpu_fp8x4<__NV_E4M3> __nv_fp8x4_e4m3;
typedef brrr_cpu_fp8x4<__NV_E5M2> __nv_fp8x4_e5m2;
