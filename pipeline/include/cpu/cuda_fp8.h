// CPU stand-in for CUDA's cuda_fp8.h: the two 8-bit float kinds and their conversions.
//   E4M3: 4 exponent bits (bias 7), 3 mantissa bits, no infinity, S.1111.111 is NaN, largest 448.
//   E5M2: IEEE's layout at 8 bits (bias 15), infinities and NaNs, largest 57344.
// To fp8: from the value as a double (a float, half or bfloat16 is exactly one), rounded once to
// nearest even. A finite value past the largest by half a step or more, or an infinity, becomes the
// largest with __NV_SATFINITE (what the classes' constructors use), else NaN (E4M3) or infinity (E5M2).
// NaNs as CUDA's own host code gives them: a float's (or half's, bfloat16's) is 0x7F in either kind,
// a double's keeps its sign (and in E5M2 its two top payload bits). From fp8: exact (every fp8 value is
// a half); a NaN is half's 0x7FFF, float's 0x7FFFFFFF.
// Pairs and quads pack their first element in the lowest byte, as CUDA's storage types do.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "cuda_bf16.h"
#include "cuda_fp16.h"

typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short int __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;

typedef enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE } __nv_saturation_t;
typedef enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 } __nv_fp8_interpretation_t;

namespace brrr_cpu::fp8 {

struct Format {
    int mantissa_bits, bias;
    double largest;
};

constexpr Format format(__nv_fp8_interpretation_t kind) {
    return kind == __NV_E4M3 ? Format{3, 7, 448.0} : Format{2, 15, 57344.0};
}

inline __nv_fp8_storage_t encode(double x, __nv_saturation_t saturate, __nv_fp8_interpretation_t kind) {
    const Format f = format(kind);
    const uint8_t sign = std::signbit(x) ? 0x80 : 0;
    if (std::isnan(x)) {
        // E5M2 keeps the NaN's two top mantissa bits (a quiet NaN stays quiet), as CUDA's conversion does.
        uint64_t bits;
        std::memcpy(&bits, &x, sizeof bits);
        return kind == __NV_E4M3 ? (sign | 0x7F) : (sign | 0x7E | ((bits >> 50) & 0x3));
    }
    const int min_exponent = 1 - f.bias;  // of the smallest normal
    const double a = std::fabs(x);
    double rounded = a;
    if (std::isfinite(a) && a != 0) {
        // The step at a's binade (the subnormals' below the normals); a / step is exact, so one rounding.
        const int exponent = std::max(std::ilogb(a), min_exponent);
        const double step = std::ldexp(1.0, exponent - f.mantissa_bits);
        rounded = std::nearbyint(a / step) * step;
    }
    if (rounded > f.largest) {
        if (saturate == __NV_SATFINITE) rounded = f.largest;
        else return sign | (kind == __NV_E4M3 ? 0x7F : 0x7C);
    }
    if (rounded == 0) return sign;
    const int exponent = std::ilogb(rounded);
    if (exponent < min_exponent)  // subnormal: the value in steps of the smallest one
        return sign | static_cast<uint8_t>(std::ldexp(rounded, f.bias - 1 + f.mantissa_bits));
    const auto mantissa = static_cast<uint8_t>(std::ldexp(rounded, f.mantissa_bits - exponent)) & ((1 << f.mantissa_bits) - 1);
    return sign | static_cast<uint8_t>((exponent + f.bias) << f.mantissa_bits) | mantissa;
}

inline bool is_nan(__nv_fp8_storage_t b, __nv_fp8_interpretation_t kind) {
    return kind == __NV_E4M3 ? (b & 0x7F) == 0x7F : (b & 0x7F) > 0x7C;
}

inline float decode(__nv_fp8_storage_t b, __nv_fp8_interpretation_t kind) {
    const Format f = format(kind);
    const float sign = (b & 0x80) ? -1.0f : 1.0f;
    if (is_nan(b, kind)) return std::bit_cast<float>(0x7FFFFFFFu);
    if (kind == __NV_E5M2 && (b & 0x7F) == 0x7C) return sign * std::numeric_limits<float>::infinity();
    const int exponent = (b & 0x7F) >> f.mantissa_bits;
    const int mantissa = b & ((1 << f.mantissa_bits) - 1);
    const int whole = exponent == 0 ? mantissa : mantissa + (1 << f.mantissa_bits);
    return sign * std::ldexp(static_cast<float>(whole), std::max(exponent, 1) - f.bias - f.mantissa_bits);
}

inline __half_raw to_half(__nv_fp8_storage_t b, __nv_fp8_interpretation_t kind) {
    return is_nan(b, kind) ? __half_raw{0x7FFF} : static_cast<__half_raw>(__half(decode(b, kind)));
}

// An integer from an fp8 value as CUDA's operators give it: toward zero, clamped to the type, NaN 0
// (the 64-bit types' NaN: their smallest value, as CUDA's conversions from half give it).
template <class I>
I to_integer(float v) {
    if (std::isnan(v)) return sizeof(I) == 8 ? std::numeric_limits<I>::min() : I(0);
    if (v <= static_cast<float>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (v >= static_cast<float>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return static_cast<I>(v);
}

}  // namespace brrr_cpu::fp8

inline __nv_fp8_storage_t __nv_cvt_double_to_fp8(double x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return brrr_cpu::fp8::encode(x, s, k);
}
inline __nv_fp8_storage_t __nv_cvt_float_to_fp8(float x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return std::isnan(x) ? 0x7F : brrr_cpu::fp8::encode(x, s, k);
}
inline __nv_fp8_storage_t __nv_cvt_halfraw_to_fp8(__half_raw x, __nv_saturation_t s, __nv_fp8_interpretation_t k) {
    return __nv_cvt_float_to_fp8(__half2float(__half(x)), s, k);
}
inline __nv_fp8_storage_t __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw x, __nv_saturation_t s,
                                                      __nv_fp8_interpretation_t k) {
    return __nv_cvt_float_to_fp8(__bfloat162float(__nv_bfloat16(x)), s, k);
}
inline __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t x, __nv_fp8_interpretation_t k) {
    return brrr_cpu::fp8::to_half(x, k);
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
    return brrr_cpu_pack_fp8x2(__nv_cvt_halfraw_to_fp8(__half_raw{x.x}, s, k), __nv_cvt_halfraw_to_fp8(__half_raw{x.y}, s, k));
}
inline __nv_fp8x2_storage_t __nv_cvt_bfloat16raw2_to_fp8x2(__nv_bfloat162_raw x, __nv_saturation_t s,
                                                           __nv_fp8_interpretation_t k) {
    return brrr_cpu_pack_fp8x2(__nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{x.x}, s, k),
                          __nv_cvt_bfloat16raw_to_fp8(__nv_bfloat16_raw{x.y}, s, k));
}
inline __half2_raw __nv_cvt_fp8x2_to_halfraw2(__nv_fp8x2_storage_t x, __nv_fp8_interpretation_t k) {
    return __half2_raw{brrr_cpu::fp8::to_half(x & 0xFF, k).x, brrr_cpu::fp8::to_half(x >> 8, k).x};
}

// One fp8 value of a kind, as CUDA's classes: explicit conversions both ways, saturating to finite.
template <__nv_fp8_interpretation_t Kind>
struct alignas(1) brrr_cpu_fp8 {
    __nv_fp8_storage_t __x;
    brrr_cpu_fp8() = default;
    explicit brrr_cpu_fp8(double f) : __x(brrr_cpu::fp8::encode(f, __NV_SATFINITE, Kind)) {}
    explicit brrr_cpu_fp8(float f) : __x(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, Kind)) {}
    explicit brrr_cpu_fp8(__half f) : brrr_cpu_fp8(__half2float(f)) {}
    explicit brrr_cpu_fp8(__nv_bfloat16 f) : brrr_cpu_fp8(__bfloat162float(f)) {}
    template <class I, std::enable_if_t<std::is_integral_v<I>, int> = 0>
    explicit brrr_cpu_fp8(I i) : brrr_cpu_fp8(static_cast<float>(i)) {}  // via float, as CUDA's
    explicit operator float() const { return brrr_cpu::fp8::decode(__x, Kind); }
    explicit operator double() const { return static_cast<float>(*this); }
    explicit operator __half() const { return __half(brrr_cpu::fp8::to_half(__x, Kind)); }
    explicit operator __nv_bfloat16() const { return __float2bfloat16(static_cast<float>(*this)); }
    explicit operator bool() const { return (__x & 0x7F) != 0; }
    template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
    explicit operator I() const { return brrr_cpu::fp8::to_integer<I>(static_cast<float>(*this)); }
};

template <__nv_fp8_interpretation_t Kind>
struct alignas(2) brrr_cpu_fp8x2 {
    __nv_fp8x2_storage_t __x;
    brrr_cpu_fp8x2() = default;
    explicit brrr_cpu_fp8x2(float2 f) : __x(__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, Kind)) {}
    explicit brrr_cpu_fp8x2(double2 f) : __x(__nv_cvt_double2_to_fp8x2(f, __NV_SATFINITE, Kind)) {}
    explicit brrr_cpu_fp8x2(__half2 f) : brrr_cpu_fp8x2(__half22float2(f)) {}
    explicit brrr_cpu_fp8x2(__nv_bfloat162 f) : brrr_cpu_fp8x2(__bfloat1622float2(f)) {}
    explicit operator float2() const {
        return float2{brrr_cpu::fp8::decode(__x & 0xFF, Kind), brrr_cpu::fp8::decode(__x >> 8, Kind)};
    }
    explicit operator __half2() const {
        const __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(__x, Kind);
        return __half2(__half(__half_raw{r.x}), __half(__half_raw{r.y}));
    }

};

template <__nv_fp8_interpretation_t Kind>
struct alignas(4) brrr_cpu_fp8x4 {
    __nv_fp8x4_storage_t __x;
    brrr_cpu_fp8x4() = default;
    explicit brrr_cpu_fp8x4(float4 f) : __x(pack(float2{f.x, f.y}, float2{f.z, f.w})) {}
    explicit brrr_cpu_fp8x4(__half2 lo, __half2 hi) : __x(pack(__half22float2(lo), __half22float2(hi))) {}
    explicit brrr_cpu_fp8x4(__nv_bfloat162 lo, __nv_bfloat162 hi)
        : __x(pack(__bfloat1622float2(lo), __bfloat1622float2(hi))) {}
    explicit operator float4() const {
        return float4{brrr_cpu::fp8::decode(__x & 0xFF, Kind), brrr_cpu::fp8::decode((__x >> 8) & 0xFF, Kind),
                      brrr_cpu::fp8::decode((__x >> 16) & 0xFF, Kind), brrr_cpu::fp8::decode(__x >> 24, Kind)};
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
