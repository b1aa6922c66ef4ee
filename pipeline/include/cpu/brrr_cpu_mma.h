// Tensor cores on the CPU: the fragment layouts of mma.sync and ldmatrix (PTX ISA, "Matrix Fragments
// for mma.m16n8k16 / m16n8k8 / m16n8k4" and "ldmatrix"), the multiply-accumulate itself, and the warp
// meeting both need. nvcuda::wmma (<mma.h>) is built on the same pieces.
//
// Every one of these is warp-collective: the 32 lanes meet as at a warp intrinsic (a WarpOp::Collective
// of the runtime), so lanes at different calls, a lane that returned, or a partial warp are faults
// naming the line, exactly as for __shfl_sync. The lane that arrives last gathers every lane's
// registers (on the other lanes' stacks: no_sanitize_address, the memory checks would call those
// out of bounds), computes, and scatters the results.
//
// Arithmetic: each product of two inputs is exact in float (f16, bf16 and tf32 have at most 11
// significant bits), and the products are added to the accumulator one at a time in k order, each
// sum rounded to float32 (round to nearest even). A GPU adds them in groups with wider internal
// alignment; the README states the bound between the two.
#pragma once
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "brrr_cpu.h"
#include "brrr_cpu_async.h"
#include "cuda_bf16.h"
#include "cuda_fp16.h"

#define BRRR_CPU_UNCHECKED __attribute__((no_sanitize_address))

extern "C" void brrr_cpu_access_checked(const void* address, size_t size, int write, const void* pc) __attribute__((weak));

namespace brrr_cpu::mma {

enum class Type : int { F16, BF16, TF32, F32 };

// Which elements of a matrix each lane holds: element i of lane `lane` is (row, col) of the matrix
// the operand is. groupID = lane / 4 and threadID_in_group = lane % 4, as the PTX ISA names them.
enum class Map : int {
    A16x16,   // mma.m16n8k16 A (f16/bf16), 8 a lane
    B16x8,    // mma.m16n8k16 B, 4 a lane
    C16x8,    // mma.m16n8k* C/D, 4 a lane
    A16x8h,   // mma.m16n8k8 A (f16/bf16), 4 a lane
    B8x8h,    // mma.m16n8k8 B (f16/bf16), 2 a lane
    A16x8tf,  // mma.m16n8k8 A (tf32), 4 a lane
    B8x8tf,   // mma.m16n8k8 B (tf32), 2 a lane
    A16x4tf,  // mma.m16n8k4 A (tf32), 2 a lane
    B4x8tf,   // mma.m16n8k4 B (tf32), 1 a lane
    // wmma, composed of the above (see mma.h): B and C of m16n16 are two n8 tiles side by side, A of
    // m32n8 two m16 tiles stacked; m8n32 is brrr's choice in the same pattern.
    B16x16, C16x16, A32x16, C32x8, A8x16, B16x32, C8x32, B8x16tf,
};

struct Coord {
    int row, col;
};

constexpr Coord at(Map m, int lane, int i) {
    const int g = lane >> 2, t = lane & 3;
    switch (m) {
        case Map::A16x16: return {g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)};
        case Map::B16x8: return {2 * t + (i & 1) + 8 * (i >> 1), g};
        case Map::C16x8: return {g + 8 * (i >> 1), 2 * t + (i & 1)};
        case Map::A16x8h: return {g + 8 * (i >> 1), 2 * t + (i & 1)};
        case Map::B8x8h: return {2 * t + i, g};
        case Map::A16x8tf: return {g + 8 * (i & 1), t + 4 * (i >> 1)};
        case Map::B8x8tf: return {t + 4 * i, g};
        case Map::A16x4tf: return {g + 8 * i, t};
        case Map::B4x8tf: return {t, g};
        case Map::B16x16: return {2 * t + (i & 1) + 8 * ((i >> 1) & 1), g + 8 * (i >> 2)};
        case Map::C16x16: return {g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)};
        case Map::A32x16: return {g + 8 * ((i >> 1) & 1) + 16 * (i >> 3), 2 * t + (i & 1) + 8 * ((i >> 2) & 1)};
        case Map::C32x8: return {g + 8 * ((i >> 1) & 1) + 16 * (i >> 2), 2 * t + (i & 1)};
        case Map::A8x16: return {g, 2 * t + (i & 1) + 8 * (i >> 1)};
        case Map::B16x32: return {2 * t + (i & 1) + 8 * ((i >> 2) & 1), g + 8 * ((i >> 1) & 1) + 16 * (i >> 3)};  // A32x16's transpose (H100)
        case Map::C8x32: return {2 * t + (i & 1), g + 8 * (i >> 1)};  // C32x8's transpose, as an H100 stores it
        case Map::B8x16tf: return {t + 4 * (i & 1), g + 8 * (i >> 1)};
    }
    return {0, 0};
}

// A tf32 operand is a float whose low 13 significand bits the tensor core ignores.
inline float tf32_truncate(float x) { return brrr_cpu::bits_f32(brrr_cpu::f32_bits(x) & 0xffffe000u); }

// cvt.rna.tf32.f32 (__float_to_tf32): round to 10 significand bits, ties away from zero.
inline float tf32_round(float x) {
    const uint32_t u = brrr_cpu::f32_bits(x);
    if ((u & 0x7f800000u) == 0x7f800000u) return x;  // inf and NaN as they are
    return brrr_cpu::bits_f32((u + 0x1000u) & 0xffffe000u);
}

// Register bits as an element: f16/bf16 in the low 16 bits, tf32/f32 in all 32.
inline float widen(Type t, uint32_t bits) {
    switch (t) {
        case Type::F16: return brrr_cpu::half_bits_to_float(static_cast<uint16_t>(bits));
        case Type::BF16: return brrr_cpu::bf16_bits_to_float(static_cast<uint16_t>(bits));
        case Type::TF32: return tf32_truncate(brrr_cpu::bits_f32(bits));
        case Type::F32: return brrr_cpu::bits_f32(bits);
    }
    return 0.0f;
}

inline uint32_t narrow(Type t, float v) {
    switch (t) {
        case Type::F16: return brrr_cpu::float_to_half_bits(v);
        case Type::BF16: return brrr_cpu::float_to_bf16_bits(v);
        default: return brrr_cpu::f32_bits(v);
    }
}

constexpr bool packed(Type t) { return t == Type::F16 || t == Type::BF16; }

// D = A B + C for row-major M x K, K x N and M x N float matrices: exact products, added in k order
// with a float32 rounding each (kernels are compiled with -ffp-contract=off: no fused multiply-add).
inline void multiply(int M, int N, int K, const float* A, const float* B, const float* C, float* D, bool satf) {
    for (int i = 0; i < M; ++i) {
        for (int j = 0; j < N; ++j) {
            float d = C[i * N + j];
            for (int k = 0; k < K; ++k) d = d + A[i * K + k] * B[k * N + j];
            if (satf) d = d != d ? 0.0f : d > 3.40282347e38f ? 3.40282347e38f : d < -3.40282347e38f ? -3.40282347e38f : d;
            D[i * N + j] = d;
        }
    }
}

// The calling lane's meeting with its warp: every lane passes its payload; `desc.complete` runs once.
inline void meet(const Collective& desc, void* payload, const char* file, int line) {
    WarpCall c{WarpOp::Collective, 0xffffffffu, 0, 32, file, line, &desc, 0, false, payload, 0};
    warp(c);
}

inline void no_exchange(void* const*, unsigned) {}

inline int lane() { return static_cast<int>(brrr_cpu::ptx::laneid()); }

// A read or write of `n` bytes at the kernel's line `pc`, checked where the memory checks are linked in.
inline void check_access(const void* p, size_t n, bool write, const void* pc) {
    if (brrr_cpu_access_checked) brrr_cpu_access_checked(p, n, write ? 1 : 0, pc);
}

}  // namespace brrr_cpu::mma

// ---- the PTX that pipeline/cpu_ptx.py rewrites into calls --------------------------------------------
namespace brrr_cpu::ptx {

using brrr_cpu::mma::Map;
using brrr_cpu::mma::Type;

template <typename T>
inline uint32_t reg(const T& v) {
    static_assert(sizeof(T) == 4, "an mma/ldmatrix operand is a 32-bit register");
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
}
template <typename T>
inline void set_reg(T& out, uint32_t bits) {
    static_assert(sizeof(T) == 4, "an mma/ldmatrix operand is a 32-bit register");
    std::memcpy(&out, &bits, 4);
}

template <int M, int N, int K, Type AB>
struct MmaShape;
template <Type AB>
struct MmaShape<16, 8, 16, AB> {
    static_assert(packed(AB), "mma.m16n8k16 takes f16 or bf16 inputs");
    static constexpr Map a = Map::A16x16, b = Map::B16x8;
};
template <Type AB>
struct MmaShape<16, 8, 8, AB> {
    static constexpr Map a = packed(AB) ? Map::A16x8h : Map::A16x8tf, b = packed(AB) ? Map::B8x8h : Map::B8x8tf;
};
template <Type AB>
struct MmaShape<16, 8, 4, AB> {
    static_assert(AB == Type::TF32, "mma.m16n8k4 takes tf32 inputs");
    static constexpr Map a = Map::A16x4tf, b = Map::B4x8tf;
};

struct MmaLane {
    const uint32_t* a;
    const uint32_t* b;
    const uint32_t* c;
    uint32_t* d;
};

template <int M, int N, int K, Type AB, Type CD>
struct Mma {
    using S = MmaShape<M, N, K, AB>;
    static constexpr int per_reg_ab = packed(AB) ? 2 : 1, per_reg_cd = CD == Type::F16 ? 2 : 1;
    static constexpr int a_regs = M * K / 32 / per_reg_ab, b_regs = K * N / 32 / per_reg_ab, cd_regs = M * N / 32 / per_reg_cd;

    static BRRR_CPU_UNCHECKED uint32_t element(const uint32_t* regs, int i, int per_reg) {
        const uint32_t r = regs[i / per_reg];
        return per_reg == 2 ? (r >> (16 * (i & 1))) & 0xffffu : r;
    }

    static BRRR_CPU_UNCHECKED void complete(void* const* lanes, unsigned) {
        float A[M * K], B[K * N], C[M * N], D[M * N];
        for (int l = 0; l < 32; ++l) {
            const MmaLane* p = static_cast<const MmaLane*>(lanes[l]);
            for (int i = 0; i < M * K / 32; ++i) {
                const auto [r, c] = brrr_cpu::mma::at(S::a, l, i);
                A[r * K + c] = brrr_cpu::mma::widen(AB, element(p->a, i, per_reg_ab));
            }
            for (int i = 0; i < K * N / 32; ++i) {
                const auto [r, c] = brrr_cpu::mma::at(S::b, l, i);
                B[r * N + c] = brrr_cpu::mma::widen(AB, element(p->b, i, per_reg_ab));
            }
            for (int i = 0; i < M * N / 32; ++i) {
                const auto [r, c] = brrr_cpu::mma::at(Map::C16x8, l, i);
                C[r * N + c] = brrr_cpu::mma::widen(CD, element(p->c, i, per_reg_cd));
            }
        }
        brrr_cpu::mma::multiply(M, N, K, A, B, C, D, false);
        for (int l = 0; l < 32; ++l) {
            const MmaLane* p = static_cast<const MmaLane*>(lanes[l]);
            uint32_t out[cd_regs] = {};
            for (int i = 0; i < M * N / 32; ++i) {
                const auto [r, c] = brrr_cpu::mma::at(Map::C16x8, l, i);
                const uint32_t bits = brrr_cpu::mma::narrow(CD, D[r * N + c]);
                out[i / per_reg_cd] |= per_reg_cd == 2 ? bits << (16 * (i & 1)) : bits;
            }
            for (int k = 0; k < cd_regs; ++k) p->d[k] = out[k];
        }
    }
};

// Instruction names are made once, inside a launch, from kernel.cu's translation unit: with snprintf into
// a static buffer in unchecked functions, not std::string, whose heap buffer the checked build (with
// torch's allocation registry) reports as an access outside every tensor, and whose instrumented
// inline functions that report itself then re-enters without end.
BRRR_CPU_UNCHECKED inline bool write_mma_name(char* out, size_t size, int m, int n, int k, Type ab, Type cd) {
    static const char* const names[] = {"f16", "bf16", "tf32", "f32"};
    const char* a = names[static_cast<int>(ab)];
    const char* c = names[static_cast<int>(cd)];
    std::snprintf(out, size, "mma.sync.aligned.m%dn%dk%d.row.col.%s.%s.%s.%s", m, n, k, c, a, a, c);
    return true;
}

template <int M, int N, int K, Type AB, Type CD>
BRRR_CPU_UNCHECKED const char* mma_name() {
    static char text[64];
    static const bool made = write_mma_name(text, sizeof text, M, N, K, AB, CD);
    (void)made;
    return text;
}

// mma.sync.aligned.mMnNkK.row.col.CD.AB.AB.CD d, a, b, c
template <int M, int N, int K, Type AB, Type CD, size_t ND, size_t NA, size_t NB, size_t NC>
void mma_sync(uint32_t (&d)[ND], const uint32_t (&a)[NA], const uint32_t (&b)[NB], const uint32_t (&c)[NC],
              const char* file, int line) {
    using I = Mma<M, N, K, AB, CD>;
    static_assert(NA == I::a_regs && NB == I::b_regs && NC == I::cd_regs && ND == I::cd_regs,
                  "mma operands: the register counts the PTX ISA gives for this shape and type");
    static const Collective desc{mma_name<M, N, K, AB, CD>(), &I::complete};
    MmaLane lane{a, b, c, d};
    brrr_cpu::mma::meet(desc, &lane, file, line);
}

// mma.sync.aligned.m16n8kK.row.col{.satfinite}.s32.{s8,u8}.{s8,u8}.s32 (K = 16 or 32): 8-bit integers
// four to a register, laid out as the 16-bit types' m16n8k(K/2) by bytes (PTX ISA, "Matrix Fragments
// for mma.m16n8k16 / m16n8k32" with .s8/.u8): A's register k holds row g + 8 (k & 1), columns
// 4 t + 16 (k >> 1) .. + 3; B's register k rows 4 t + 16 k .. + 3 of column g; C and D as C16x8. The
// sums are exact; they wrap to 32 bits, or with .satfinite clamp to the int32 range.
template <int K, bool SignedA, bool SignedB, bool Saturate>
struct IntMma {
    static constexpr int a_regs = K / 8, b_regs = K / 16, cd_regs = 4;

    static int64_t byte(uint32_t r, int j, bool is_signed) {
        const uint32_t b = (r >> (8 * j)) & 0xffu;
        return is_signed ? static_cast<int64_t>(static_cast<int8_t>(b)) : static_cast<int64_t>(b);
    }

    static BRRR_CPU_UNCHECKED void complete(void* const* lanes, unsigned) {
        int64_t A[16 * K], B[K * 8], C[16 * 8];
        for (int l = 0; l < 32; ++l) {
            const MmaLane* p = static_cast<const MmaLane*>(lanes[l]);
            const int g = l >> 2, t = l & 3;
            for (int k = 0; k < a_regs; ++k) {
                for (int j = 0; j < 4; ++j) A[(g + 8 * (k & 1)) * K + 4 * t + j + 16 * (k >> 1)] = byte(p->a[k], j, SignedA);
            }
            for (int k = 0; k < b_regs; ++k) {
                for (int j = 0; j < 4; ++j) B[(4 * t + j + 16 * k) * 8 + g] = byte(p->b[k], j, SignedB);
            }
            for (int i = 0; i < 4; ++i) {
                const auto [r, c] = brrr_cpu::mma::at(Map::C16x8, l, i);
                C[r * 8 + c] = static_cast<int32_t>(p->c[i]);
            }
        }
        for (int l = 0; l < 32; ++l) {
            const MmaLane* p = static_cast<const MmaLane*>(lanes[l]);
            for (int i = 0; i < 4; ++i) {
                const auto [r, c] = brrr_cpu::mma::at(Map::C16x8, l, i);
                int64_t d = C[r * 8 + c];
                for (int k = 0; k < K; ++k) d += A[r * K + k] * B[k * 8 + c];
                if (Saturate) d = d < INT32_MIN ? INT32_MIN : d > INT32_MAX ? INT32_MAX : d;
                p->d[i] = static_cast<uint32_t>(d);  // two's complement: the low 32 bits
            }
        }
    }
};

template <int K, bool SignedA, bool SignedB, bool Saturate>
BRRR_CPU_UNCHECKED const char* int_mma_name() {
    static char text[80];
    static const bool made = (std::snprintf(text, sizeof text, "mma.sync.aligned.m16n8k%d.row.col%s.s32.%s.%s.s32", K,
                                            Saturate ? ".satfinite" : "", SignedA ? "s8" : "u8", SignedB ? "s8" : "u8"),
                              true);
    (void)made;
    return text;
}

template <int K, bool SignedA, bool SignedB, bool Saturate, size_t ND, size_t NA, size_t NB, size_t NC>
void int_mma_sync(uint32_t (&d)[ND], const uint32_t (&a)[NA], const uint32_t (&b)[NB], const uint32_t (&c)[NC],
                  const char* file, int line) {
    using I = IntMma<K, SignedA, SignedB, Saturate>;
    static_assert(NA == I::a_regs && NB == I::b_regs && NC == I::cd_regs && ND == I::cd_regs,
                  "mma operands: the register counts the PTX ISA gives for this shape and type");
    static const Collective desc{int_mma_name<K, SignedA, SignedB, Saturate>(), &I::complete};
    MmaLane lane{a, b, c, d};
    brrr_cpu::mma::meet(desc, &lane, file, line);
}

// ldmatrix.sync.aligned.m8n8.xCOUNT{.trans}.shared.b16: lane 8j + r gives the address of row r of
// matrix j (16 bytes, 16-byte aligned); lane l receives, for each matrix j, elements (l / 4, 2 (l % 4))
// and (l / 4, 2 (l % 4) + 1) of it, or of its transpose.
struct LdmatrixLane {
    uint32_t row[4];
    uint32_t* out;
};

template <int Count, bool Trans>
struct Ldmatrix {
    static BRRR_CPU_UNCHECKED void complete(void* const* lanes, unsigned) {
        uint32_t rows[32][4];
        for (int l = 0; l < 8 * Count; ++l) {
            const LdmatrixLane* p = static_cast<const LdmatrixLane*>(lanes[l]);
            for (int w = 0; w < 4; ++w) rows[l][w] = p->row[w];
        }
        auto element = [&](int j, int r, int c) -> uint32_t { return (rows[8 * j + r][c >> 1] >> (16 * (c & 1))) & 0xffffu; };
        for (int l = 0; l < 32; ++l) {
            const LdmatrixLane* p = static_cast<const LdmatrixLane*>(lanes[l]);
            for (int j = 0; j < Count; ++j) {
                const int r = l >> 2, c = 2 * (l & 3);
                p->out[j] = Trans ? element(j, c, r) | (element(j, c + 1, r) << 16) : rows[8 * j + r][l & 3];
            }
        }
    }
    static BRRR_CPU_UNCHECKED bool write_name(char* out, size_t size) {
        std::snprintf(out, size, "ldmatrix.sync.aligned.m8n8.x%d%s.shared.b16", Count, Trans ? ".trans" : "");
        return true;
    }
    static BRRR_CPU_UNCHECKED const char* name() {  // made once, as mma_name
        static char text[64];
        static const bool made = write_name(text, sizeof text);
        (void)made;
        return text;
    }
};

template <int Count, bool Trans, typename A>
BRRR_CPU_ENTRY void ldmatrix(uint32_t (&out)[Count], A address, const char* file, int line) {
    static_assert(Count == 1 || Count == 2 || Count == 4, "ldmatrix loads 1, 2 or 4 matrices");
    static const Collective desc{Ldmatrix<Count, Trans>::name(), &Ldmatrix<Count, Trans>::complete};
    LdmatrixLane me{{0, 0, 0, 0}, out};
    const int l = brrr_cpu::mma::lane();
    if (l < 8 * Count) {  // the other lanes' addresses are not used
        const char* p = static_cast<const char*>(brrr_cpu::async::shared_pointer(shared_address(address), file, line));
        if (reinterpret_cast<uintptr_t>(p) % 16) {
            fault("misaligned address", std::string(Ldmatrix<Count, Trans>::name()) + ": lane " + std::to_string(l) +
                                            "'s row address is not 16-byte aligned", file, line);
        }
        brrr_cpu::mma::check_access(p, 16, false, __builtin_return_address(0));
        std::memcpy(me.row, p, 16);
    }
    brrr_cpu::mma::meet(desc, &me, file, line);
}

// stmatrix.sync.aligned.m8n8.xCOUNT{.trans}.shared.b16: ldmatrix the other way. Lane 8j + r gives
// the address of row r of matrix j; lane l's register j holds elements (l / 4, 2 (l % 4)) and
// (l / 4, 2 (l % 4) + 1) of matrix j, or of its transpose. The lane that meets last writes every row.
struct StmatrixLane {
    uint32_t in[4];
    char* row;
};

template <int Count, bool Trans>
struct Stmatrix {
    static BRRR_CPU_UNCHECKED void complete(void* const* lanes, unsigned) {
        auto held = [&](int j, int r, int c) -> uint16_t {  // element (r, c) of matrix j as the registers hold it
            const StmatrixLane* p = static_cast<const StmatrixLane*>(lanes[4 * r + c / 2]);
            return static_cast<uint16_t>(p->in[j] >> (16 * (c & 1)));
        };
        for (int j = 0; j < Count; ++j) {
            for (int r = 0; r < 8; ++r) {
                uint16_t row[8];
                for (int c = 0; c < 8; ++c) row[c] = Trans ? held(j, c, r) : held(j, r, c);
                std::memcpy(static_cast<const StmatrixLane*>(lanes[8 * j + r])->row, row, 16);
            }
        }
    }
    static BRRR_CPU_UNCHECKED bool write_name(char* out, size_t size) {
        std::snprintf(out, size, "stmatrix.sync.aligned.m8n8.x%d%s.shared.b16", Count, Trans ? ".trans" : "");
        return true;
    }
    static BRRR_CPU_UNCHECKED const char* name() {
        static char text[64];
        static const bool made = write_name(text, sizeof text);
        (void)made;
        return text;
    }
};

template <int Count, bool Trans, typename A>
BRRR_CPU_ENTRY void stmatrix(A address, const uint32_t (&in)[Count], const char* file, int line) {
    static_assert(Count == 1 || Count == 2 || Count == 4, "stmatrix stores 1, 2 or 4 matrices");
    static const Collective desc{Stmatrix<Count, Trans>::name(), &Stmatrix<Count, Trans>::complete};
    StmatrixLane me{{0, 0, 0, 0}, nullptr};
    for (int j = 0; j < Count; ++j) me.in[j] = in[j];
    const int l = brrr_cpu::mma::lane();
    if (l < 8 * Count) {  // the other lanes' addresses are not used
        char* p = static_cast<char*>(brrr_cpu::async::shared_pointer(shared_address(address), file, line));
        if (reinterpret_cast<uintptr_t>(p) % 16) {
            fault("misaligned address", std::string(Stmatrix<Count, Trans>::name()) + ": lane " + std::to_string(l) +
                                            "'s row address is not 16-byte aligned", file, line);
        }
        brrr_cpu::mma::check_access(p, 16, true, __builtin_return_address(0));
        me.row = p;
    }
    brrr_cpu::mma::meet(desc, &me, file, line);
}

// cvt.rna.tf32.f32
inline uint32_t cvt_rna_tf32_f32(float x) { return brrr_cpu::f32_bits(brrr_cpu::mma::tf32_round(x)); }
// cvt.rn.bf16x2.f32 d, a, b / cvt.rn.f16x2.f32: a rounded into the upper half of d, b into the lower.
inline uint32_t cvt_rn_bf16x2_f32(float a, float b) {
    return (uint32_t(brrr_cpu::float_to_bf16_bits(a)) << 16) | brrr_cpu::float_to_bf16_bits(b);
}
inline uint32_t cvt_rn_f16x2_f32(float a, float b) {
    return (uint32_t(brrr_cpu::float_to_half_bits(a)) << 16) | brrr_cpu::float_to_half_bits(b);
}

}  // namespace brrr_cpu::ptx
