// ld, st and the bit-level instructions around them in inline PTX (pipeline/cuda/cpu_ptx.py): `ld.global.nc.L1::no_allocate.v4.u32 {%0, ..},
// [%4]`, `st.global.cs.v4.b32 [%0], {..}`, `ld.acquire.gpu.b32`, `st.shared.v2.f32` and the rest of
// their forms. The cache qualifiers (.nc, .cs, .L1::*, .L2::*) change nothing on the CPU. An access
// is aligned to its size (a vector's whole size) or it is the misaligned-address fault a GPU raises;
// in the checked build it is bounded as any load or store of the kernel. Ordered forms (.relaxed,
// .acquire, .release, .volatile) of 1, 2, 4 or 8 bytes are atomic accesses with that order.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "brrr_cpu.h"
#include "brrr_cpu_async.h"
#include "brrr_cpu_f16.h"

extern "C" void brrr_cpu_access_checked(const void* address, size_t size, int write, const void* pc) __attribute__((weak));

namespace brrr_cpu::ptx {

enum class Space : int { Generic, Shared };  // .global and no state space are generic addresses
enum class Order : int { Plain, Relaxed, Acquire, Release };

// An address operand as a pointer (a .shared one through the block's window), aligned to `bytes` or
// the misaligned-address fault a GPU raises, naming the access (`what`: "ld", "st", "an atom or red").
inline char* aligned_pointer(Space space, uint64_t address, int bytes, const char* what, const char* file, int line) {
    char* p = space == Space::Shared ? static_cast<char*>(brrr_cpu::async::shared_pointer(address, file, line))
                                     : reinterpret_cast<char*>(static_cast<uintptr_t>(address));
    if (reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(bytes)) {
        fault("misaligned address", std::string(what) + " of " + std::to_string(bytes) + " bytes at " +
                                        std::to_string(reinterpret_cast<uintptr_t>(p)) + ", which is not " +
                                        std::to_string(bytes) + "-byte aligned", file, line);
    }
    return p;
}

inline char* ldst_pointer(Space space, uint64_t address, int bytes, bool write, const void* pc, const char* file,
                          int line) {
    char* p = aligned_pointer(space, address, bytes, write ? "st" : "ld", file, line);
    if (brrr_cpu_access_checked) brrr_cpu_access_checked(p, static_cast<size_t>(bytes), write ? 1 : 0, pc);
    return p;
}

constexpr int memory_order(Order o) {
    return o == Order::Acquire ? __ATOMIC_ACQUIRE : o == Order::Release ? __ATOMIC_RELEASE : __ATOMIC_RELAXED;
}

template <int N>
using Word = std::conditional_t<N == 1, uint8_t, std::conditional_t<N == 2, uint16_t, std::conditional_t<N == 4, uint32_t, uint64_t>>>;

template <int N, Order O>
BRRR_CPU_ENTRY inline void ld(unsigned char (&out)[N], Space space, uint64_t address, const char* file, int line) {
    const char* p = ldst_pointer(space, address, N, false, __builtin_return_address(0), file, line);
    if constexpr (O != Order::Plain && (N == 1 || N == 2 || N == 4 || N == 8)) {
        const Word<N> w = __atomic_load_n(reinterpret_cast<const Word<N>*>(p), memory_order(O));
        std::memcpy(out, &w, N);
    } else {
        std::memcpy(out, p, N);
    }
}

template <int N, Order O>
BRRR_CPU_ENTRY inline void st(Space space, uint64_t address, const unsigned char (&in)[N], const char* file, int line) {
    char* p = ldst_pointer(space, address, N, true, __builtin_return_address(0), file, line);
    if constexpr (O != Order::Plain && (N == 1 || N == 2 || N == 4 || N == 8)) {
        Word<N> w;
        std::memcpy(&w, in, N);
        __atomic_store_n(reinterpret_cast<Word<N>*>(p), w, memory_order(O));
    } else {
        std::memcpy(p, in, N);
    }
}

// One element of type E (the instruction's) into a register operand: as its bits where the sizes
// agree, else widened as PTX widens a narrow integer load (sign-extended for .s8/.s16/.s32).
template <typename E, typename Out>
inline void from_bytes(Out& out, const unsigned char* bytes) {
    E e;
    std::memcpy(&e, bytes, sizeof(E));
    if constexpr (sizeof(Out) == sizeof(E)) {
        std::memcpy(&out, &e, sizeof(E));
    } else {
        static_assert(std::is_integral_v<E> && sizeof(Out) > sizeof(E), "an ld's register is narrower than its type");
        const std::conditional_t<std::is_signed_v<E>, int64_t, uint64_t> wide = e;
        std::memcpy(&out, &wide, sizeof(Out));
    }
}

// A register operand (or an immediate) as one element of type E: its bits, or its low bytes.
template <typename E, typename In>
inline void to_bytes(const In& in, unsigned char* bytes) {
    if constexpr (sizeof(In) == sizeof(E)) {
        std::memcpy(bytes, &in, sizeof(E));
    } else {
        static_assert(std::is_integral_v<In>, "an st's source is wider or narrower than its type and not an integer");
        const E e = static_cast<E>(in);
        std::memcpy(bytes, &e, sizeof(E));
    }
}

// A result into its register operand: its bits where the sizes agree, else converted (an integer).
template <typename Out, typename V>
inline void put(Out& out, V value) {
    if constexpr (sizeof(Out) == sizeof(V)) std::memcpy(&out, &value, sizeof(V));
    else out = static_cast<Out>(value);
}
// An operand as the 16, 32 or 64 bits the instruction reads.
template <typename W, typename In>
inline W bits_of(In in) {
    if constexpr (sizeof(In) == sizeof(W)) {
        W w;
        std::memcpy(&w, &in, sizeof(W));
        return w;
    } else {
        return static_cast<W>(in);
    }
}

// mov of one register (or an immediate) to another, as bits of the type's width.
template <typename In> inline uint16_t mov_b16(In x) { return bits_of<uint16_t>(x); }
template <typename In> inline uint16_t mov_u16(In x) { return bits_of<uint16_t>(x); }
template <typename In> inline uint32_t mov_b32(In x) { return bits_of<uint32_t>(x); }
template <typename In> inline uint32_t mov_u32(In x) { return bits_of<uint32_t>(x); }
template <typename In> inline uint32_t mov_s32(In x) { return bits_of<uint32_t>(x); }
template <typename In> inline uint64_t mov_b64(In x) { return bits_of<uint64_t>(x); }
template <typename In> inline uint64_t mov_u64(In x) { return bits_of<uint64_t>(x); }
template <typename In> inline float mov_f32(In x) { return bits_of<float>(x); }
template <typename In> inline double mov_f64(In x) { return bits_of<double>(x); }

// mov.b32 d, {lo, hi} and mov.b64 d, {lo, hi}: the first element in the low bits.
template <typename In>
inline uint32_t mov_pack_b32(In lo, In hi) {
    return uint32_t(bits_of<uint16_t>(lo)) | (uint32_t(bits_of<uint16_t>(hi)) << 16);
}
template <typename In>
inline uint64_t mov_pack_b64(In lo, In hi) {
    return uint64_t(bits_of<uint32_t>(lo)) | (uint64_t(bits_of<uint32_t>(hi)) << 32);
}

// prmt.b32 d, a, b, c (the default mode): byte i of d is byte (c >> 4i) & 7 of {b, a} (a bytes 0-3, b
// bytes 4-7), or that byte's sign replicated where bit 3 of the selector is set.
inline uint32_t prmt_b32(uint32_t a, uint32_t b, uint32_t c) {
    const uint64_t bytes = (uint64_t(b) << 32) | a;
    uint32_t d = 0;
    for (int i = 0; i < 4; ++i) {
        const uint32_t sel = (c >> (4 * i)) & 0xfu;
        uint32_t byte = uint32_t(bytes >> (8 * (sel & 7u))) & 0xffu;
        if (sel & 8u) byte = (byte & 0x80u) ? 0xffu : 0u;
        d |= byte << (8 * i);
    }
    return d;
}

// lop3.b32 d, a, b, c, lut: bit k of d is bit (a_k << 2 | b_k << 1 | c_k) of lut.
inline uint32_t lop3_b32(uint32_t a, uint32_t b, uint32_t c, uint32_t lut) {
    uint32_t d = 0;
    for (uint32_t k = 0; k < 8; ++k) {
        if (lut >> k & 1u) d |= ((k & 4u) ? a : ~a) & ((k & 2u) ? b : ~b) & ((k & 1u) ? c : ~c);
    }
    return d;
}


}  // namespace brrr_cpu::ptx
