// The 8-bit float formats on the CPU, E4M3 and E5M2, for cuda_fp8.h's stand-in and inline PTX's cvt.
//   E4M3: 4 exponent bits (bias 7), 3 mantissa bits, no infinity, S.1111.111 is NaN, largest 448.
//   E5M2: IEEE's layout at 8 bits (bias 15), infinities and NaNs, largest 57344.
// To fp8: from the value as a double (a float, half or bfloat16 is exactly one), rounded once to
// nearest even; a finite value past the largest by half a step or more, or an infinity, becomes the
// largest with satfinite, else NaN (E4M3) or infinity (E5M2). From fp8: exact (every fp8 value is a
// half); a NaN is half's 0x7FFF, float's 0x7FFFFFFF, as CUDA's own host code gives them.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "brrr_cpu_f16.h"

namespace brrr_cpu::fp8 {

enum class Kind { E4M3, E5M2 };

struct Format {
    int mantissa_bits, bias;
    double largest;
};

constexpr Format format(Kind kind) {
    return kind == Kind::E4M3 ? Format{3, 7, 448.0} : Format{2, 15, 57344.0};
}

inline uint8_t encode(double x, bool satfinite, Kind kind) {
    const Format f = format(kind);
    const uint8_t sign = std::signbit(x) ? 0x80 : 0;
    if (std::isnan(x)) {
        // E5M2 keeps the NaN's two top mantissa bits (a quiet NaN stays quiet), as CUDA's conversion does.
        uint64_t bits;
        std::memcpy(&bits, &x, sizeof bits);
        return kind == Kind::E4M3 ? (sign | 0x7F) : (sign | 0x7E | ((bits >> 50) & 0x3));
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
        if (satfinite) rounded = f.largest;
        else return sign | (kind == Kind::E4M3 ? 0x7F : 0x7C);
    }
    if (rounded == 0) return sign;
    const int exponent = std::ilogb(rounded);
    if (exponent < min_exponent)  // subnormal: the value in steps of the smallest one
        return sign | static_cast<uint8_t>(std::ldexp(rounded, f.bias - 1 + f.mantissa_bits));
    const int mask = (1 << f.mantissa_bits) - 1;
    const auto mantissa = static_cast<uint8_t>(std::ldexp(rounded, f.mantissa_bits - exponent)) & mask;
    return sign | static_cast<uint8_t>((exponent + f.bias) << f.mantissa_bits) | mantissa;
}

inline bool is_nan(uint8_t b, Kind kind) {
    return kind == Kind::E4M3 ? (b & 0x7F) == 0x7F : (b & 0x7F) > 0x7C;
}

inline float decode(uint8_t b, Kind kind) {
    const Format f = format(kind);
    const float sign = (b & 0x80) ? -1.0f : 1.0f;
    if (is_nan(b, kind)) return std::bit_cast<float>(0x7FFFFFFFu);
    if (kind == Kind::E5M2 && (b & 0x7F) == 0x7C) return sign * std::numeric_limits<float>::infinity();
    const int exponent = (b & 0x7F) >> f.mantissa_bits;
    const int mantissa = b & ((1 << f.mantissa_bits) - 1);
    const int whole = exponent == 0 ? mantissa : mantissa + (1 << f.mantissa_bits);
    return sign * std::ldexp(static_cast<float>(whole), std::max(exponent, 1) - f.bias - f.mantissa_bits);
}

inline uint16_t to_half_bits(uint8_t b, Kind kind) {
    return is_nan(b, kind) ? 0x7FFF : brrr_cpu::float_to_half_bits(decode(b, kind));
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


// Inline PTX's cvt between fp8 pairs and f32 or f16x2 (the PTX ISA's packing: the first source, or the
// upper half, in the upper byte). Always .satfinite; .relu makes a negative 0 and keeps NaN (0x7F).
inline uint8_t encode_relu(float x, Kind kind, bool relu) {
    if (std::isnan(x)) return 0x7F;
    return encode(relu && x < 0 ? 0.0 : static_cast<double>(x), true, kind);
}
inline uint16_t cvt_f8x2_f32(float a, float b, Kind kind, bool relu) {
    return static_cast<uint16_t>(encode_relu(a, kind, relu) << 8 | encode_relu(b, kind, relu));
}
inline uint16_t cvt_f8x2_f16x2(uint32_t halves, Kind kind, bool relu) {
    return cvt_f8x2_f32(half_bits_to_float(static_cast<uint16_t>(halves >> 16)),
                        half_bits_to_float(static_cast<uint16_t>(halves)), kind, relu);
}
inline uint32_t cvt_f16x2_f8x2(uint16_t pair, Kind kind, bool relu) {
    const auto half = [&](uint8_t b) -> uint32_t {
        const uint16_t h = to_half_bits(b, kind);
        return relu && (h & 0x8000) && h != 0x8000 ? 0 : h;  // a negative (not -0) is 0; NaN is 0x7FFF already
    };
    return half(static_cast<uint8_t>(pair >> 8)) << 16 | half(static_cast<uint8_t>(pair));
}

}  // namespace brrr_cpu::fp8
