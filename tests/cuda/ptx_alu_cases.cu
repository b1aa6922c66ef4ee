// Arithmetic, atomics and blocks of inline PTX on the CPU (tests/cuda/test_cpu_ptx_alu.py), written as
// public kernels write them: integer and bit arithmetic, f32 and packed f16x2/bf16x2 math, setp and
// selp inside a block, atom and red, CUTLASS's predicated vector load and Marlin's predicated
// cp.async. `prog CASE` prints the 32-bit words it computed, or the launch's fault. Built by nvcc too
// (benchmarks/tensor_core_agreement.py): the same words on a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "case_buffers.h"

constexpr int kThreads = 32;
constexpr int kWords = 24;  // results a thread

__device__ float float_of(unsigned a) { return static_cast<float>(static_cast<int>(a % 20001u) - 10000) / 7.0f; }

__global__ void integers(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x;
    const unsigned a = words[t], b = words[(t + 5) % kThreads], c = words[(t + 11) % kThreads];
    const int sa = static_cast<int>(a), sb = static_cast<int>(b), sc = static_cast<int>(c);
    unsigned r[kWords];
    unsigned long long w, sw;
    asm("add.s32 %0, %1, %2;" : "=r"(r[0]) : "r"(sa), "r"(sb));
    asm("sub.u32 %0, %1, %2;" : "=r"(r[1]) : "r"(a), "r"(b));
    asm("mul.lo.u32 %0, %1, %2;" : "=r"(r[2]) : "r"(a), "r"(b));
    asm("mul.hi.s32 %0, %1, %2;" : "=r"(r[3]) : "r"(sa), "r"(sb));
    asm("mul.wide.u32 %0, %1, %2;" : "=l"(w) : "r"(a), "r"(b));
    r[4] = static_cast<unsigned>(w), r[5] = static_cast<unsigned>(w >> 32);
    asm("mad.lo.s32 %0, %1, %2, %3;" : "=r"(r[6]) : "r"(sa), "r"(sb), "r"(sc));
    asm("shl.b32 %0, %1, %2;" : "=r"(r[7]) : "r"(a), "r"(b & 63u));
    asm("shr.s32 %0, %1, %2;" : "=r"(r[8]) : "r"(sa), "r"(c & 63u));
    asm("shr.u32 %0, %1, %2;" : "=r"(r[9]) : "r"(a), "r"(c & 63u));
    asm("min.s32 %0, %1, %2;" : "=r"(r[10]) : "r"(sa), "r"(sb));
    asm("max.u32 %0, %1, %2;" : "=r"(r[11]) : "r"(a), "r"(b));
    asm("neg.s32 %0, %1;" : "=r"(r[12]) : "r"(sa));
    asm("abs.s32 %0, %1;" : "=r"(r[13]) : "r"(sa));
    asm("not.b32 %0, %1;" : "=r"(r[14]) : "r"(a));
    asm("popc.b32 %0, %1;" : "=r"(r[15]) : "r"(a));
    asm("clz.b32 %0, %1;" : "=r"(r[16]) : "r"(a >> (b & 31u)));
    asm("brev.b32 %0, %1;" : "=r"(r[17]) : "r"(a));
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r[18]) : "r"(a), "r"(b & 31u), "r"(c & 31u));
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(r[19]) : "r"(sa), "r"(b & 31u), "r"(c & 15u));
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(r[20]) : "r"(a), "r"(b), "r"(c & 31u), "r"((c >> 8) & 31u));
    asm("mul.hi.u32 %0, %1, %2;" : "=r"(r[21]) : "r"(a), "r"(b));
    asm("mul.wide.s32 %0, %1, %2;" : "=l"(sw) : "r"(sa), "r"(sb));
    r[22] = static_cast<unsigned>(sw), r[23] = static_cast<unsigned>(sw >> 32);
    for (int k = 0; k < kWords; ++k) out[kWords * t + k] = r[k];
}

__global__ void floats(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x;
    const float x = float_of(words[t]), y = float_of(words[(t + 5) % kThreads]), z = float_of(words[(t + 11) % kThreads]);
    const float tiny = x * 1e-42f;  // subnormal (or zero)
    float f[11];
    asm("add.f32 %0, %1, %2;" : "=f"(f[0]) : "f"(x), "f"(y));
    asm("sub.rn.f32 %0, %1, %2;" : "=f"(f[1]) : "f"(x), "f"(y));
    asm("mul.rn.f32 %0, %1, %2;" : "=f"(f[2]) : "f"(x), "f"(y));
    asm("fma.rn.f32 %0, %1, %2, %3;" : "=f"(f[3]) : "f"(x), "f"(y), "f"(z));
    asm("div.rn.f32 %0, %1, %2;" : "=f"(f[4]) : "f"(x), "f"(y));
    asm("min.f32 %0, %1, %2;" : "=f"(f[5]) : "f"(x), "f"(y));
    asm("max.f32 %0, %1, %2;" : "=f"(f[6]) : "f"(x), "f"(y));
    asm("neg.f32 %0, %1;" : "=f"(f[7]) : "f"(x));
    asm("abs.f32 %0, %1;" : "=f"(f[8]) : "f"(y));
    // .rn: without it ptxas may fuse the mul.f32 nvcc emits for x * 0.001f into an fma with the add (an H200 did)
    asm("add.rn.sat.f32 %0, %1, %2;" : "=f"(f[9]) : "f"(x * 0.001f), "f"(y * 0.001f));
    asm("mul.ftz.f32 %0, %1, 0f3F800000;" : "=f"(f[10]) : "f"(tiny));
    unsigned r[kWords];
    for (int k = 0; k < 11; ++k) r[k] = __float_as_uint(f[k]);
    unsigned hxy, hyz, hzx, bxy, byz, bzx;  // packed pairs, the second source in the low half
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(hxy) : "f"(x), "f"(y));
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(hyz) : "f"(y), "f"(z));
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(hzx) : "f"(z), "f"(x));
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(bxy) : "f"(x), "f"(y));
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(byz) : "f"(y), "f"(z));
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(bzx) : "f"(z), "f"(x));
    asm("fma.rn.f16x2 %0, %1, %2, %3;" : "=r"(r[11]) : "r"(hxy), "r"(hyz), "r"(hzx));
    asm("add.f16x2 %0, %1, %2;" : "=r"(r[12]) : "r"(hxy), "r"(hyz));
    asm("sub.f16x2 %0, %1, %2;" : "=r"(r[13]) : "r"(hxy), "r"(hzx));
    asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r[14]) : "r"(hyz), "r"(hzx));
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r[15]) : "r"(bxy), "r"(byz), "r"(bzx));
    asm("add.rn.bf16x2 %0, %1, %2;" : "=r"(r[16]) : "r"(bxy), "r"(byz));
    asm("max.bf16x2 %0, %1, %2;" : "=r"(r[17]) : "r"(bxy), "r"(bzx));
    asm("min.f16x2 %0, %1, %2;" : "=r"(r[18]) : "r"(hxy), "r"(hyz));
    asm("neg.f16x2 %0, %1;" : "=r"(r[19]) : "r"(hxy));
    asm("abs.bf16x2 %0, %1;" : "=r"(r[20]) : "r"(byz));
    float m;
    asm("{ .reg .pred p; .reg .f32 t; setp.lt.f32 p, %1, %2; selp.f32 t, %1, %2, p; add.f32 %0, t, 0f3F800000; }"
        : "=f"(m) : "f"(x), "f"(y));
    r[21] = __float_as_uint(m);
    asm("{\n\t.reg .pred p, q;\n\tsetp.gtu.f32 p, %1, 0f00000000;\n\tsetp.ne.s32 q, %2, 0;\n\tand.pred p, p, q;\n\t"
        "selp.u32 %0, 7, 9, p;\n}" : "=r"(r[22]) : "f"(x), "r"(static_cast<int>(t & 1u)));
    asm("{ .reg .b32 w<2>; mov.b32 w0, %1; add.u32 w1, w0, w0; shr.u32 %0, w1, 1; }" : "=r"(r[23]) : "r"(words[t]));
    for (int k = 0; k < kWords; ++k) out[kWords * t + k] = r[k];
}

// setp's two destinations (p|q: the comparison and its negation) and its and/or/xor with a third
// predicate, {!}c, as the PTX ISA defines them; 6 words a thread, 0 or 1 each.
__global__ void setp_pairs(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x;
    const int a = static_cast<int>(words[t]), b = static_cast<int>(words[(t + 5) % kThreads]);
    const float x = float_of(words[t]), y = float_of(words[(t + 11) % kThreads]);
    unsigned r[6];
    asm("{ .reg .pred p, q; setp.lt.s32 p|q, %2, %3; selp.u32 %0, 1, 0, p; selp.u32 %1, 1, 0, q; }"
        : "=r"(r[0]), "=r"(r[1]) : "r"(a), "r"(b));
    asm("{ .reg .pred p, q, c; setp.ne.u32 c, %4, 0; setp.gt.and.f32 p|q, %2, %3, !c; selp.u32 %0, 1, 0, p; "
        "selp.u32 %1, 1, 0, q; }" : "=r"(r[2]), "=r"(r[3]) : "f"(x), "f"(y), "r"(t & 1u));
    asm("{ .reg .pred p, c; setp.ne.u32 c, %3, 0; setp.hs.xor.u32 p, %1, %2, c; selp.u32 %0, 1, 0, p; }"
        : "=r"(r[4]) : "r"(words[t]), "r"(words[(t + 5) % kThreads]), "r"(t & 2u));
    asm("{ .reg .pred p, q, c; setp.ne.u32 c, %3, 0; setp.eq.or.s32 q|p, %1, %2, c; selp.u32 %0, 1, 0, p; }"
        : "=r"(r[5]) : "r"(a & 3), "r"(b & 3), "r"(t & 4u));
    for (int k = 0; k < 6; ++k) out[6 * t + k] = r[k];
}

// atom and red on global and shared memory; the words a thread prints are order-free results.
__global__ void atomics(unsigned* counters, float* sums, unsigned* out) {
    const unsigned t = threadIdx.x;
    __shared__ unsigned tally;
    if (t == 0) tally = 0;
    __syncthreads();
    asm volatile("red.global.add.u32 [%0], %1;" :: "l"(counters), "r"(t + 1) : "memory");
    float old_sum;
    asm volatile("atom.global.add.f32 %0, [%1], %2;" : "=f"(old_sum) : "l"(sums + t % 4), "f"(0.5f * static_cast<float>(t / 4)) : "memory");
    (void)old_sum;  // the order the adds land in varies: only the sums are printed
    asm volatile("red.relaxed.gpu.global.max.s32 [%0], %1;" :: "l"(counters + 1), "r"(static_cast<int>(t * 7 % 23) - 11) : "memory");
    unsigned before;
    asm volatile("atom.global.inc.u32 %0, [%1], 9;" : "=r"(before) : "l"(counters + 2) : "memory");
    asm volatile("red.release.gpu.global.xor.b32 [%0], %1;" :: "l"(counters + 3), "r"(1u << t) : "memory");
    unsigned ticket;
    asm volatile("atom.shared.add.u32 %0, [%1], 1;" : "=r"(ticket)
                 : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&tally))) : "memory");
    __syncthreads();
    unsigned swapped = 0;
    if (t == 0) {
        asm volatile("atom.shared.cas.b32 %0, [%1], %2, %3;" : "=r"(swapped)
                     : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&tally))), "r"(32u), "r"(100u) : "memory");
    }
    __syncthreads();
    out[2 * t] = ticket, out[2 * t + 1] = t == 0 ? swapped * 1000u + tally : before < 10u;
}

// CUTLASS's predicated 16-byte load (defaults moved in first, the load under @p) and Marlin's
// predicated cp.async (the copy under @p; the tile keeps what it held otherwise).
__global__ void guarded(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x;
    unsigned v[4] = {t, t + 1, t + 2, t + 3};
    asm volatile("{\n  .reg .pred p;\n  setp.ne.b32 p, %5, 0;\n  mov.b32 %0, %6;\n  mov.b32 %1, %7;\n  mov.b32 %2, %8;\n"
                 "  mov.b32 %3, %9;\n  @p ld.global.v4.u32 {%0, %1, %2, %3}, [%4];\n}\n"
                 : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                 : "l"(words + 4 * (t % 8)), "r"(static_cast<int>(t % 3 != 0)), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]));
    __shared__ alignas(16) unsigned tile[4 * kThreads];
    for (int k = 0; k < 4; ++k) tile[4 * t + k] = 0xdeadbeefu;
    __syncthreads();
    const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(&tile[4 * t]));
    asm volatile("{\n   .reg .pred p;\n   setp.ne.b32 p, %0, 0;\n   @p cp.async.cg.shared.global [%1], [%2], %3;\n}\n"
                 :: "r"(static_cast<int>(t % 2)), "r"(at), "l"(words + 4 * ((t + 3) % 8)), "n"(16));
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group 0;\n" ::);
    __syncthreads();
    for (int k = 0; k < 4; ++k) out[8 * t + k] = v[k], out[8 * t + 4 + k] = tile[4 * t + k];
}

// Warp instructions as CUDA compiles its intrinsics to them, and CUTLASS's elect_one_sync block; the
// block-wide bar.sync / barrier.sync of barrier 0. 16 words a thread.
__global__ void warps(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x, w = words[t];
    unsigned r[16] = {};
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r[0]) : "r"(w), "r"(31 - t));
    asm volatile("shfl.sync.up.b32 %0, %1, 1, 0x0, 0xffffffff;" : "=r"(r[1]) : "r"(w));
    asm volatile("shfl.sync.down.b32 %0, %1, 2, 0x1f, 0xffffffff;" : "=r"(r[2]) : "r"(w));
    asm volatile("shfl.sync.bfly.b32 %0, %1, 1, %2, 0xffffffff;" : "=r"(r[3]) : "r"(w), "r"((16 << 8) | 0x1f));
    asm volatile("{ .reg .pred p; setp.ne.u32 p, %1, 0; vote.sync.ballot.b32 %0, p, 0xffffffff; }" : "=r"(r[4]) : "r"(w & 1u));
    asm volatile("{ .reg .pred p, q; setp.lt.u32 p, %1, 40; vote.sync.all.pred q, p, 0xffffffff; selp.u32 %0, 1, 0, q; }"
                 : "=r"(r[5]) : "r"(t));
    asm volatile("{ .reg .pred p, q; setp.eq.u32 p, %1, 7; vote.sync.any.pred q, p, 0xffffffff; selp.u32 %0, 1, 0, q; }"
                 : "=r"(r[6]) : "r"(t));
    asm volatile("{ .reg .pred p, q; setp.lt.u32 p, %1, 16; vote.sync.uni.pred q, !p, 0xffffffff; selp.u32 %0, 1, 0, q; }"
                 : "=r"(r[7]) : "r"(t));
    asm volatile("redux.sync.add.u32 %0, %1, 0xffffffff;" : "=r"(r[8]) : "r"(w & 0xffffu));
    asm volatile("redux.sync.max.s32 %0, %1, 0xffffffff;" : "=r"(r[9]) : "r"(static_cast<int>(w)));
    asm volatile("redux.sync.xor.b32 %0, %1, 0xffffffff;" : "=r"(r[10]) : "r"(w));
    unsigned leader = 99, elected = 0;
    if (t != 0) {  // lanes 1-31, the membermask: lane 1 is elected
        asm volatile("{\n.reg .b32 %%rx;\n.reg .pred %%px;\n     elect.sync %%rx|%%px, %2;\n@%%px mov.s32 %1, 1;\n"
                     "     mov.s32 %0, %%rx;\n}\n" : "+r"(leader), "+r"(elected) : "r"(0xfffffffeu));
    }
    r[11] = leader, r[12] = elected;
    asm volatile("activemask.b32 %0;" : "=r"(r[13]));
    asm volatile("bar.warp.sync -1;");
    __shared__ unsigned slots[kThreads];
    slots[t] = w;
    asm volatile("bar.sync 0;" ::: "memory");
    const unsigned seen = slots[(t + 1) % kThreads];
    asm volatile("barrier.sync 0, %0;" :: "r"(kThreads) : "memory");
    r[14] = seen;
    for (int k = 0; k < 16; ++k) out[16 * t + k] = r[k];
}

// Named barriers as warp-specialized kernels use them, in a block of 4 warps: warp 0 produces a tile
// and arrives at barrier 1 (bar.arrive) where warps 1-3 wait (bar.sync 1, 128); warps 2 and 3 then
// trade values through barrier 2 (64 threads) while warp 1 does not take part. 2 words a thread.
__global__ void named_barriers(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x, warp = t / 32, lane = t % 32;
    __shared__ unsigned tile[32], trade[64];
    if (warp == 0) {
        tile[lane] = words[lane] ^ 0x5a5a5a5au;
        asm volatile("bar.arrive 1, 128;" ::: "memory");
        out[2 * t] = out[2 * t + 1] = 0;
        return;
    }
    asm volatile("bar.sync 1, 128;" ::: "memory");
    out[2 * t] = tile[(lane + warp) % 32];
    if (warp >= 2) {
        trade[t - 64] = tile[lane] + warp;
        asm volatile("barrier.sync.aligned 2, %0;" :: "r"(64) : "memory");
        out[2 * t + 1] = trade[(t - 64 + 32) % 64];
    } else {
        out[2 * t + 1] = 7;
    }
}

// Planted: warps 1-3 wait at barrier 3 for 128 threads, and warp 0 never arrives.
__global__ void named_deadlock(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x;
    if (t >= 32) asm volatile("bar.sync 3, 128;" ::: "memory");  // waits forever
    out[t] = words[t % 32];
}

// One-element cvt: float to integer in the four integer roundings (saturating; NaN is 0), integer to
// float, between the float types, integer widening, truncation and .sat. 16 words a thread.
__global__ void conversions(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x, a = words[t];
    const int sa = static_cast<int>(a);
    const float x = float_of(a), v = x * 0.5f, nan = __uint_as_float(0x7fc00000u), big = 3e9f;
    const double d = static_cast<double>(x) * 1.1;
    const unsigned short bf = static_cast<unsigned short>((a >> 16) & 0xbfffu);
    unsigned r[16];
    float f;
    unsigned short h;
    asm("cvt.rni.s32.f32 %0, %1;" : "=r"(r[0]) : "f"(v));
    asm("cvt.rzi.s32.f32 %0, %1;" : "=r"(r[1]) : "f"(v));
    asm("cvt.rmi.s32.f32 %0, %1;" : "=r"(r[2]) : "f"(v));
    asm("cvt.rpi.u32.f32 %0, %1;" : "=r"(r[3]) : "f"(v));
    asm("cvt.rn.f32.s32 %0, %1;" : "=f"(f) : "r"(sa));
    r[4] = __float_as_uint(f);
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    r[5] = h;
    asm("cvt.f32.bf16 %0, %1;" : "=f"(f) : "h"(bf));
    r[6] = __float_as_uint(f);
    asm("cvt.rni.f32.f32 %0, %1;" : "=f"(f) : "f"(v));
    r[7] = __float_as_uint(f);
    asm("cvt.s32.s8 %0, %1;" : "=r"(r[8]) : "r"(a & 0xffu));
    asm("cvt.sat.u8.s32 %0, %1;" : "=r"(r[9]) : "r"(sa >> 20));
    asm("cvt.u16.u32 %0, %1;" : "=r"(r[10]) : "r"(a));
    asm("cvt.sat.s16.s32 %0, %1;" : "=r"(r[11]) : "r"(sa >> 8));
    asm("cvt.rn.f32.f64 %0, %1;" : "=f"(f) : "d"(d));
    r[12] = __float_as_uint(f);
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(x * 1e-3f));
    r[13] = h;
    asm("cvt.rzi.s32.f32 %0, %1;" : "=r"(r[14]) : "f"(nan));
    asm("cvt.rni.s32.f32 %0, %1;" : "=r"(r[15]) : "f"(big));
    for (int k = 0; k < 16; ++k) out[16 * t + k] = r[k];
}

// 8-bit integer tensor cores, one warp: D = A B + C by mma.m16n8k32 (s8 x s8), by m16n8k16 (u8 x s8),
// and by m16n8k32 .satfinite from an accumulator near the int32 maximum. Each lane packs its fragments
// by the PTX ISA's layout (A's register k: row g + 8 (k & 1), columns 4 t + 16 (k >> 1) + j; B's
// register k: rows 4 t + 16 k + j of column g) and prints its 4 accumulators of each, 12 words.
__device__ int a8(int r, int k) { return (r * 37 + k * 11) % 255 - 127; }
__device__ int b8(int k, int c) { return (k * 13 + c * 7) % 251 - 125; }
__device__ unsigned bytes4(int x0, int x1, int x2, int x3) {
    return (x0 & 0xff) | (x1 & 0xff) << 8 | (x2 & 0xff) << 16 | static_cast<unsigned>(x3 & 0xff) << 24;
}

__global__ void int8_mma(unsigned* out) {
    const int l = threadIdx.x, g = l >> 2, t = l & 3;
    unsigned a[4], au[2], b[2], bk16;
    for (int k = 0; k < 4; ++k) {
        const int r = g + 8 * (k & 1), c0 = 4 * t + 16 * (k >> 1);
        a[k] = bytes4(a8(r, c0), a8(r, c0 + 1), a8(r, c0 + 2), a8(r, c0 + 3));
    }
    for (int k = 0; k < 2; ++k) {
        const int r = g + 8 * k;
        au[k] = bytes4(a8(r, 4 * t) + 127, a8(r, 4 * t + 1) + 127, a8(r, 4 * t + 2) + 127, a8(r, 4 * t + 3) + 127);
        b[k] = bytes4(b8(4 * t + 16 * k, g), b8(4 * t + 16 * k + 1, g), b8(4 * t + 16 * k + 2, g), b8(4 * t + 16 * k + 3, g));
    }
    bk16 = b[0];
    int c[4], near_max[4], d[4], e[4], f[4];
    for (int i = 0; i < 4; ++i) {
        c[i] = (g + 8 * (i >> 1)) * 1000 - (2 * t + (i & 1)) * 77;
        near_max[i] = 2147483000 + i;
    }
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
                 "{%10, %11, %12, %13};"
                 : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    asm volatile("mma.sync.aligned.m16n8k16.row.col.s32.u8.s8.s32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%7, %8, %9, %10};"
                 : "=r"(e[0]), "=r"(e[1]), "=r"(e[2]), "=r"(e[3])
                 : "r"(au[0]), "r"(au[1]), "r"(bk16), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
    asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%10, %11, %12, %13};"
                 : "=r"(f[0]), "=r"(f[1]), "=r"(f[2]), "=r"(f[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                   "r"(near_max[0]), "r"(near_max[1]), "r"(near_max[2]), "r"(near_max[3]));
    for (int i = 0; i < 4; ++i) {
        out[12 * l + i] = static_cast<unsigned>(d[i]);
        out[12 * l + 4 + i] = static_cast<unsigned>(e[i]);
        out[12 * l + 8 + i] = static_cast<unsigned>(f[i]);
    }
}

// The 16-bit .approx functions on packed pairs and alone (flash-attention's fast exp): 6 words a thread.
__global__ void approx16(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x;
    const float x = float_of(words[t]) / 1500.0f, y = float_of(words[(t + 5) % kThreads]) / 1500.0f;
    unsigned h2, b2, r[6];
    unsigned short h, hr;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h2) : "f"(x * 8.0f), "f"(y * 8.0f));
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(b2) : "f"(x * 8.0f), "f"(y * 8.0f));
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x * 3.0f));
    asm("ex2.approx.f16x2 %0, %1;" : "=r"(r[0]) : "r"(h2));
    asm("ex2.approx.ftz.bf16x2 %0, %1;" : "=r"(r[1]) : "r"(b2));
    asm("tanh.approx.f16x2 %0, %1;" : "=r"(r[2]) : "r"(h2));
    asm("tanh.approx.bf16x2 %0, %1;" : "=r"(r[3]) : "r"(b2));
    asm("ex2.approx.f16 %0, %1;" : "=h"(hr) : "h"(h));
    r[4] = hr;
    asm("tanh.approx.f16 %0, %1;" : "=h"(hr) : "h"(h));
    r[5] = hr;
    for (int k = 0; k < 6; ++k) out[6 * t + k] = r[k];
}

// Marlin's cache-hinted copy: a createpolicy in a block, its policy the cp.async's last operand; its
// lock's fence.acq_rel.gpu, and membar.gl. 4 words a thread: the copied row of words.
__global__ void cache_hinted(const unsigned* words, unsigned* out) {
    const unsigned t = threadIdx.x;
    __shared__ alignas(16) unsigned tile[4 * kThreads];
    const unsigned at = static_cast<unsigned>(__cvta_generic_to_shared(&tile[4 * t]));
    asm volatile("{\n   .reg .b64 p;\n   createpolicy.fractional.L2::evict_first.b64 p, 1.0;\n"
                 "   cp.async.cg.shared.global.L2::cache_hint [%0], [%1], %2, p;\n}\n"
                 :: "r"(at), "l"(words + 4 * ((t + 1) % 8)), "n"(16));
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group 0;\n" ::);
    asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
    __syncthreads();
    asm volatile("membar.gl;\n" ::: "memory");
    for (int k = 0; k < 4; ++k) out[4 * t + k] = tile[4 * t + k];
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    Vec<unsigned> words(kThreads), out(kWords * kThreads, 0x7fc00000u), counters(4, 0);
    for (int i = 0; i < kThreads; ++i) words[i] = 0x9e3779b9u * static_cast<unsigned>(i + 1) ^ 0x85ebca6bu;
    Vec<float> sums(4, 0.0f);
    size_t n = kWords * kThreads;
    try {
        if (c == "integers") integers<<<1, kThreads>>>(words.data(), out.data());
        else if (c == "floats") floats<<<1, kThreads>>>(words.data(), out.data());
        else if (c == "atomics") atomics<<<1, kThreads>>>(counters.data(), sums.data(), out.data()), n = 2 * kThreads;
        else if (c == "guarded") guarded<<<1, kThreads>>>(words.data(), out.data()), n = 8 * kThreads;
        else if (c == "setp_pairs") setp_pairs<<<1, kThreads>>>(words.data(), out.data()), n = 6 * kThreads;
        else if (c == "warps") warps<<<1, kThreads>>>(words.data(), out.data()), n = 16 * kThreads;
        else if (c == "conversions") conversions<<<1, kThreads>>>(words.data(), out.data()), n = 16 * kThreads;
        else if (c == "cache_hinted") cache_hinted<<<1, kThreads>>>(words.data(), out.data()), n = 4 * kThreads;
        else if (c == "approx16") approx16<<<1, kThreads>>>(words.data(), out.data()), n = 6 * kThreads;
        else if (c == "int8_mma") int8_mma<<<1, kThreads>>>(out.data()), n = 12 * kThreads;
        else if (c == "named_barriers") named_barriers<<<1, 4 * kThreads>>>(words.data(), out.data()), n = 8 * kThreads;
        else if (c == "named_deadlock") named_deadlock<<<1, 4 * kThreads>>>(words.data(), out.data()), n = 4 * kThreads;
        else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
        if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
        if (c == "atomics") {  // the tickets in the order taken differ from run to run: printed sorted
            Vec<unsigned> tickets(kThreads);
            for (int t = 0; t < kThreads; ++t) tickets[t] = out[2 * t];
            std::sort(tickets.begin(), tickets.end());
            for (int t = 0; t < kThreads; ++t) out[2 * t] = tickets[t];
        }
        for (size_t i = 0; i < n; ++i) std::printf("%u ", out[i]);
        if (c == "atomics") {
            for (unsigned v : counters) std::printf("%u ", v);
            for (float s : sums) std::printf("%u ", *reinterpret_cast<unsigned*>(&s));
        }
        std::printf("\n");
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
