// CPU stand-in for CUDA's cuda_bf16.h: __nv_bfloat16 (8 significant bits, float's exponent) and
// __nv_bfloat162 as 16-bit structs with round-to-nearest-even conversions and CUDA's operators,
// computed in float and rounded once.
#pragma once
#include "brrr_cpu_host.h"
#include "brrr_cpu_f16.h"
#include "cuda_fp16.h"

struct __nv_bfloat16_raw {
    unsigned short x;
};
struct __nv_bfloat162_raw {
    unsigned short x, y;
};

struct alignas(2) __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    constexpr __nv_bfloat16(__nv_bfloat16_raw r) : __x(r.x) {}
    __nv_bfloat16(float f) : __x(brrr_cpu::float_to_bf16_bits(f)) {}
    __nv_bfloat16(double d) : __x(brrr_cpu::double_to_bf16_bits(d)) {}
    __nv_bfloat16(int i) : __nv_bfloat16(static_cast<float>(i)) {}
    __nv_bfloat16(unsigned int i) : __nv_bfloat16(static_cast<float>(i)) {}
    __nv_bfloat16(long long i) : __nv_bfloat16(static_cast<double>(i)) {}
    __nv_bfloat16(unsigned long long i) : __nv_bfloat16(static_cast<double>(i)) {}
    __nv_bfloat16(long i) : __nv_bfloat16(static_cast<double>(i)) {}
    __nv_bfloat16(short i) : __nv_bfloat16(static_cast<float>(i)) {}
    __nv_bfloat16(unsigned short i) : __nv_bfloat16(static_cast<float>(i)) {}
    operator __nv_bfloat16_raw() const { return __nv_bfloat16_raw{__x}; }
    operator float() const { return brrr_cpu::bf16_bits_to_float(__x); }
};

struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    constexpr __nv_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) : x(a), y(b) {}
};
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;

inline __nv_bfloat16 brrr_cpu_bf16(unsigned short bits) { return __nv_bfloat16(__nv_bfloat16_raw{bits}); }

inline float __bfloat162float(__nv_bfloat16 h) { return brrr_cpu::bf16_bits_to_float(h.__x); }
inline __nv_bfloat16 __float2bfloat16(float f) { return brrr_cpu_bf16(brrr_cpu::float_to_bf16_bits(f)); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rz(float f) { return brrr_cpu_bf16(brrr_cpu::float_to_bf16_bits_rz(f)); }
inline __nv_bfloat16 __double2bfloat16(double d) { return brrr_cpu_bf16(brrr_cpu::double_to_bf16_bits(d)); }
inline __nv_bfloat16 __int2bfloat16_rn(int i) { return __float2bfloat16(static_cast<float>(i)); }
inline int __bfloat162int_rz(__nv_bfloat16 h) { return static_cast<int>(__bfloat162float(h)); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
inline short __bfloat16_as_short(__nv_bfloat16 h) { return static_cast<short>(h.__x); }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return brrr_cpu_bf16(u); }
inline __nv_bfloat16 __short_as_bfloat16(short s) { return brrr_cpu_bf16(static_cast<unsigned short>(s)); }
[[gnu::always_inline, gnu::artificial]] inline __nv_bfloat16 __ldg(const __nv_bfloat16* p) { return *p; }

inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162(__float2bfloat16(a), __float2bfloat16(b));
}
inline __nv_bfloat162 __float2bfloat162_rn(float a) { return __floats2bfloat162_rn(a, a); }
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return float2{__bfloat162float(h.x), __bfloat162float(h.y)}; }
inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }

#define BRRR_BF16_BINARY(name, op)                                         \
    inline __nv_bfloat16 name(__nv_bfloat16 a, __nv_bfloat16 b) {          \
        return __float2bfloat16(__bfloat162float(a) op __bfloat162float(b)); \
    }
BRRR_BF16_BINARY(__hadd, +)
BRRR_BF16_BINARY(__hsub, -)
BRRR_BF16_BINARY(__hmul, *)
BRRR_BF16_BINARY(__hdiv, /)
#undef BRRR_BF16_BINARY
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return brrr_cpu_bf16(a.__x ^ 0x8000u); }
inline __nv_bfloat16 __habs(__nv_bfloat16 a) { return brrr_cpu_bf16(a.__x & 0x7fffu); }
inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
    return __double2bfloat16(static_cast<double>(__bfloat162float(a)) * __bfloat162float(b) + __bfloat162float(c));
}
inline bool __hisnan(__nv_bfloat16 a) { return (a.__x & 0x7fffu) > 0x7f80u; }
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16(std::fmax(__bfloat162float(a), __bfloat162float(b)));
}
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __float2bfloat16(std::fmin(__bfloat162float(a), __bfloat162float(b)));
}
inline bool __heq(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) == __bfloat162float(b); }
inline bool __hne(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) != __bfloat162float(b); }
inline bool __hlt(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) < __bfloat162float(b); }
inline bool __hle(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) <= __bfloat162float(b); }
inline bool __hgt(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) > __bfloat162float(b); }
inline bool __hge(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) >= __bfloat162float(b); }
inline __nv_bfloat16 hexp(__nv_bfloat16 a) { return __float2bfloat16(std::exp(__bfloat162float(a))); }
inline __nv_bfloat16 hlog(__nv_bfloat16 a) { return __float2bfloat16(std::log(__bfloat162float(a))); }
inline __nv_bfloat16 hsqrt(__nv_bfloat16 a) { return __float2bfloat16(std::sqrt(__bfloat162float(a))); }
inline __nv_bfloat16 hrsqrt(__nv_bfloat16 a) { return __float2bfloat16(1.0f / std::sqrt(__bfloat162float(a))); }
inline __nv_bfloat16 hrcp(__nv_bfloat16 a) { return __float2bfloat16(1.0f / __bfloat162float(a)); }
inline __nv_bfloat162 __hadd2(__nv_bfloat162 a, __nv_bfloat162 b) { return {__hadd(a.x, b.x), __hadd(a.y, b.y)}; }
inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) { return {__hmul(a.x, b.x), __hmul(a.y, b.y)}; }

inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return __hadd(a, b); }
inline __nv_bfloat16 operator-(__nv_bfloat16 a, __nv_bfloat16 b) { return __hsub(a, b); }
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return __hmul(a, b); }
inline __nv_bfloat16 operator/(__nv_bfloat16 a, __nv_bfloat16 b) { return __hdiv(a, b); }
inline __nv_bfloat16 operator-(__nv_bfloat16 a) { return __hneg(a); }
inline __nv_bfloat16 operator+(__nv_bfloat16 a) { return a; }
inline __nv_bfloat16& operator+=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a + b; }
inline __nv_bfloat16& operator-=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a - b; }
inline __nv_bfloat16& operator*=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a * b; }
inline __nv_bfloat16& operator/=(__nv_bfloat16& a, __nv_bfloat16 b) { return a = a / b; }
inline bool operator==(__nv_bfloat16 a, __nv_bfloat16 b) { return __heq(a, b); }
inline bool operator!=(__nv_bfloat16 a, __nv_bfloat16 b) { return __hne(a, b); }
inline bool operator<(__nv_bfloat16 a, __nv_bfloat16 b) { return __hlt(a, b); }
inline bool operator<=(__nv_bfloat16 a, __nv_bfloat16 b) { return __hle(a, b); }
inline bool operator>(__nv_bfloat16 a, __nv_bfloat16 b) { return __hgt(a, b); }
inline bool operator>=(__nv_bfloat16 a, __nv_bfloat16 b) { return __hge(a, b); }

// __nv_bfloat162's arithmetic, comparisons and operators (brrr_cpu_pair16.h), and its shuffles of halves.
#include "brrr_cpu_pair16.h"
template <> struct brrr_cpu::is_pair16<__nv_bfloat162> : std::true_type {};
inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
inline __nv_bfloat162 __low2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.x, a.x); }
inline __nv_bfloat162 __high2bfloat162(__nv_bfloat162 a) { return __nv_bfloat162(a.y, a.y); }
inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }
[[gnu::always_inline, gnu::artificial]] inline __nv_bfloat162 __ldg(const __nv_bfloat162* p) { return *p; }
