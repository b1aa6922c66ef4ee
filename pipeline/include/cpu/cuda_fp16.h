// CPU stand-in for CUDA's cuda_fp16.h: __half (IEEE binary16) and __half2 as 16-bit structs with
// round-to-nearest-even conversions and the operators CUDA defines, computed in float and rounded
// once (exact for +, -, *, /: float's 24 bits are more than twice half's 11, plus two).
#pragma once
#include "brrr_cpu_host.h"
#include "brrr_cpu_f16.h"

struct __half_raw {
    unsigned short x;
};
struct __half2_raw {
    unsigned short x, y;
};

struct alignas(2) __half {
    unsigned short __x;
    __half() = default;
    constexpr __half(__half_raw r) : __x(r.x) {}
    __half(float f) : __x(brrr_cpu::float_to_half_bits(f)) {}
    __half(double d) : __x(brrr_cpu::double_to_half_bits(d)) {}
    __half(int i) : __half(static_cast<float>(i)) {}
    __half(unsigned int i) : __half(static_cast<float>(i)) {}
    __half(long long i) : __half(static_cast<double>(i)) {}
    __half(unsigned long long i) : __half(static_cast<double>(i)) {}
    __half(long i) : __half(static_cast<double>(i)) {}
    __half(short i) : __half(static_cast<float>(i)) {}
    __half(unsigned short i) : __half(static_cast<float>(i)) {}
    operator __half_raw() const { return __half_raw{__x}; }
    operator float() const { return brrr_cpu::half_bits_to_float(__x); }
};

struct alignas(4) __half2 {
    __half x, y;
    __half2() = default;
    constexpr __half2(__half a, __half b) : x(a), y(b) {}
};
typedef __half half;
typedef __half2 half2;

inline __half brrr_cpu_half(unsigned short bits) { return __half(__half_raw{bits}); }

inline float __half2float(__half h) { return brrr_cpu::half_bits_to_float(h.__x); }
inline __half __float2half(float f) { return brrr_cpu_half(brrr_cpu::float_to_half_bits(f)); }
inline __half __float2half_rn(float f) { return __float2half(f); }
inline __half __float2half_rz(float f) { return brrr_cpu_half(brrr_cpu::float_to_half_bits_rz(f)); }
inline __half __double2half(double d) { return brrr_cpu_half(brrr_cpu::double_to_half_bits(d)); }
inline __half __int2half_rn(int i) { return __float2half(static_cast<float>(i)); }
inline __half __uint2half_rn(unsigned int i) { return __float2half(static_cast<float>(i)); }
inline int __half2int_rz(__half h) { return static_cast<int>(__half2float(h)); }
inline int __half2int_rn(__half h) { return static_cast<int>(std::nearbyint(__half2float(h))); }
inline unsigned short __half_as_ushort(__half h) { return h.__x; }
inline short __half_as_short(__half h) { return static_cast<short>(h.__x); }
inline __half __ushort_as_half(unsigned short u) { return brrr_cpu_half(u); }
inline __half __short_as_half(short s) { return brrr_cpu_half(static_cast<unsigned short>(s)); }
[[gnu::always_inline, gnu::artificial]] inline __half __ldg(const __half* p) { return *p; }

inline __half2 __floats2half2_rn(float a, float b) { return __half2(__float2half(a), __float2half(b)); }
inline __half2 __float2half2_rn(float a) { return __half2(__float2half(a), __float2half(a)); }
inline __half2 __halves2half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __half2half2(__half a) { return __half2(a, a); }
inline float2 __half22float2(__half2 h) { return float2{__half2float(h.x), __half2float(h.y)}; }
inline __half2 __float22half2_rn(float2 f) { return __floats2half2_rn(f.x, f.y); }
inline __half __low2half(__half2 h) { return h.x; }
inline __half __high2half(__half2 h) { return h.y; }
inline float __low2float(__half2 h) { return __half2float(h.x); }
inline float __high2float(__half2 h) { return __half2float(h.y); }

// Arithmetic: one rounding of the float result, as the hardware's half instructions.
#define BRRR_HALF_BINARY(name, op) \
    inline __half name(__half a, __half b) { return __float2half(__half2float(a) op __half2float(b)); }
BRRR_HALF_BINARY(__hadd, +)
BRRR_HALF_BINARY(__hsub, -)
BRRR_HALF_BINARY(__hmul, *)
BRRR_HALF_BINARY(__hdiv, /)
#undef BRRR_HALF_BINARY
inline __half __hneg(__half a) { return brrr_cpu_half(a.__x ^ 0x8000u); }
inline __half __habs(__half a) { return brrr_cpu_half(a.__x & 0x7fffu); }
inline __half __hfma(__half a, __half b, __half c) {
    return __double2half(static_cast<double>(__half2float(a)) * __half2float(b) + __half2float(c));
}
inline bool __hisnan(__half a) { return (a.__x & 0x7fffu) > 0x7c00u; }
inline int __hisinf(__half a) { return (a.__x & 0x7fffu) == 0x7c00u ? ((a.__x & 0x8000u) ? -1 : 1) : 0; }
inline __half __hmax(__half a, __half b) { return __float2half(std::fmax(__half2float(a), __half2float(b))); }
inline __half __hmin(__half a, __half b) { return __float2half(std::fmin(__half2float(a), __half2float(b))); }
inline bool __heq(__half a, __half b) { return __half2float(a) == __half2float(b); }
inline bool __hne(__half a, __half b) { return __half2float(a) != __half2float(b); }
inline bool __hlt(__half a, __half b) { return __half2float(a) < __half2float(b); }
inline bool __hle(__half a, __half b) { return __half2float(a) <= __half2float(b); }
inline bool __hgt(__half a, __half b) { return __half2float(a) > __half2float(b); }
inline bool __hge(__half a, __half b) { return __half2float(a) >= __half2float(b); }
inline __half hexp(__half a) { return __float2half(std::exp(__half2float(a))); }
inline __half hlog(__half a) { return __float2half(std::log(__half2float(a))); }
inline __half hsqrt(__half a) { return __float2half(std::sqrt(__half2float(a))); }
inline __half hrsqrt(__half a) { return __float2half(1.0f / std::sqrt(__half2float(a))); }
inline __half hrcp(__half a) { return __float2half(1.0f / __half2float(a)); }
inline __half htanh(__half a) { return __float2half(std::tanh(__half2float(a))); }
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2(__hadd(a.x, b.x), __hadd(a.y, b.y)); }
inline __half2 __hsub2(__half2 a, __half2 b) { return __half2(__hsub(a.x, b.x), __hsub(a.y, b.y)); }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2(__hmul(a.x, b.x), __hmul(a.y, b.y)); }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) { return __half2(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }

inline __half operator+(__half a, __half b) { return __hadd(a, b); }
inline __half operator-(__half a, __half b) { return __hsub(a, b); }
inline __half operator*(__half a, __half b) { return __hmul(a, b); }
inline __half operator/(__half a, __half b) { return __hdiv(a, b); }
inline __half operator-(__half a) { return __hneg(a); }
inline __half operator+(__half a) { return a; }
inline __half& operator+=(__half& a, __half b) { return a = a + b; }
inline __half& operator-=(__half& a, __half b) { return a = a - b; }
inline __half& operator*=(__half& a, __half b) { return a = a * b; }
inline __half& operator/=(__half& a, __half b) { return a = a / b; }
inline bool operator==(__half a, __half b) { return __heq(a, b); }
inline bool operator!=(__half a, __half b) { return __hne(a, b); }
inline bool operator<(__half a, __half b) { return __hlt(a, b); }
inline bool operator<=(__half a, __half b) { return __hle(a, b); }
inline bool operator>(__half a, __half b) { return __hgt(a, b); }
inline bool operator>=(__half a, __half b) { return __hge(a, b); }
inline __half2 operator+(__half2 a, __half2 b) { return __hadd2(a, b); }
inline __half2 operator-(__half2 a, __half2 b) { return __hsub2(a, b); }
inline __half2 operator*(__half2 a, __half2 b) { return __hmul2(a, b); }

// The rest of __half2's arithmetic, comparisons and operators (brrr_cpu_pair16.h), and its shuffles of halves.
#include "brrr_cpu_pair16.h"
template <> struct brrr_cpu::is_pair16<__half2> : std::true_type {};
inline __half2 make_half2(__half a, __half b) { return __half2(a, b); }
inline __half2 __low2half2(__half2 a) { return __half2(a.x, a.x); }
inline __half2 __high2half2(__half2 a) { return __half2(a.y, a.y); }
inline __half2 __lows2half2(__half2 a, __half2 b) { return __half2(a.x, b.x); }
inline __half2 __highs2half2(__half2 a, __half2 b) { return __half2(a.y, b.y); }
[[gnu::always_inline, gnu::artificial]] inline __half2 __ldg(const __half2* p) { return *p; }
