// Arithmetic, bit and comparison instructions of inline PTX on the CPU, as the PTX ISA defines them
// (pipeline/cuda/cpu_ptx_alu.py and cpu_ptx_blocks.py write the calls): integer add ... bfi on
// 16-, 32- and 64-bit types; float add ... abs on f32, f64, f16, bf16 and the packed f16x2/bf16x2;
// setp's comparisons. Operands come as the asm's C++ values and are read as the instruction's type
// (bits_of: a float's bits where the sizes agree).
#pragma once
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "brrr_cpu_f16.h"
#include "brrr_cpu_ldst.h"

namespace brrr_cpu::ptx {

// PTX's float immediates by their bits: 0f3F800000 (f32), 0d3FF0000000000000 (f64).
inline float f32_literal(uint64_t bits) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
inline double f64_literal(uint64_t bits) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
}

// ---- integers -------------------------------------------------------------------------------------
enum class IOp { Add, Sub, MulLo, MulHi, MulWide, MadLo, MadHi, MadWide, And, Or, Xor, Not, Shl, Shr, Min, Max, Neg,
                 Abs, Popc, Clz, Brev, Bfe, Bfi };

template <typename T>
using Twice = std::conditional_t<std::is_signed_v<T>, std::conditional_t<sizeof(T) == 2, int32_t, int64_t>,
                                 std::conditional_t<sizeof(T) == 2, uint32_t, uint64_t>>;

// Arithmetic wraps (computed unsigned, as the GPU's registers do); a shift by the width or more gives
// 0 (or the sign, .s shr); bfe and bfi take position and length from their operands' low bytes.
template <IOp O, typename T, typename A, typename B = int, typename C = int, typename D = int>
inline auto ialu(A ra, B rb = 0, C rc = 0, D rd = 0) {
    using U = std::make_unsigned_t<T>;
    constexpr uint32_t bits = 8 * sizeof(T);
    const T a = bits_of<T>(ra), b = bits_of<T>(rb);
    const U ua = static_cast<U>(a), ub = static_cast<U>(b);
    if constexpr (O == IOp::Add) return static_cast<T>(static_cast<U>(ua + ub));
    else if constexpr (O == IOp::Sub) return static_cast<T>(static_cast<U>(ua - ub));
    else if constexpr (O == IOp::MulLo) return static_cast<T>(static_cast<U>(ua * ub));
    else if constexpr (O == IOp::MadLo) return static_cast<T>(static_cast<U>(ua * ub + static_cast<U>(bits_of<T>(rc))));
    else if constexpr (O == IOp::MulHi || O == IOp::MadHi) {
        using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
        const U high = static_cast<U>(static_cast<unsigned __int128>(W(a) * W(b)) >> bits);
        return static_cast<T>(O == IOp::MulHi ? high : static_cast<U>(high + static_cast<U>(bits_of<T>(rc))));
    } else if constexpr (O == IOp::MulWide || O == IOp::MadWide) {
        static_assert(sizeof(T) <= 4, "mul.wide and mad.wide take 16- or 32-bit sources");
        using R = Twice<T>;
        using UR = std::make_unsigned_t<R>;
        const UR p = static_cast<UR>(static_cast<R>(a) * static_cast<R>(b));
        return static_cast<R>(O == IOp::MulWide ? p : static_cast<UR>(p + static_cast<UR>(bits_of<R>(rc))));
    } else if constexpr (O == IOp::And) return static_cast<T>(ua & ub);
    else if constexpr (O == IOp::Or) return static_cast<T>(ua | ub);
    else if constexpr (O == IOp::Xor) return static_cast<T>(ua ^ ub);
    else if constexpr (O == IOp::Not) return static_cast<T>(static_cast<U>(~ua));
    else if constexpr (O == IOp::Shl || O == IOp::Shr) {
        const uint32_t n = bits_of<uint32_t>(rb);
        if constexpr (O == IOp::Shl) return n >= bits ? T(0) : static_cast<T>(static_cast<U>(ua << n));
        else if constexpr (std::is_signed_v<T>) return n >= bits ? T(a < 0 ? -1 : 0) : static_cast<T>(a >> n);
        else return n >= bits ? T(0) : static_cast<T>(ua >> n);
    } else if constexpr (O == IOp::Min) return std::min(a, b);
    else if constexpr (O == IOp::Max) return std::max(a, b);
    else if constexpr (O == IOp::Neg) return static_cast<T>(static_cast<U>(U(0) - ua));
    else if constexpr (O == IOp::Abs) return a < 0 ? static_cast<T>(static_cast<U>(U(0) - ua)) : a;
    else if constexpr (O == IOp::Popc) return static_cast<uint32_t>(__builtin_popcountll(ua));
    else if constexpr (O == IOp::Clz) return ua == 0 ? bits : static_cast<uint32_t>(__builtin_clzll(ua)) - (64 - bits);
    else if constexpr (O == IOp::Brev) {
        U r = 0;
        for (uint32_t i = 0; i < bits; ++i) r |= static_cast<U>(((ua >> i) & 1u)) << (bits - 1 - i);
        return static_cast<T>(r);
    } else if constexpr (O == IOp::Bfe) {  // bfe d, a, pos, len
        const uint32_t pos = bits_of<uint32_t>(rb) & 0xffu, len = bits_of<uint32_t>(rc) & 0xffu;
        const uint32_t top = std::min(pos + len - 1, bits - 1);
        const bool sign = std::is_signed_v<T> && len != 0 && ((ua >> std::min(top, bits - 1)) & 1u);
        U r = 0;
        for (uint32_t i = 0; i < bits; ++i) {
            const bool bit = (i < len && pos + i < bits) ? ((ua >> (pos + i)) & 1u) : sign;
            r |= static_cast<U>(bit) << i;
        }
        return static_cast<T>(r);
    } else {  // bfi f, a, b, pos, len: a's low len bits into b at pos
        static_assert(O == IOp::Bfi);
        const uint32_t pos = bits_of<uint32_t>(rc) & 0xffu, len = bits_of<uint32_t>(rd) & 0xffu;
        U r = ub;
        for (uint32_t i = 0; i < len && pos + i < bits; ++i) {
            r = static_cast<U>((r & ~(U(1) << (pos + i))) | (static_cast<U>((ua >> i) & 1u) << (pos + i)));
        }
        return static_cast<T>(r);
    }
}

// ---- floats ---------------------------------------------------------------------------------------
struct F16 {};
struct BF16 {};
template <typename E>
struct X2 {};  // two E in 32 bits, the first in the low half (f16x2, bf16x2)

// How a register of type E splits into lanes, and the type a lane is computed in: float and double
// as themselves (IEEE's single rounding), the 16-bit types in double, rounded to 16 bits once (exact
// for one add, sub or mul of two; fma as the CPU's __hfma).
template <typename E>
struct Lanes {
    static_assert(std::is_floating_point_v<E>);
    using Bits = E;
    using Value = E;
    static constexpr int n = 1;
    static Value get(Bits b, int) { return b; }
    static Bits set(Bits, int, Value v) { return v; }
    static constexpr Value min_normal = std::is_same_v<E, float> ? FLT_MIN : DBL_MIN;
};
template <typename From, typename To>
struct Lanes16 {
    using Bits = uint16_t;
    using Value = double;
    static constexpr int n = 1;
    static Value get(Bits b, int) { return From{}(b); }
    static Bits set(Bits, int, Value v) { return To{}(v); }
};
struct HalfFrom { float operator()(uint16_t b) const { return half_bits_to_float(b); } };
struct HalfTo { uint16_t operator()(double v) const { return double_to_half_bits(v); } };
struct BF16From { float operator()(uint16_t b) const { return bf16_bits_to_float(b); } };
struct BF16To { uint16_t operator()(double v) const { return double_to_bf16_bits(v); } };
template <>
struct Lanes<F16> : Lanes16<HalfFrom, HalfTo> {
    static constexpr double min_normal = 6.103515625e-05;  // 2^-14
};
template <>
struct Lanes<BF16> : Lanes16<BF16From, BF16To> {
    static constexpr double min_normal = FLT_MIN;
};
template <typename E>
struct Lanes<X2<E>> {
    using Bits = uint32_t;
    using Value = double;
    static constexpr int n = 2;
    static constexpr double min_normal = Lanes<E>::min_normal;
    static Value get(Bits b, int i) { return Lanes<E>::get(static_cast<uint16_t>(b >> (16 * i)), 0); }
    static Bits set(Bits b, int i, Value v) {
        const uint32_t lane = Lanes<E>::set(0, 0, v);
        return (b & ~(0xffffu << (16 * i))) | (lane << (16 * i));
    }
};

enum class FOp { Add, Sub, Mul, Fma, Div, Min, Max, Neg, Abs, Ex2, Tanh };
enum FMod : unsigned { Plain = 0, Ftz = 1, Sat = 2 };

template <typename L, typename V>
inline V flushed(V v) {  // .ftz: a subnormal in or out is a zero of its sign
    return std::fabs(v) < L::min_normal ? std::copysign(V(0), v) : v;
}

template <FOp O, typename E, unsigned M = Plain, typename A, typename B = int, typename C = int>
inline typename Lanes<E>::Bits falu(A ra, B rb = 0, C rc = 0) {
    using L = Lanes<E>;
    using Bits = typename L::Bits;
    using V = typename L::Value;
    const Bits a = bits_of<Bits>(ra), b = bits_of<Bits>(rb), c = bits_of<Bits>(rc);
    Bits d{};
    for (int i = 0; i < L::n; ++i) {
        V x = L::get(a, i), y = L::get(b, i), z = L::get(c, i);
        if constexpr ((M & Ftz) != 0) x = flushed<L>(x), y = flushed<L>(y), z = flushed<L>(z);
        V r;
        if constexpr (O == FOp::Add) r = x + y;
        else if constexpr (O == FOp::Sub) r = x - y;
        else if constexpr (O == FOp::Mul) r = x * y;
        else if constexpr (O == FOp::Fma) r = std::is_same_v<V, E> ? std::fma(x, y, z) : x * y + z;
        else if constexpr (O == FOp::Div) r = x / y;
        else if constexpr (O == FOp::Min) r = std::fmin(x, y);
        else if constexpr (O == FOp::Max) r = std::fmax(x, y);
        else if constexpr (O == FOp::Neg) r = -x;
        else if constexpr (O == FOp::Abs) r = std::fabs(x);
        else if constexpr (O == FOp::Ex2) r = std::exp2(x);  // .approx: the exact value, rounded once
        else r = std::tanh(x);
        if constexpr ((M & Sat) != 0) r = std::isnan(r) ? V(0) : std::clamp(r, V(0), V(1));
        d = L::set(d, i, r);
        if constexpr ((M & Ftz) != 0) d = L::set(d, i, flushed<L>(L::get(d, i)));
    }
    return d;
}

// ---- cvt ------------------------------------------------------------------------------------------
enum class Round { Rn, Rni, Rzi, Rmi, Rpi };

template <typename T>
struct Scalar {  // a cvt type's value: integers and floats as themselves, F16 and BF16 through double
    using Bits = T;
    static double get(Bits b) { return static_cast<double>(b); }
};
template <>
struct Scalar<F16> {
    using Bits = uint16_t;
    static double get(Bits b) { return half_bits_to_float(b); }
};
template <>
struct Scalar<BF16> {
    using Bits = uint16_t;
    static double get(Bits b) { return bf16_bits_to_float(b); }
};

template <Round R>
inline double integral(double v) {
    if constexpr (R == Round::Rni) return std::nearbyint(v);  // ties to even, the default rounding mode
    else if constexpr (R == Round::Rzi) return std::trunc(v);
    else if constexpr (R == Round::Rmi) return std::floor(v);
    else if constexpr (R == Round::Rpi) return std::ceil(v);
    else return v;
}

template <typename D, typename S, Round R, unsigned M = Plain, typename A>
inline typename Scalar<D>::Bits cvt(A ra) {
    using SB = typename Scalar<S>::Bits;
    const SB a = bits_of<SB>(ra);
    constexpr bool to_int = std::is_integral_v<D>, from_int = std::is_integral_v<S>;
    if constexpr (to_int && from_int) {
        if constexpr ((M & Sat) != 0) {  // clamped to the destination's range
            const __int128 w = static_cast<__int128>(a);
            const __int128 lo = std::numeric_limits<D>::min(), hi = std::numeric_limits<D>::max();
            return static_cast<D>(w < lo ? lo : w > hi ? hi : w);
        } else {
            return static_cast<D>(a);  // sign- or zero-extends by the source, truncates to the destination
        }
    } else if constexpr (to_int) {  // float to integer: rounded, NaN 0, saturated
        double v = Scalar<S>::get(a);
        if constexpr ((M & Ftz) != 0) v = std::fabs(v) < FLT_MIN ? 0.0 : v;
        if (std::isnan(v)) return D(0);
        v = integral<R == Round::Rn ? Round::Rni : R>(v);
        if (v <= static_cast<double>(std::numeric_limits<D>::min())) return std::numeric_limits<D>::min();
        if (v >= static_cast<double>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
        return static_cast<D>(v);
    } else {
        // to a float: an integer or float source, rounded once (an integer rounding: its integral value)
        long double v = from_int ? static_cast<long double>(a) : static_cast<long double>(Scalar<S>::get(a));
        if constexpr (!from_int && R != Round::Rn) v = integral<R>(static_cast<double>(v));
        if constexpr ((M & Sat) != 0) v = std::isnan(v) ? 0.0L : std::clamp(v, 0.0L, 1.0L);
        typename Scalar<D>::Bits d;
        if constexpr (std::is_same_v<D, F16>) d = double_to_half_bits(static_cast<double>(v));
        else if constexpr (std::is_same_v<D, BF16>) d = double_to_bf16_bits(static_cast<double>(v));
        else d = static_cast<D>(v);
        if constexpr ((M & Ftz) != 0 && std::is_same_v<D, float>) d = std::fabs(d) < FLT_MIN ? std::copysign(0.0f, d) : d;
        return d;
    }
}

// ---- setp -----------------------------------------------------------------------------------------
// The ordered comparisons are false where either side is NaN, the unordered (…u) true.
enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan };

template <typename T, Cmp C, typename A, typename B>
inline bool setp(A ra, B rb) {
    if constexpr (std::is_same_v<T, F16> || std::is_same_v<T, BF16>) {
        using L = Lanes<T>;
        return setp<double, C>(L::get(bits_of<uint16_t>(ra), 0), L::get(bits_of<uint16_t>(rb), 0));
    } else {
        const T a = bits_of<T>(ra), b = bits_of<T>(rb);
        bool unordered = false;
        if constexpr (std::is_floating_point_v<T>) unordered = std::isnan(a) || std::isnan(b);
        switch (C) {
            case Cmp::Eq: return !unordered && a == b;
            case Cmp::Ne: return !unordered && a != b;
            case Cmp::Lt: return !unordered && a < b;
            case Cmp::Le: return !unordered && a <= b;
            case Cmp::Gt: return !unordered && a > b;
            case Cmp::Ge: return !unordered && a >= b;
            case Cmp::Equ: return unordered || a == b;
            case Cmp::Neu: return unordered || a != b;
            case Cmp::Ltu: return unordered || a < b;
            case Cmp::Leu: return unordered || a <= b;
            case Cmp::Gtu: return unordered || a > b;
            case Cmp::Geu: return unordered || a >= b;
            case Cmp::Num: return !unordered;
            case Cmp::Nan: return unordered;
        }
        return false;
    }
}

// ---- atom and red ---------------------------------------------------------------------------------
// atom{.sem}{.scope}{.space}.op.type d, [a], b{, c} and red's [a], b: CUDA's atomic functions on the
// address (its old value for atom), after the alignment a GPU faults without; every order and scope
// is sequentially consistent here.
enum class AOp { Add, Min, Max, Inc, Dec, And, Or, Xor, Exch, Cas };

template <AOp O, typename T, typename B, typename C = int>
BRRR_CPU_ENTRY inline T atom(Space space, uint64_t address, B rb, C rc, const char* file, int line) {
    T* p = reinterpret_cast<T*>(aligned_pointer(space, address, static_cast<int>(sizeof(T)), "an atom or red", file, line));
    const T b = bits_of<T>(rb);
    if constexpr (O == AOp::Add) return atomicAdd(p, b);
    else if constexpr (O == AOp::Min) return atomicMin(p, b);
    else if constexpr (O == AOp::Max) return atomicMax(p, b);
    else if constexpr (O == AOp::Inc) return atomicInc(p, b);
    else if constexpr (O == AOp::Dec) return atomicDec(p, b);
    else if constexpr (O == AOp::And) return atomicAnd(p, b);
    else if constexpr (O == AOp::Or) return atomicOr(p, b);
    else if constexpr (O == AOp::Xor) return atomicXor(p, b);
    else if constexpr (O == AOp::Exch) return atomicExch(p, b);
    else return atomicCAS(p, b, bits_of<T>(rc));
}

}  // namespace brrr_cpu::ptx
