// __half2 and __nv_bfloat162 arithmetic beyond cuda_fp16.h's and cuda_bf16.h's basics: each half of
// the pair computed as the scalar function computes it (in float, rounded once), so a pair's
// result is bit for bit the two scalar results, as on a GPU.
#pragma once
#include <type_traits>

namespace brrr_cpu {
// Which types are pairs of 16-bit floats: cuda_fp16.h and cuda_bf16.h each add theirs.
template <typename P>
struct is_pair16 : std::false_type {};
template <typename P>
concept Pair16 = is_pair16<P>::value;
}  // namespace brrr_cpu

// Functions a header of the pair's type does not define itself (where it does, its non-template
// overload wins).
template <brrr_cpu::Pair16 P> P __hadd2(P a, P b) { return P(__hadd(a.x, b.x), __hadd(a.y, b.y)); }
template <brrr_cpu::Pair16 P> P __hsub2(P a, P b) { return P(__hsub(a.x, b.x), __hsub(a.y, b.y)); }
template <brrr_cpu::Pair16 P> P __hmul2(P a, P b) { return P(__hmul(a.x, b.x), __hmul(a.y, b.y)); }
template <brrr_cpu::Pair16 P> P __h2div(P a, P b) { return P(__hdiv(a.x, b.x), __hdiv(a.y, b.y)); }
template <brrr_cpu::Pair16 P> P __hfma2(P a, P b, P c) { return P(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)); }
template <brrr_cpu::Pair16 P> P __hadd2_rn(P a, P b) { return __hadd2(a, b); }
template <brrr_cpu::Pair16 P> P __hsub2_rn(P a, P b) { return __hsub2(a, b); }
template <brrr_cpu::Pair16 P> P __hmul2_rn(P a, P b) { return __hmul2(a, b); }
template <brrr_cpu::Pair16 P> P __hneg2(P a) { return P(__hneg(a.x), __hneg(a.y)); }
template <brrr_cpu::Pair16 P> P __habs2(P a) { return P(__habs(a.x), __habs(a.y)); }
template <brrr_cpu::Pair16 P> P __hmax2(P a, P b) { return P(__hmax(a.x, b.x), __hmax(a.y, b.y)); }
template <brrr_cpu::Pair16 P> P __hmin2(P a, P b) { return P(__hmin(a.x, b.x), __hmin(a.y, b.y)); }
template <brrr_cpu::Pair16 P> P h2exp(P a) { return P(hexp(a.x), hexp(a.y)); }
template <brrr_cpu::Pair16 P> P h2log(P a) { return P(hlog(a.x), hlog(a.y)); }
template <brrr_cpu::Pair16 P> P h2sqrt(P a) { return P(hsqrt(a.x), hsqrt(a.y)); }
template <brrr_cpu::Pair16 P> P h2rsqrt(P a) { return P(hrsqrt(a.x), hrsqrt(a.y)); }
template <brrr_cpu::Pair16 P> P h2rcp(P a) { return P(hrcp(a.x), hrcp(a.y)); }
template <brrr_cpu::Pair16 P> P __lowhigh2highlow(P a) { return P(a.y, a.x); }

// Comparisons: the __h*2 forms give 1.0 or 0.0 in each half, the __hb*2 forms whether both hold.
#define BRRR_PAIR16_COMPARE(name, bname, op)                                                      \
    template <brrr_cpu::Pair16 P> P name(P a, P b) {                                              \
        using H = decltype(a.x);                                                                  \
        return P(H(static_cast<float>(a.x) op static_cast<float>(b.x) ? 1.0f : 0.0f),             \
                 H(static_cast<float>(a.y) op static_cast<float>(b.y) ? 1.0f : 0.0f));            \
    }                                                                                             \
    template <brrr_cpu::Pair16 P> bool bname(P a, P b) {                                          \
        return static_cast<float>(a.x) op static_cast<float>(b.x) && static_cast<float>(a.y) op static_cast<float>(b.y); \
    }
BRRR_PAIR16_COMPARE(__heq2, __hbeq2, ==)
BRRR_PAIR16_COMPARE(__hne2, __hbne2, !=)
BRRR_PAIR16_COMPARE(__hlt2, __hblt2, <)
BRRR_PAIR16_COMPARE(__hle2, __hble2, <=)
BRRR_PAIR16_COMPARE(__hgt2, __hbgt2, >)
BRRR_PAIR16_COMPARE(__hge2, __hbge2, >=)
#undef BRRR_PAIR16_COMPARE

template <brrr_cpu::Pair16 P> P operator+(P a, P b) { return __hadd2(a, b); }
template <brrr_cpu::Pair16 P> P operator-(P a, P b) { return __hsub2(a, b); }
template <brrr_cpu::Pair16 P> P operator*(P a, P b) { return __hmul2(a, b); }
template <brrr_cpu::Pair16 P> P operator/(P a, P b) { return __h2div(a, b); }
template <brrr_cpu::Pair16 P> P operator-(P a) { return __hneg2(a); }
template <brrr_cpu::Pair16 P> P operator+(P a) { return a; }
template <brrr_cpu::Pair16 P> P& operator+=(P& a, P b) { return a = a + b; }
template <brrr_cpu::Pair16 P> P& operator-=(P& a, P b) { return a = a - b; }
template <brrr_cpu::Pair16 P> P& operator*=(P& a, P b) { return a = a * b; }
template <brrr_cpu::Pair16 P> P& operator/=(P& a, P b) { return a = a / b; }
template <brrr_cpu::Pair16 P> bool operator==(P a, P b) { return __hbeq2(a, b); }
template <brrr_cpu::Pair16 P> bool operator!=(P a, P b) { return __hbne2(a, b); }
