// Hopper's warpgroup tensor-core product on the CPU: wgmma.mma_async with both operands in shared
// memory, described by matrix descriptors (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply":
// the matrix descriptor and the canonical layouts, with or without the 32/64/128-byte swizzles), plus
// wgmma.fence, .commit_group, .wait_group and fence.proxy.async, as pipeline/cpu_ptx.py rewrites them.
//
// Each thread computes its own part of D: with A and B in shared memory every element it holds is a
// dot product of shared values, so no lane needs another's registers. The product is asynchronous as
// on a GPU: an issued wgmma waits in its thread's open group, and it runs (reads shared memory and
// writes the accumulator registers) only at the wgmma.wait_group that completes its group. So a kernel
// that overwrites an operand's shared memory before that wait, or reads an accumulator before it,
// gets what a GPU may give it, not a lucky sequential result.
//
// Arithmetic as mma.sync's (brrr_cpu_mma.h): exact products, added to the accumulator in k order, one
// float32 rounding each.
#pragma once
#include <cstddef>
#include <cstdint>

#include "brrr_cpu.h"
#include "brrr_cpu_async.h"
#include "brrr_cpu_mma.h"

namespace brrr_cpu::wgmma {

constexpr int kMaxRegs = 128;  // m64n256k16 with float32 accumulators: 128 a thread

// One wgmma.mma_async.sync.aligned.m64nNk16.f32.AB.AB d, a-desc, b-desc, scale-d, imm-scale-a,
// imm-scale-b, imm-trans-a, imm-trans-b, waiting for its group's wait.
struct Op {
    uint64_t desc_a, desc_b;
    float* d[kMaxRegs];     // the accumulator registers, written when the op runs
    int n;                  // N: d holds n / 2 of them
    brrr_cpu::mma::Type ab;
    bool accumulate;        // scale-d: D = A B + D, else D = A B
    int scale_a, scale_b;   // 1 or -1
    bool trans_a, trans_b;  // 1: the operand is MN-major in shared memory (else K-major)
    const char* file;
    int line;
    const void* pc;  // the return address into the kernel, for the memory checks
};

// The runtime's side (brrr_cpu_async_impl.h): the calling thread's open group and committed groups.
void issue(const Op& op);
void commit(const char* file, int line);
void wait(int newest, const char* file, int line);

struct Descriptor {
    uint64_t start, lbo, sbo;  // bytes
    int swizzle_bits;          // 0 (none), 1 (32-byte), 2 (64-byte), 3 (128-byte)
    int base_offset;
};

inline Descriptor decode(uint64_t desc) {
    const int mode = static_cast<int>(desc >> 62);  // 0 interleave, 1 128B, 2 64B, 3 32B
    return {(desc & 0x3fffu) << 4, ((desc >> 16) & 0x3fffu) << 4, ((desc >> 32) & 0x3fffu) << 4,
            mode == 0 ? 0 : mode == 1 ? 3 : mode == 2 ? 2 : 1, static_cast<int>((desc >> 49) & 7u)};
}

// The shared-memory byte address of element (mn, k) of a 16-bit operand (8 elements a 16-byte unit),
// in the canonical layouts of the PTX ISA (as CUTLASS's GmmaDescriptor writes them):
//   K-major,  no swizzle: ((8,m),(8,2)) : ((16 B, SBO), (2 B, LBO))
//   K-major,  swizzle W:  ((8,m),(8,2)) : ((16W B, SBO), (2 B, 16 B))
//   MN-major, no swizzle: ((8,m),(8,k)) : ((2 B, SBO), (16 B, LBO))
//   MN-major, swizzle W:  ((8W,m),(8,k)) : ((2 B, LBO), (16W B, SBO))
// W = 2, 4 or 8 sixteen-byte units a swizzled row; the swizzle then XORs address bits [7, 7 + b)
// into bits [4, 4 + b), b = log2 W, on the whole address (so a pattern starts at a multiple of 128 W).
inline uint64_t element_address(const Descriptor& d, bool mn_major, int mn, int k) {
    const uint64_t w = 1u << d.swizzle_bits;
    uint64_t at;
    if (!mn_major) {
        at = d.swizzle_bits == 0 ? (mn % 8) * 16 + (mn / 8) * d.sbo + (k % 8) * 2 + (k / 8) * d.lbo
                                 : (mn % 8) * 16 * w + (mn / 8) * d.sbo + k * 2;
    } else {
        at = d.swizzle_bits == 0 ? (mn % 8) * 2 + (mn / 8) * d.sbo + (k % 8) * 16 + (k / 8) * d.lbo
                                 : (mn % (8 * w)) * 2 + (mn / (8 * w)) * d.lbo + (k % 8) * 16 * w + (k / 8) * d.sbo;
    }
    at += d.start;
    if (d.swizzle_bits) at ^= ((at >> 7) & ((1u << d.swizzle_bits) - 1)) << 4;
    return at;
}

// Where lane `lane` of warp `warp` (0..3 in the warpgroup) holds accumulator register i of an
// m64nN tile: rows 16 warp + lane / 4 (+ 8), columns 8 (i / 4) + 2 (lane % 4) (+ 1), as mma.sync's C.
inline brrr_cpu::mma::Coord accumulator_at(int warp, int lane, int i) {
    return {16 * warp + lane / 4 + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * (lane % 4) + (i & 1)};
}

}  // namespace brrr_cpu::wgmma

namespace brrr_cpu::ptx {

// wgmma.mma_async.sync.aligned.m64nNk16.f32.AB.AB with A and B from shared memory.
template <int N, brrr_cpu::mma::Type AB, size_t ND>
BRRR_CPU_ENTRY void wgmma_mma_async(float* const (&d)[ND], uint64_t desc_a, uint64_t desc_b, int scale_d, int scale_a,
                                    int scale_b, int trans_a, int trans_b, const char* file, int line) {
    static_assert(N % 8 == 0 && N >= 8 && N <= 256, "wgmma.m64nNk16: N is a multiple of 8 from 8 to 256");
    static_assert(ND == N / 2, "wgmma.m64nNk16 with float32 accumulators: N / 2 registers a thread");
    brrr_cpu::wgmma::Op op{};
    op.desc_a = desc_a;
    op.desc_b = desc_b;
    for (size_t i = 0; i < ND; ++i) op.d[i] = d[i];
    op.n = N;
    op.ab = AB;
    op.accumulate = scale_d != 0;
    op.scale_a = scale_a;
    op.scale_b = scale_b;
    op.trans_a = trans_a != 0;
    op.trans_b = trans_b != 0;
    op.file = file;
    op.line = line;
    op.pc = __builtin_return_address(0);
    brrr_cpu::wgmma::issue(op);
}
inline void wgmma_commit_group(const char* file, int line) { brrr_cpu::wgmma::commit(file, line); }
inline void wgmma_wait_group(int n, const char* file, int line) { brrr_cpu::wgmma::wait(n, file, line); }
// wgmma.fence and fence.proxy.async order registers and proxies on a GPU; the CPU's products run in
// program order at their waits, so there is nothing to order.
inline void wgmma_fence(const char*, int) {}
inline void fence_proxy_async(const char*, int) {}

}  // namespace brrr_cpu::ptx
