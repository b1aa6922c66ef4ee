// Bit-exact conversions between float/double and the two 16-bit types, round to nearest even
// (CUDA's _rn conversions), NaN kept quiet, overflow to infinity. Written out rather than taken
// from the CPU's F16C instructions so the build needs no -m flags and covers bfloat16 too.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace brrr_cpu {

inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// A value given as sign, unbiased exponent e2 and a significand m with its leading 1 at bit `top`
// (value = m * 2^(e2 - top)), rounded to binary16 with round to nearest even.
inline uint16_t round_to_half(uint32_t sign, int e2, uint64_t m, int top) {
    int e = e2 + 15;  // half's biased exponent
    if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
    // Bits of m to drop: top - 10 for a normal result, more for a subnormal one.
    int shift = top - 10 + (e <= 0 ? 1 - e : 0);
    if (shift > top + 1) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
    uint64_t kept = m >> shift;
    uint64_t rest = m & ((uint64_t(1) << shift) - 1);
    uint64_t halfway = uint64_t(1) << (shift - 1);
    if (rest > halfway || (rest == halfway && (kept & 1))) ++kept;
    // kept holds the implicit bit for normals: adding (e - 1) << 10 lets a carry reach the exponent.
    uint32_t bits = e <= 0 ? static_cast<uint32_t>(kept) : static_cast<uint32_t>(((e - 1) << 10) + kept);
    if (bits >= 0x7c00u) bits = 0x7c00u;
    return static_cast<uint16_t>(sign | bits);
}

inline uint16_t float_to_half_bits(float f) {
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (exp == 0xff) return static_cast<uint16_t>(sign | (man ? 0x7e00u | (man >> 13) : 0x7c00u));
    if (exp == 0 && man == 0) return static_cast<uint16_t>(sign);
    if (exp == 0) {  // float subnormals are far below half's range
        return static_cast<uint16_t>(sign);
    }
    return round_to_half(sign, static_cast<int>(exp) - 127, man | 0x800000u, 23);
}

inline uint16_t float_to_half_bits_rz(float f) {
    uint32_t u = f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    float a = std::fabs(f);
    if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00u);
    if (a >= 65520.0f) return static_cast<uint16_t>(sign | (std::isinf(f) ? 0x7c00u : 0x7bffu));
    uint16_t rn = float_to_half_bits(a);
    // Round to nearest may have gone up by one ulp: step back if it passed |f|.
    uint32_t h = rn;
    float back = 0;
    {
        uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
        back = e == 0 ? std::ldexp(static_cast<float>(m), -24) : std::ldexp(static_cast<float>(m | 0x400), int(e) - 25);
    }
    if (back > a) --h;
    return static_cast<uint16_t>(sign | h);
}

inline uint16_t double_to_half_bits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    uint32_t sign = static_cast<uint32_t>(u >> 48) & 0x8000u;
    uint32_t exp = static_cast<uint32_t>(u >> 52) & 0x7ffu;
    uint64_t man = u & ((uint64_t(1) << 52) - 1);
    if (exp == 0x7ff) return static_cast<uint16_t>(sign | (man ? 0x7e00u | static_cast<uint32_t>(man >> 42) : 0x7c00u));
    if (exp == 0) return static_cast<uint16_t>(sign);
    return round_to_half(sign, static_cast<int>(exp) - 1023, man | (uint64_t(1) << 52), 52);
}

inline float half_bits_to_float(uint16_t h) {
    uint32_t sign = (uint32_t(h) & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        float v = std::ldexp(static_cast<float>(man), -24);
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t float_to_bf16_bits(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
}

inline uint16_t float_to_bf16_bits_rz(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return static_cast<uint16_t>(u >> 16);
}

inline uint16_t double_to_bf16_bits(double d) {
    // Round to float by rounding to odd first, so that the second rounding is correct.
    if (std::isnan(d)) return float_to_bf16_bits(static_cast<float>(d));
    float f = static_cast<float>(d);
    if (std::isfinite(f) && static_cast<double>(f) != d) {
        uint32_t u = f32_bits(f);
        // Truncate toward zero, then set the lowest bit: round to odd.
        if (std::fabs(static_cast<double>(f)) > std::fabs(d)) u -= 1;
        u |= 1u;
        f = bits_f32(u);
    }
    return float_to_bf16_bits(f);
}

inline float bf16_bits_to_float(uint16_t b) { return bits_f32(uint32_t(b) << 16); }

}  // namespace brrr_cpu
