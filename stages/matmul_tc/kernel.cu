// Tensor-core matrix product, CUDA C stage: c = A @ B in bfloat16, products exact, sums in float32,
// c rounded once to bfloat16. Written five times: the readable one, two as fast kernels are written for
// sm_80+ (mma.sync), two as for Hopper (wgmma, sm_90a):
//
//   v1 naive_kernel: one thread per element of c, both operands read from global memory, the
//                    float32 sum in k order. The readable definition, and the baseline.
//   v2 mma_kernel:   tensor cores through inline PTX. A block of 4 warps computes a 128x128 tile of c,
//                    each warp a 64x64 quarter of it as 4 x 8 tiles of mma.sync.m16n8k16 (128 float32
//                    accumulators a thread). The block steps through k 32 at a time; each step's tiles
//                    of A and B are copied global -> shared by cp.async (16 bytes a copy, no register
//                    round trip) into one of two buffers while the tensor cores work on the other,
//                    and the warps read them with ldmatrix (one instruction a 16x16 fragment).
//                    Rows of the shared tiles are padded by 16 bytes, so the 8 rows an ldmatrix
//                    phase reads fall in 8 different 4-bank groups.
//   v3 mma_pipelined_kernel: v2's instructions, arranged as sm_80+ GEMMs are. Nsight Compute put v2 at
//                    12.5% occupancy (204-226 registers a thread, 2 blocks of 4 warps an SM) with its
//                    warps stalled on fixed latency ("wait") and the DRAM at 9%: issue and latency,
//                    not bytes. Its SASS says why: two register moves an mma (B's fragment registers
//                    in the wrong order for HMMA's pairs, each move a fixed-latency wait before its
//                    mma) and 64-bit index arithmetic for every 16-byte copy. v3 changes:
//                    - B's fragments loaded by ldmatrix in the order HMMA reads them (load_fragment's
//                      ForB): the main loop is ldmatrix and mma alone, no moves;
//                    - each thread's copies set up once (TileCopy), a step moves one address, and a
//                      step whose tile lies whole inside the operand skips the edge tests;
//                    - a 128 x 128 tile of 8 warps (2 x 4, each 64 x 32: 64 accumulators a thread,
//                      121 registers), k-steps of 64, 3 buffers in dynamic shared memory (105 KiB,
//                      opted in with cudaFuncSetAttribute), 2 blocks an SM: 16 warps to hide latency;
//                    - a 3-deep cp.async pipeline with one barrier a step (which also frees the buffer
//                      the next copies overwrite), fragments of k-slice kk + 16 loaded before the
//                      mma's of slice kk;
//                    - blocks ordered in groups of 8 row tiles (tile_of), pairs of c stored as one
//                      4-byte store.
//                    Tile shapes are a Tiling's template parameters: benchmarks/matmul_tc_variants
//                    times several beside cuBLAS. The staging rules (cp.async, zero fill, the plain-load
//                    fallback), the fragments' contents and the k order of every sum are v2's.
//   v4 wgmma_kernel: v3 still spent two thirds of its issue slots on addresses, loops and barriers
//                    around ldmatrix and mma.sync, at 43-46% of cuBLAS on an H200. v4 changes:
//                    - the products are wgmma.mma_async m64n256k16 (Hopper's warpgroup instruction): the
//                      tensor cores read A and B from shared memory themselves (descriptors), no ldmatrix,
//                      no fragment registers; a warpgroup (4 warps) a 64 x 256 part of a 128 x 256 tile;
//                    - the tiles are staged in the 128-byte swizzle wgmma reads (Swizzled), still by
//                      every thread's cp.async, 4 stages, one barrier a k-step;
//                    - a step's products run asynchronously: wgmma.wait_group 1 lets step s's run
//                      while step s + 1 is waited for and issued.
//                    89.9-94% of cuBLAS at 4096^3 (benchmarks/results/2026-11-29-h200-matmul-tc-v4).
//   v5 wgmma_tma_kernel: v4's products, fed by the tensor memory accelerator: one producer warp issues
//                    cp.async.bulk.tensor loads (tensor maps, the same swizzle, zeros outside the
//                    operand, so no edge tests), mbarrier full/empty barriers a stage replace v4's
//                    per-thread copies and __syncthreads. 91-95% of cuBLAS at 4096^3
//                    (benchmarks/results/2026-11-29-h200-matmul-tc-v5). matmul_tc_fastest picks v5, v4's
//                    128 x 128 tiles for small products, v3 for operands TMA cannot move.
//
// Both operands of mma.sync's row.col form are "MN x K" matrices (A is M x K, B enters as B^T, N x K).
// Each is in global memory either K-contiguous (A row-major, B^T stored as B's rows) or MN-contiguous;
// an MN-contiguous tile is staged as [k][mn] and read with ldmatrix's .trans, which hands every lane the
// same elements a K-contiguous tile gives. So forward (A: K, B: MN), grad_a = grad_c @ b^T (K, K) and
// grad_b = a^T @ grad_c (MN, MN) are one kernel on the tensors as they are, with no transposed copies.
// cp.async needs 16-byte aligned sources: an operand whose rows are not a whole number of 16 bytes
// (a leading dimension not a multiple of 8) is staged by plain loads instead, as libraries pick a
// kernel by alignment. 64-bit indices throughout: row * ld passes 2^31 long before memory runs out.
//
// Measured on an H100 at 4096^3 (benchmarks/results/2026-11-25-h100-matmul, run3: median of 20, cuBLAS bf16
// in the same process at 0.193 ms): v2 0.778 ms (24.7%), v3 0.448 ms (42.9%); v3 at 1024^3 70.7%, at
// 4095 x 4093 x 4097 (the plain-load fallback) 60.6%, at 8192^3 43.1%.
//
// Napkin math at 4096^3: 1.37e11 flops, 0.14 ms at the H100 SXM's ~990 TFLOP/s of dense bf16 (wgmma;
// mma.sync reaches about two thirds of that); the three matrices are 96 MiB, 0.03 ms at 3 TB/s. A
// 128x128x32 step loads 16 KiB and does 2 * 128 * 128 * 32 flops: 64 flops a byte of shared memory.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstdint>
#include <type_traits>

#include "brrr_kernel.cuh"

// ---- the element type ---------------------------------------------------------------------------

// E, the type of a, b and c: __nv_bfloat16 or __half. Both are 16-bit inputs whose products the tensor
// cores form exactly and sum in float32, so every kernel below is the same for both but for what is
// named here and the PTX type in mma.sync's and wgmma's names (an asm template is a string literal:
// one asm statement a type, picked by kHalf).
template <class E>
constexpr bool kHalf = std::is_same_v<E, __half>;

// Two adjacent elements of c, rounded once from their float32 sums, as one 4-byte store.
template <class E>
__device__ __forceinline__ void store_pair(E* out, float lo, float hi) {
    if constexpr (kHalf<E>) {
        *reinterpret_cast<__half2*>(out) = __floats2half2_rn(lo, hi);
    } else {
        *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(lo, hi);
    }
}

// ---- v1: naive --------------------------------------------------------------------------------

constexpr int kNaiveTile = 16;  // 16x16 threads a block, one element of c each

// Operands through (row, column) strides, so the same kernel could serve transposed views.
template <class E>
__global__ void naive_kernel(const E* __restrict__ a, const E* __restrict__ b,
                             E* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kNaiveTile + threadIdx.y;
    const int64_t col = static_cast<int64_t>(blockIdx.y) * kNaiveTile + threadIdx.x;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (int64_t p = 0; p < k; ++p) {
        acc += brrr::to_acc(a[row * k + p]) * brrr::to_acc(b[p * n + col]);  // the product is exact
    }
    c[row * n + col] = brrr::from_acc<E>(acc);
}

// ---- v2: mma.sync, ldmatrix, cp.async double buffering -----------------------------------------

constexpr int kTileMN = 128;                // a block's tile of c: kTileMN x kTileMN
constexpr int kTileK = 32;                  // its step through k
constexpr int kWarpMN = 64;                 // a warp's quarter of it
constexpr int kThreads = 128;               // 4 warps, 2 x 2
constexpr int kPad = 8;                     // bf16 elements padding each shared row: 16 bytes
constexpr int kChunk = 8;                   // bf16 elements in one 16-byte copy
constexpr int kTileElems = kTileMN * (kTileK + kPad);  // the larger of the two staged shapes

// An MN x K tile of an MN x K operand as it is staged: K-contiguous operands as [mn][k], MN-contiguous
// ones as [k][mn]. Rows are the contiguous dimension, padded by 16 bytes: a row of 40, 72, 136 or 264
// elements is an odd number of 16-byte units, so 8 consecutive rows start in 8 different 4-bank groups.
template <bool KContig, int MN, int K>
struct Staged {
    static constexpr int rows = KContig ? MN : K;
    static constexpr int cols = KContig ? K : MN;
    static constexpr int ld = cols + kPad;
    static constexpr int elems = rows * ld;
    static constexpr int at(int r, int cc) { return r * ld + cc; }  // element (r, cc) of the staged tile
};

__device__ __forceinline__ uint32_t shared_address(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies the MN x K tile (mn0, k0) of operand x (`ld` elements between rows of its contiguous dimension;
// `mn` x `k` elements in all) into `tile`, zero past the edges. The Threads threads of the block copy
// its chunks of 8 elements, chunk after chunk. `vec`: x's rows are whole 16-byte chunks, so cp.async
// can move them.
template <bool KContig, int MN, int K, int Threads, class E>
__device__ __forceinline__ void stage_tile(E* tile, const E* __restrict__ x, int64_t ld,
                                           int64_t mn0, int64_t k0, int64_t mn, int64_t k, bool vec) {
    using S = Staged<KContig, MN, K>;
    static_assert(S::rows * S::cols % (kChunk * Threads) == 0, "every thread copies as many chunks");
    const int64_t row0 = KContig ? mn0 : k0;  // where the tile starts in x's rows and columns
    const int64_t col0 = KContig ? k0 : mn0;
    const int64_t rows = KContig ? mn : k;
    const int64_t cols = KContig ? k : mn;
#pragma unroll
    for (int i = 0; i < S::rows * S::cols / kChunk / Threads; ++i) {
        const int chunk = static_cast<int>(threadIdx.x) + i * Threads;
        const int r = chunk / (S::cols / kChunk);
        const int cc = chunk % (S::cols / kChunk) * kChunk;
        const int64_t row = row0 + r;
        const int64_t col = col0 + cc;
        // Elements of this chunk inside x: 0 past the last row, a partial chunk at the last column.
        const int64_t left = row < rows ? cols - col : 0;
        const int64_t valid = left < 0 ? 0 : left < kChunk ? left : kChunk;
        E* dst = tile + r * S::ld + cc;
        if (vec) {
            // src-size: the copy reads `valid` elements and zero-fills the rest of the 16 bytes.
            const E* src = valid > 0 ? x + row * ld + col : x;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
                         "r"(static_cast<int>(valid * 2)));
        } else {
            for (int e = 0; e < kChunk; ++e) dst[e] = e < valid ? x[row * ld + col + e] : brrr::from_acc<E>(0.0f);
        }
    }
}

// The 16x16 fragment at (mn, kk) of a staged tile, in the registers mma.sync takes for A: r[0] holds
// rows 0-7 / k 0-7, r[1] rows 8-15 / k 0-7, r[2] rows 0-7 / k 8-15, r[3] rows 8-15 / k 8-15 ("rows"
// along MN). ForB swaps the middle two, r[1] rows 0-7 / k 8-15 and r[2] rows 8-15 / k 0-7, so each
// n8 tile's two B registers come out consecutive, {r[0], r[1]} and {r[2], r[3]}, the aligned pairs
// an HMMA reads: in v2's order the compiler moved every pair into place (two moves an mma, whose
// fixed latency stalled the mma's behind them). Lane l names row l % 8 of 8x8 matrix l / 8, the one
// that lands in r[l / 8]; .trans transposes each matrix so a [k][mn] tile lands in the lanes as a
// [mn][k] one would.
template <bool KContig, int MN, int K, bool ForB = false, class E>
__device__ __forceinline__ void load_fragment(const E* tile, int mn, int kk, uint32_t r[4]) {
    using S = Staged<KContig, MN, K>;
    const int lane = threadIdx.x % 32;
    const int matrix = lane / 8;
    const int mn_at = mn + 8 * (ForB ? matrix / 2 : matrix % 2);  // the matrix's first row (along MN) and k
    const int k_at = kk + 8 * (ForB ? matrix % 2 : matrix / 2);
    if constexpr (KContig) {  // the lane's row of the matrix runs along k: it points at row lane % 8 along MN
        const uint32_t at = shared_address(tile + (mn_at + lane % 8) * S::ld + k_at);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(at));
    } else {  // the lane's row runs along MN: it points at k_at + lane % 8
        const uint32_t at = shared_address(tile + (k_at + lane % 8) * S::ld + mn_at);
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(at));
    }
}

template <class E>
__device__ __forceinline__ void mma_16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    if constexpr (kHalf<E>) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}

// c [m, n] = A [m, k] @ B [k, n]; A's tile (mn0 = a row) and B^T's (mn0 = a column) staged as above.
// gridDim.x counts row tiles, gridDim.y column tiles.
template <bool AKContig, bool BKContig, class E>
__global__ void __launch_bounds__(kThreads)
mma_kernel(const E* __restrict__ a, int64_t lda, bool a_vec, const E* __restrict__ b,
           int64_t ldb, bool b_vec, E* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    __shared__ alignas(16) E a_tiles[2][kTileElems];
    __shared__ alignas(16) E b_tiles[2][kTileElems];
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int wm = warp / 2 * kWarpMN;  // the warp's quarter of the block's tile
    const int wn = warp % 2 * kWarpMN;
    const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kTileMN;
    const int64_t col0 = static_cast<int64_t>(blockIdx.y) * kTileMN;
    float acc[4][8][4] = {};  // [m16 tile][n8 tile][mma's d0..d3]
    const int64_t steps = (k + kTileK - 1) / kTileK;
    if (steps > 0) {
        stage_tile<AKContig, kTileMN, kTileK, kThreads>(a_tiles[0], a, lda, row0, 0, m, k, a_vec);
        stage_tile<BKContig, kTileMN, kTileK, kThreads>(b_tiles[0], b, ldb, col0, 0, n, k, b_vec);
    }
    asm volatile("cp.async.commit_group;\n" ::);
    for (int64_t s = 0; s < steps; ++s) {
        // Step s + 1's copies go out before step s's math: they land while the tensor cores work.
        if (s + 1 < steps) {
            stage_tile<AKContig, kTileMN, kTileK, kThreads>(a_tiles[(s + 1) % 2], a, lda, row0, (s + 1) * kTileK, m,
                                                            k, a_vec);
            stage_tile<BKContig, kTileMN, kTileK, kThreads>(b_tiles[(s + 1) % 2], b, ldb, col0, (s + 1) * kTileK, n,
                                                            k, b_vec);
        }
        asm volatile("cp.async.commit_group;\n" ::);
        asm volatile("cp.async.wait_group 1;\n" ::);  // this thread's copies of step s have landed ...
        __syncthreads();                              // ... and every other thread's
        const E* at = a_tiles[s % 2];
        const E* bt = b_tiles[s % 2];
#pragma unroll
        for (int kk = 0; kk < kTileK; kk += 16) {
            uint32_t af[4][4], bf[4][4];
#pragma unroll
            for (int i = 0; i < 4; ++i) load_fragment<AKContig, kTileMN, kTileK>(at, wm + 16 * i, kk, af[i]);
#pragma unroll
            for (int j = 0; j < 4; ++j) load_fragment<BKContig, kTileMN, kTileK>(bt, wn + 16 * j, kk, bf[j]);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    // bf[j] holds columns wn + 16 j + 0..7 in registers 0 and 2, + 8..15 in 1 and 3.
                    mma_16816<E>(acc[i][2 * j], af[i], bf[j][0], bf[j][2]);
                    mma_16816<E>(acc[i][2 * j + 1], af[i], bf[j][1], bf[j][3]);
                }
            }
        }
        __syncthreads();  // every warp is done with this buffer before step s + 2's copies overwrite it
    }
    // mma's accumulator layout: d0, d1 at row g, columns 2t and 2t + 1; d2, d3 at row g + 8.
    const int g = lane / 4;
    const int t = lane % 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int64_t row = row0 + wm + 16 * i + g + 8 * (q / 2);
                const int64_t col = col0 + wn + 8 * j + 2 * t + q % 2;
                if (row < m && col < n) c[row * n + col] = brrr::from_acc<E>(acc[i][j][q]);
            }
        }
    }
}

// ---- v3: 8 warps, a Stages-deep cp.async pipeline, fragments double-buffered, grouped block order ----

// A block's tiling: a BM x BN tile of c, WarpsM x WarpsN warps (each a (BM / WarpsM) x (BN / WarpsN)
// part of it), BK-steps through k, Stages shared buffers, blocks ordered in groups of GroupM row tiles;
// MinBlocks: the blocks an SM must hold, which caps the registers a thread may take.
template <int BM, int BN, int BK, int WarpsM, int WarpsN, int Stages, int GroupM, int MinBlocks>
struct Tiling {
    static constexpr int bm = BM, bn = BN, bk = BK, stages = Stages, group_m = GroupM, min_blocks = MinBlocks;
    static constexpr int warps_n = WarpsN;
    static constexpr int threads = 32 * WarpsM * WarpsN;
    static constexpr int warp_m = BM / WarpsM;  // a warp's rows of c ...
    static constexpr int warp_n = BN / WarpsN;  // ... and columns
    static constexpr int mi = warp_m / 16;      // its m16 tiles along the rows
    static constexpr int nj = warp_n / 16;      // its 16-column B fragments (two n8 tiles each)
    static_assert(warp_m % 16 == 0 && warp_n % 16 == 0 && BK % 16 == 0 && Stages >= 2, "whole mma tiles");
    template <bool AKContig, bool BKContig>
    static constexpr int shared_bytes() {
        return Stages * (Staged<AKContig, BM, BK>::elems + Staged<BKContig, BN, BK>::elems) * 2;
    }
};

// The one v3 ships (binding.cpp): the best of the tilings benchmarks/matmul_tc_variants timed on an
// H100 at 4096^3, 1024^3 and 4095 x 4093 x 4097 (benchmarks/results/2026-11-25-h100-matmul).
using TcTiling = Tiling<128, 128, 64, 2, 4, 3, 8, 2>;

// Block `block`'s tile of c: groups of GroupM row tiles (fewer in the last), column after column
// inside a group, so the blocks resident at once read a few row panels of A and column panels of B.
template <int GroupM>
__device__ __forceinline__ void tile_of(int64_t block, int64_t tiles_m, int64_t tiles_n, int64_t& tile_m,
                                        int64_t& tile_n) {
    const int64_t per_group = GroupM * tiles_n;
    const int64_t first = block / per_group * GroupM;
    const int64_t rows = tiles_m - first < GroupM ? tiles_m - first : GroupM;
    const int64_t at = block % per_group;
    tile_m = first + at % rows;
    tile_n = at / rows;
}

// One 16-byte chunk global -> shared by cp.async: src-size makes the copy read `valid` elements and
// zero-fill the rest of the 16 bytes.
template <class E>
__device__ __forceinline__ void copy_chunk(E* dst, const E* src, int valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
                 "r"(valid * 2));
}

// One thread's share of copying an operand's tiles, step after step, set up once: the thread's chunk i
// is row r + i * row_step, column cc of the staged tile (chunk t + i * Threads in stage_tile's order).
// Each step only moves the address of chunk 0 and the count of x's rows or columns left, so a chunk
// costs a compare, a select and its copy, not v2's 64-bit index arithmetic (issue slots the mma's need).
// S: how the tile is staged (v3's padded rows, Staged, or v4's swizzled ones); S::at(r + row_step, cc)
// must be S::at(r, cc) + S::at(row_step, 0).
template <class E, bool KContig, int MN, int K, int Threads, class S = Staged<KContig, MN, K>>
struct TileCopy {
    static constexpr int per_row = S::cols / kChunk;     // chunks in a staged row
    static constexpr int row_step = Threads / per_row;   // staged rows between a thread's chunks
    static constexpr int count = S::rows / row_step;     // chunks a thread copies a step
    static_assert(Threads % per_row == 0 && S::rows % row_step == 0, "every thread copies whole chunks");
    const E* x;
    const E* at;  // chunk 0 of the next step in x (past x's edge where rows_left or cols_left say so)
    int64_t row_stride;       // x's elements from one of the thread's chunks to the next
    int64_t step_stride;      // ... and from a step's chunk to the next step's
    int64_t rows_left;        // x's rows from chunk 0's on, at the next step (<= 0: none)
    int64_t cols_left;        // x's columns from chunk 0's first on, at the next step
    int offset;               // chunk 0 in a staged tile
    bool vec;                 // x's rows are whole 16-byte chunks: cp.async moves them

    // x as stage_tile takes it, the tile at mn0 along MN; steps start at k = 0.
    __device__ __forceinline__ TileCopy(const E* __restrict__ x_, int64_t ld, int64_t mn0, int64_t mn,
                                        int64_t k, bool vec_)
        : x(x_), vec(vec_) {
        const int r = static_cast<int>(threadIdx.x) / per_row;
        const int cc = static_cast<int>(threadIdx.x) % per_row * kChunk;
        const int64_t row0 = KContig ? mn0 : 0;  // the tile's first row and column in x
        const int64_t col0 = KContig ? 0 : mn0;
        at = x_ + (row0 + r) * ld + col0 + cc;
        row_stride = row_step * ld;
        rows_left = (KContig ? mn : k) - row0 - r;
        cols_left = (KContig ? k : mn) - col0 - cc;
        offset = S::at(r, cc);
        step_stride = KContig ? K : K * ld;
    }

    // This step's chunks into `tile` (zero past x's edges), then on to the next step.
    __device__ __forceinline__ void copy(E* tile) {
        if (vec && rows_left > (count - 1) * row_step && cols_left >= kChunk) {
            // Every chunk whole inside x, as in all but the edge tiles: no chunk needs its own test.
#pragma unroll
            for (int i = 0; i < count; ++i) copy_chunk(tile + offset + i * S::at(row_step, 0), at + i * row_stride, kChunk);
        } else {
            const int in_row = cols_left <= 0 ? 0 : cols_left < kChunk ? static_cast<int>(cols_left) : kChunk;
#pragma unroll
            for (int i = 0; i < count; ++i) {
                const int valid = rows_left > i * row_step ? in_row : 0;  // elements of chunk i inside x
                const E* src = valid > 0 ? at + i * row_stride : x;
                E* dst = tile + offset + i * S::at(row_step, 0);
                if (vec) {
                    copy_chunk(dst, src, valid);
                } else {
                    for (int e = 0; e < kChunk; ++e) dst[e] = e < valid ? src[e] : brrr::from_acc<E>(0.0f);
                }
            }
        }
        at += step_stride;  // K-contiguous: K columns on; MN-contiguous: K rows down
        (KContig ? cols_left : rows_left) -= K;
    }
};

// One BK-step of a warp's mma's on the staged tiles `at` and `bt`. Fragments of k-slice kk + 16 are
// loaded into the other half of af/bf before slice kk's mma's issue, which then wait on nothing.
template <class T, bool AKContig, bool BKContig, class E>
__device__ __forceinline__ void mma_step(const E* at, const E* bt, int wm, int wn,
                                         float (&acc)[T::mi][2 * T::nj][4]) {
    uint32_t af[2][T::mi][4], bf[2][T::nj][4];
#pragma unroll
    for (int q = 0; q <= T::bk / 16; ++q) {
        if (q < T::bk / 16) {  // slice q's fragments
#pragma unroll
            for (int i = 0; i < T::mi; ++i) load_fragment<AKContig, T::bm, T::bk>(at, wm + 16 * i, 16 * q, af[q % 2][i]);
#pragma unroll
            for (int j = 0; j < T::nj; ++j) {
                load_fragment<BKContig, T::bn, T::bk, true>(bt, wn + 16 * j, 16 * q, bf[q % 2][j]);
            }
        }
        if (q > 0) {  // slice q - 1's mma's
            const int p = (q - 1) % 2;
#pragma unroll
            for (int i = 0; i < T::mi; ++i) {
#pragma unroll
                for (int j = 0; j < T::nj; ++j) {
                    // bf[p][j] holds columns wn + 16 j + 0..7 in registers 0 and 1, + 8..15 in 2 and 3.
                    mma_16816<E>(acc[i][2 * j], af[p][i], bf[p][j][0], bf[p][j][1]);
                    mma_16816<E>(acc[i][2 * j + 1], af[p][i], bf[p][j][2], bf[p][j][3]);
                }
            }
        }
    }
}

// A warp's accumulators into c, its part starting at (r0, c0). mma's accumulator layout: d0, d1 at
// row g, columns 2t and 2t + 1; d2, d3 at row g + 8. Where c's rows are a whole number of pairs
// (n even), a pair is one 4-byte store, aligned and inside its row.
template <class T, class E>
__device__ __forceinline__ void store_tile(const float (&acc)[T::mi][2 * T::nj][4], E* __restrict__ c,
                                           int64_t r0, int64_t c0, int64_t m, int64_t n) {
    const int g = threadIdx.x % 32 / 4;
    const int t = threadIdx.x % 4;
#pragma unroll
    for (int i = 0; i < T::mi; ++i) {
#pragma unroll
        for (int j = 0; j < 2 * T::nj; ++j) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int64_t row = r0 + 16 * i + g + 8 * h;
                const int64_t col = c0 + 8 * j + 2 * t;
                if (row >= m || col >= n) continue;
                E* out = c + row * n + col;
                if (n % 2 == 0) {
                    store_pair(out, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                } else {
                    out[0] = brrr::from_acc<E>(acc[i][j][2 * h]);
                    if (col + 1 < n) out[1] = brrr::from_acc<E>(acc[i][j][2 * h + 1]);
                }
            }
        }
    }
}

// c [m, n] = A [m, k] @ B [k, n] as mma_kernel, tiled by T; a 1-D grid, one block a tile (tile_of).
template <class T, bool AKContig, bool BKContig, class E>
__global__ void __launch_bounds__(T::threads, T::min_blocks)
mma_pipelined_kernel(const E* __restrict__ a, int64_t lda, bool a_vec, const E* __restrict__ b,
                     int64_t ldb, bool b_vec, E* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    using SA = Staged<AKContig, T::bm, T::bk>;
    using SB = Staged<BKContig, T::bn, T::bk>;
    extern __shared__ __align__(16) unsigned char staged[];
    E* a_tiles = reinterpret_cast<E*>(staged);  // Stages tiles of A, then Stages of B
    E* b_tiles = a_tiles + T::stages * SA::elems;
    const int warp = threadIdx.x / 32;
    const int wm = warp / T::warps_n * T::warp_m;  // the warp's part of the block's tile
    const int wn = warp % T::warps_n * T::warp_n;
    int64_t tile_m, tile_n;
    tile_of<T::group_m>(blockIdx.x, (m + T::bm - 1) / T::bm, (n + T::bn - 1) / T::bn, tile_m, tile_n);
    const int64_t row0 = tile_m * T::bm;
    const int64_t col0 = tile_n * T::bn;
    float acc[T::mi][2 * T::nj][4] = {};  // [m16 tile][n8 tile][mma's d0..d3]
    const int64_t steps = (k + T::bk - 1) / T::bk;
    // The first Stages - 1 steps' copies, a commit group each, empty past the last step: the wait in the
    // loop then always leaves the Stages - 2 groups after step s's in flight.
    TileCopy<E, AKContig, T::bm, T::bk, T::threads> a_copy(a, lda, row0, m, k, a_vec);
    TileCopy<E, BKContig, T::bn, T::bk, T::threads> b_copy(b, ldb, col0, n, k, b_vec);
#pragma unroll
    for (int s = 0; s < T::stages - 1; ++s) {
        if (s < steps) {
            a_copy.copy(a_tiles + s * SA::elems);
            b_copy.copy(b_tiles + s * SB::elems);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    }
    int read = 0;  // the buffer of step s; step s + Stages - 1 is copied into the one before it
    for (int64_t s = 0; s < steps; ++s) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(T::stages - 2));  // this thread's copies of step s landed,
        __syncthreads();  // every thread's too, and every warp is done with step s - 1's buffer, written next
        const int write = read == 0 ? T::stages - 1 : read - 1;
        if (s + T::stages - 1 < steps) {  // step s + Stages - 1's copies
            a_copy.copy(a_tiles + write * SA::elems);
            b_copy.copy(b_tiles + write * SB::elems);
        }
        asm volatile("cp.async.commit_group;\n" ::);
        mma_step<T, AKContig, BKContig>(a_tiles + read * SA::elems, b_tiles + read * SB::elems, wm, wn, acc);
        read = read + 1 == T::stages ? 0 : read + 1;
    }
    store_tile<T>(acc, c, row0 + wm, col0 + wn, m, n);
}

// ---- v4: wgmma (Hopper's warpgroup product) from 128-byte swizzled shared tiles ------------------

// How v4 stages a tile: the layout wgmma's descriptors call "128-byte swizzle". A K-contiguous tile
// is MN rows of 64 elements (128 bytes, one swizzle row); an MN-contiguous one is K rows of 64-element
// blocks, block after block. In each row the eight 16-byte chunks are permuted, chunk c stored at
// c ^ (row % 8): the 8 rows a chunk's column crosses land in 8 different 4-bank groups, for the
// cp.async writes here and for the tensor cores' reads.
template <bool KContig, int MN, int K>
struct Swizzled {
    static_assert(KContig ? K == 64 : (MN % 64 == 0 && K % 8 == 0), "whole 128-byte swizzle rows");
    static constexpr int rows = KContig ? MN : K;
    static constexpr int cols = KContig ? K : MN;
    static constexpr int elems = MN * K;
    static constexpr int at(int r, int cc) {
        return KContig ? r * 64 + ((cc / kChunk) ^ (r % 8)) * kChunk
                       : cc / 64 * (K * 64) + r * 64 + ((cc % 64 / kChunk) ^ (r % 8)) * kChunk;
    }
    // Bytes between 8-row groups (SBO) and, MN-contiguous, between 64-element blocks (LBO), as the
    // descriptor wants them; a K-contiguous tile has one block along k, its LBO is not read.
    static constexpr uint32_t sbo = 8 * 128;
    static constexpr uint32_t lbo = KContig ? 16 : K * 128;
    // Where the k16 slice kk of the operand's rows (along MN) from mn0 on starts.
    static constexpr int slice(int mn0, int kk) { return KContig ? mn0 * 64 + kk : mn0 / 64 * (K * 64) + kk * 64; }
};

// A wgmma shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): the start address,
// LBO and SBO in 16-byte units, 14 bits each, and layout 1 in bits 62-63: the 128-byte swizzle.
template <class E>
__device__ __forceinline__ uint64_t descriptor(const E* start, uint32_t lbo, uint32_t sbo) {
    return static_cast<uint64_t>((shared_address(start) >> 4) & 0x3fffu) |
           static_cast<uint64_t>((lbo >> 4) & 0x3fffu) << 16 | static_cast<uint64_t>((sbo >> 4) & 0x3fffu) << 32 |
           1ull << 62;
}

// wgmma.mma_async m64nNk16, E in, float32 sums: d (this thread's N / 2 accumulators) += A B for the
// warpgroup's 64 x 16 A and 16 x N B, both read from shared memory by the tensor cores. n256 is written
// for bfloat16 alone: float16's 256-column steps are two n128 products (wgmma_step), one long asm
// statement fewer to carry.
// Trans: the operand is MN-major there (imm-trans). Asynchronous: d is not to be read before a
// wgmma.wait_group that covers it.
template <class E, int TransA, int TransB>
__device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], uint64_t desc_a, uint64_t desc_b) {
    if constexpr (kHalf<E>) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                     "}, %64, %65, p, 1, 1, %67, %68;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                       "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                       "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                       "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                       "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(desc_a), "l"(desc_b), "r"(1), "n"(TransA), "n"(TransB));
    } else {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                     "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                     "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                     "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                     "}, %64, %65, p, 1, 1, %67, %68;\n}\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                       "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                       "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                       "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                       "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                       "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                       "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                       "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                     : "l"(desc_a), "l"(desc_b), "r"(1), "n"(TransA), "n"(TransB));
    }
}

template <int TransA, int TransB>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t desc_a, uint64_t desc_b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
                 "}, %128, %129, p, 1, 1, %131, %132;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                   "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
                   "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
                   "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
                   "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
                   "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
                   "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
                   "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
                   "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
                   "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
                   "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
                 : "l"(desc_a), "l"(desc_b), "r"(1), "n"(TransA), "n"(TransB));
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// cp.async writes through the generic proxy, wgmma reads through the async one: each thread fences its
// landed copies before the barrier that lets the warpgroups read them.
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// A block's tiling for v4: a 128 x BN tile of c, two warpgroups of 64 x BN each (one wgmma m64nBNk16 a
// k16 slice), k-steps of 64 through Stages buffers, blocks in groups of GroupM row tiles.
template <int BN, int Stages, int GroupM>
struct WgTiling {
    static constexpr int bm = 128, bn = BN, bk = 64, stages = Stages, group_m = GroupM;
    static constexpr int threads = 256;
    static_assert(BN == 128 || BN == 256, "wgmma_m64n128k16 or wgmma_m64n256k16");
    static_assert(Stages >= 3, "two steps in flight besides the one copied");
    // store_tile's view of a warp's part: one m16 row of BN / 16 column pairs of n8 tiles.
    static constexpr int mi = 1, nj = BN / 16;
    // The tiles, plus up to 1 KiB to start them at a multiple of 1024 bytes (the swizzle's repeat).
    static constexpr int shared_bytes() { return Stages * (bm + BN) * bk * 2 + 1024; }
};

// The ones v4 ships (matmul_tc_wgmma picks): the best of benchmarks/matmul_tc_variants' at 4096^3
// and at 1024^3 on an H200.
using WgmmaTiling = WgTiling<256, 4, 8>;
using WgmmaSmallTiling = WgTiling<128, 4, 8>;

template <class T, bool AKContig, bool BKContig, class E>
__device__ __forceinline__ void wgmma_step(const E* at, const E* bt, int wg,
                                           float (&d)[T::bn / 2]) {
    using SA = Swizzled<AKContig, T::bm, T::bk>;
    using SB = Swizzled<BKContig, T::bn, T::bk>;
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < T::bk; kk += 16) {
        const uint64_t da = descriptor(at + SA::slice(64 * wg, kk), SA::lbo, SA::sbo);
        const uint64_t db = descriptor(bt + SB::slice(0, kk), SB::lbo, SB::sbo);
        if constexpr (T::bn == 128) {
            wgmma_m64n128k16<E, !AKContig, !BKContig>(d, da, db);
        } else if constexpr (!kHalf<E>) {
            wgmma_m64n256k16<!AKContig, !BKContig>(d, da, db);
        } else {  // columns 0-127 into d[0..63], 128-255 into d[64..127]: n256's accumulator layout
            const uint64_t db_right = descriptor(bt + SB::slice(128, kk), SB::lbo, SB::sbo);
            wgmma_m64n128k16<E, !AKContig, !BKContig>(reinterpret_cast<float(&)[64]>(d[0]), da, db);
            wgmma_m64n128k16<E, !AKContig, !BKContig>(reinterpret_cast<float(&)[64]>(d[64]), da, db_right);
        }
    }
    wgmma_commit();
}

// c [m, n] = A [m, k] @ B [k, n] as mma_pipelined_kernel, the tensor cores reading the staged tiles
// themselves. Step s: wait for its copies and fence them; one barrier (after it every warpgroup has
// finished step s - 2's products, so that buffer is free); copy step s + Stages - 2 into it; issue
// step s's four wgmma's and wait for step s - 1's, leaving one group in flight.
template <class T, bool AKContig, bool BKContig, class E>
__global__ void __launch_bounds__(T::threads, 1)
wgmma_kernel(const E* __restrict__ a, int64_t lda, bool a_vec, const E* __restrict__ b,
             int64_t ldb, bool b_vec, E* __restrict__ c, int64_t m, int64_t k, int64_t n) {
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using SA = Swizzled<AKContig, T::bm, T::bk>;
    using SB = Swizzled<BKContig, T::bn, T::bk>;
    extern __shared__ __align__(16) unsigned char staged[];
    const uint32_t skip = (1024 - shared_address(staged) % 1024) % 1024;
    E* a_tiles = reinterpret_cast<E*>(staged + skip);
    E* b_tiles = a_tiles + T::stages * SA::elems;
    const int wg = threadIdx.x / 128;  // the warpgroup: rows 64 wg .. 64 wg + 63 of the tile
    int64_t tile_m, tile_n;
    tile_of<T::group_m>(blockIdx.x, (m + T::bm - 1) / T::bm, (n + T::bn - 1) / T::bn, tile_m, tile_n);
    const int64_t row0 = tile_m * T::bm;
    const int64_t col0 = tile_n * T::bn;
    float acc[T::mi][2 * T::nj][4] = {};
    float(&d)[T::bn / 2] = reinterpret_cast<float(&)[T::bn / 2]>(acc);
    const int64_t steps = (k + T::bk - 1) / T::bk;
    TileCopy<E, AKContig, T::bm, T::bk, T::threads, SA> a_copy(a, lda, row0, m, k, a_vec);
    TileCopy<E, BKContig, T::bn, T::bk, T::threads, SB> b_copy(b, ldb, col0, n, k, b_vec);
#pragma unroll
    for (int s = 0; s < T::stages - 2; ++s) {
        if (s < steps) {
            a_copy.copy(a_tiles + s * SA::elems);
            b_copy.copy(b_tiles + s * SB::elems);
        }
        asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int64_t s = 0; s < steps; ++s) {
        asm volatile("cp.async.wait_group %0;\n" ::"n"(T::stages - 3));  // step s's copies, this thread's
        fence_async_shared();
        __syncthreads();
        const int read = static_cast<int>(s % T::stages);
        const int write = static_cast<int>((s + T::stages - 2) % T::stages);
        if (s + T::stages - 2 < steps) {
            a_copy.copy(a_tiles + write * SA::elems);
            b_copy.copy(b_tiles + write * SB::elems);
        }
        asm volatile("cp.async.commit_group;\n" ::);
        wgmma_step<T, AKContig, BKContig>(a_tiles + read * SA::elems, b_tiles + read * SB::elems, wg, d);
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    store_tile<T>(acc, c, row0 + 64 * wg + 16 * (threadIdx.x / 32 % 4), col0, m, n);
#else
    __trap();  // built for a GPU without wgmma (sm_90a): matmul_tc_wgmma is not launched there
#endif
}

// ---- v5: v4's products fed by the tensor memory accelerator and a producer warp ------------------

// Transaction barriers (PTX mbarrier) in shared memory: a phase completes when its arrivals are made
// and the bytes it expects have landed.
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_address(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
}
// Until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile("{\n.reg .pred ready;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
                 "@ready bra DONE;\nbra WAIT;\nDONE:\n}\n" ::"r"(shared_address(bar)), "r"(parity) : "memory");
}
// The box of `map` at (c0, c1) (c0 along its contiguous dimension) into shared memory at dst, swizzled
// as the map says; its bytes count toward bar's phase.
template <class E>
__device__ __forceinline__ void tma_load(E* dst, const CUtensorMap* map, int c0, int c1, uint64_t* bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(shared_address(dst)), "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1),
                 "r"(shared_address(bar))
                 : "memory");
}

// v5's block: v4's two consumer warpgroups (threads 0-255) and one producer warp (256-287) whose first
// lane issues every copy. Barriers full[s] (the producer's copies of stage s landed) and empty[s]
// (every consumer thread is done with it) replace v4's __syncthreads and per-thread copies.
template <int BN, int Stages, int GroupM>
struct TmaTiling : WgTiling<BN, Stages, GroupM> {
    static constexpr int threads = 288;
    static constexpr int consumers = 256;
    static constexpr int stage_bytes = (128 + BN) * 64 * 2;
    static constexpr int shared_bytes() { return Stages * stage_bytes + 2 * Stages * 8 + 1024; }
};

using TmaMatmulTiling = TmaTiling<256, 4, 8>;

// One operand's copies of a k-step: a K-contiguous tile is one box of 64 (k) x MN rows; an MN-contiguous
// one MN / 64 boxes of 64 (mn) x 64 (k), each 8 KiB after the last: Swizzled's layouts.
template <bool KContig, int MN, class E>
__device__ __forceinline__ void tma_tile(E* tile, const CUtensorMap* map, int64_t mn0, int64_t k0,
                                         uint64_t* bar) {
    if constexpr (KContig) {
        tma_load(tile, map, static_cast<int>(k0), static_cast<int>(mn0), bar);
    } else {
#pragma unroll
        for (int j = 0; j < MN / 64; ++j) tma_load(tile + j * 64 * 64, map, static_cast<int>(mn0 + 64 * j), static_cast<int>(k0), bar);
    }
}

template <class T, bool AKContig, bool BKContig, class E>
__global__ void __launch_bounds__(T::threads, 1)
wgmma_tma_kernel(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map,
                 E* __restrict__ c, int64_t m, int64_t k, int64_t n) {
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using SA = Swizzled<AKContig, T::bm, T::bk>;
    using SB = Swizzled<BKContig, T::bn, T::bk>;
    extern __shared__ __align__(16) unsigned char staged[];
    const uint32_t skip = (1024 - shared_address(staged) % 1024) % 1024;
    E* a_tiles = reinterpret_cast<E*>(staged + skip);
    E* b_tiles = a_tiles + T::stages * SA::elems;
    uint64_t* full = reinterpret_cast<uint64_t*>(b_tiles + T::stages * SB::elems);
    uint64_t* empty = full + T::stages;
    if (threadIdx.x == 0) {
        for (int s = 0; s < T::stages; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], T::consumers);
        }
    }
    __syncthreads();
    int64_t tile_m, tile_n;
    tile_of<T::group_m>(blockIdx.x, (m + T::bm - 1) / T::bm, (n + T::bn - 1) / T::bn, tile_m, tile_n);
    const int64_t row0 = tile_m * T::bm;
    const int64_t col0 = tile_n * T::bn;
    const int64_t steps = (k + T::bk - 1) / T::bk;
    if (threadIdx.x >= T::consumers) {  // the producer warp: its first lane copies, step after step
        if (threadIdx.x == T::consumers) {
            for (int64_t s = 0; s < steps; ++s) {
                const int stage = static_cast<int>(s % T::stages);
                if (s >= T::stages) mbar_wait(&empty[stage], static_cast<uint32_t>((s / T::stages - 1) & 1));
                mbar_arrive_expect(&full[stage], T::stage_bytes);
                tma_tile<AKContig, T::bm>(a_tiles + stage * SA::elems, &a_map, row0, s * T::bk, &full[stage]);
                tma_tile<BKContig, T::bn>(b_tiles + stage * SB::elems, &b_map, col0, s * T::bk, &full[stage]);
            }
        }
        return;
    }
    const int wg = threadIdx.x / 128;
    float acc[T::mi][2 * T::nj][4] = {};
    float(&d)[T::bn / 2] = reinterpret_cast<float(&)[T::bn / 2]>(acc);
    for (int64_t s = 0; s < steps; ++s) {
        const int stage = static_cast<int>(s % T::stages);
        mbar_wait(&full[stage], static_cast<uint32_t>((s / T::stages) & 1));
        wgmma_step<T, AKContig, BKContig>(a_tiles + stage * SA::elems, b_tiles + stage * SB::elems, wg, d);
        wgmma_wait<1>();  // step s - 1's products are done: its stage goes back to the producer
        if (s > 0) mbar_arrive(&empty[(s - 1) % T::stages]);
    }
    wgmma_wait<0>();
    store_tile<T>(acc, c, row0 + 64 * wg + 16 * (threadIdx.x / 32 % 4), col0, m, n);
#else
    __trap();  // built for a GPU without wgmma and the tensor memory accelerator (sm_90a)
#endif
}

// ---- launchers ---------------------------------------------------------------------------------

// c [m, n] row-major, m, n > 0 (binding.cpp returns empty outputs itself); k = 0 writes zeros.
template <class E>
void matmul_tc_naive(const E* a, const E* b, E* c, int64_t m, int64_t k,
                     int64_t n, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned int>((m + kNaiveTile - 1) / kNaiveTile),
                    static_cast<unsigned int>((n + kNaiveTile - 1) / kNaiveTile));
    naive_kernel<E><<<grid, dim3(kNaiveTile, kNaiveTile), 0, stream>>>(a, b, c, m, k, n);
}

// Whether an operand's rows can be moved 16 bytes at a time: a whole number of chunks a row, and
// the storage 16-byte aligned.
template <class E>
static bool vectorizable(const E* x, int64_t ld) { return ld % kChunk == 0 && brrr::aligned16(x); }

// A [m, k] and B [k, n] as MN x K operands: AKContig says A is stored row-major (else as A^T, row-major),
// BKContig that B is stored as B^T row-major (else as B, row-major); lda and ldb are the strides of
// their stored rows.
template <bool AKContig, bool BKContig, class E>
void matmul_tc_mma(const E* a, int64_t lda, const E* b, int64_t ldb, E* c,
                   int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned int>((m + kTileMN - 1) / kTileMN),
                    static_cast<unsigned int>((n + kTileMN - 1) / kTileMN));
    mma_kernel<AKContig, BKContig, E><<<grid, kThreads, 0, stream>>>(a, lda, vectorizable(a, lda), b, ldb,
                                                                  vectorizable(b, ldb), c, m, k, n);
}

// v3 with tiling T, operands as matmul_tc_mma's; false when c has more tiles than a 1-D grid counts.
template <class T, bool AKContig, bool BKContig, class E>
bool matmul_tc_pipelined_with(const E* a, int64_t lda, const E* b, int64_t ldb,
                              E* c, int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    const int64_t tiles = ((m + T::bm - 1) / T::bm) * ((n + T::bn - 1) / T::bn);
    if (tiles > 0x7fffffff) return false;
    auto* kernel = mma_pipelined_kernel<T, AKContig, BKContig, E>;
    constexpr int bytes = T::template shared_bytes<AKContig, BKContig>();
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);  // over 48 KiB: opt in
    kernel<<<static_cast<unsigned int>(tiles), T::threads, bytes, stream>>>(a, lda, vectorizable(a, lda), b, ldb,
                                                                           vectorizable(b, ldb), c, m, k, n);
    return true;
}

// v4 with tiling T, operands as matmul_tc_mma's; false when c has more tiles than a 1-D grid counts.
template <class T, bool AKContig, bool BKContig, class E>
bool matmul_tc_wgmma_with(const E* a, int64_t lda, const E* b, int64_t ldb, E* c,
                          int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    const int64_t tiles = ((m + T::bm - 1) / T::bm) * ((n + T::bn - 1) / T::bn);
    if (tiles > 0x7fffffff) return false;
    auto* kernel = wgmma_kernel<T, AKContig, BKContig, E>;
    constexpr int bytes = T::shared_bytes();
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    kernel<<<static_cast<unsigned int>(tiles), T::threads, bytes, stream>>>(a, lda, vectorizable(a, lda), b, ldb,
                                                                           vectorizable(b, ldb), c, m, k, n);
    return true;
}

template <bool AKContig, bool BKContig, class E>
bool matmul_tc_pipelined(const E* a, int64_t lda, const E* b, int64_t ldb, E* c,
                         int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    return matmul_tc_pipelined_with<TcTiling, AKContig, BKContig>(a, lda, b, ldb, c, m, k, n, stream);
}

// A tensor map of operand x for v5: its rows (`rows` of them, `ld` elements apart) run along its
// contiguous dimension (`cols` elements); boxes of 64 x box_rows, 128-byte swizzled, zeros outside.
template <class E>
static bool encode(CUtensorMap* map, const E* x, int64_t rows, int64_t cols, int64_t ld, int box_rows) {
    static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled = [] {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found);
        return found == cudaDriverEntryPointSuccess ? reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn) : nullptr;
    }();
    const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
    const cuuint64_t strides[1] = {static_cast<cuuint64_t>(ld) * 2};
    const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t unit[2] = {1, 1};
    return encode_tiled && encode_tiled(map, kHalf<E> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<E*>(x), dims,
                                        strides, box, unit, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// v5 with tiling T, operands as matmul_tc_mma's, both vectorizable; false when c has more tiles than a
// 1-D grid counts, a tensor map cannot be made or a coordinate would pass int32.
template <class T, bool AKContig, bool BKContig, class E>
bool matmul_tc_tma_with(const E* a, int64_t lda, const E* b, int64_t ldb, E* c,
                        int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    const int64_t tiles = ((m + T::bm - 1) / T::bm) * ((n + T::bn - 1) / T::bn);
    if (tiles > 0x7fffffff || m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff) return false;
    auto* kernel = wgmma_tma_kernel<T, AKContig, BKContig, E>;
    constexpr int bytes = T::shared_bytes();
    // A runtime call that needs the device's context first: it makes the primary context current in this
    // thread. The driver's tensor-map encoder does not, and crashed called first in a thread without one
    // (autograd's backward thread, on an H200).
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    CUtensorMap a_map, b_map;
    // A: K-contiguous, m rows of k; else k rows of m. B^T: K-contiguous, n rows of k; else k rows of n.
    if (!encode(&a_map, a, AKContig ? m : k, AKContig ? k : m, lda, AKContig ? T::bm : 64) ||
        !encode(&b_map, b, BKContig ? n : k, BKContig ? k : n, ldb, BKContig ? T::bn : 64)) {
        return false;
    }
    kernel<<<static_cast<unsigned int>(tiles), T::threads, bytes, stream>>>(a_map, b_map, c, m, k, n);
    return true;
}

template <bool AKContig, bool BKContig, class E>
bool matmul_tc_tma(const E* a, int64_t lda, const E* b, int64_t ldb, E* c,
                   int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    if (!vectorizable(a, lda) || !vectorizable(b, ldb)) {  // the tensor maps need 16-byte rows, as cp.async
        return matmul_tc_pipelined<AKContig, BKContig>(a, lda, b, ldb, c, m, k, n, stream);
    }
    return matmul_tc_tma_with<TmaMatmulTiling, AKContig, BKContig>(a, lda, b, ldb, c, m, k, n, stream);
}

// v4 by the product's shape (H200, 2026-11-29, benchmarks/results/2026-11-29-h200-matmul-tc-v4), for
// forward_v4 and matmul_tc_fastest's small products:
// - an operand cp.async cannot move (rows not whole 16-byte chunks): v3, whose two blocks an SM hide
//   the plain loads better than v4's one (4095 x 4093 x 4097: v3 59.8% of cuBLAS, v4 50.6%);
// - fewer 128 x 256 tiles than SMs: 128 x 128 ones, to fill more of them (1024^3: 106% against 79%).
template <bool AKContig, bool BKContig, class E>
bool matmul_tc_wgmma(const E* a, int64_t lda, const E* b, int64_t ldb, E* c,
                     int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    if (!vectorizable(a, lda) || !vectorizable(b, ldb)) {
        return matmul_tc_pipelined<AKContig, BKContig>(a, lda, b, ldb, c, m, k, n, stream);
    }
    const int sms = brrr::device_attribute(cudaDevAttrMultiProcessorCount);
    if (((m + WgmmaTiling::bm - 1) / WgmmaTiling::bm) * ((n + WgmmaTiling::bn - 1) / WgmmaTiling::bn) < sms) {
        return matmul_tc_wgmma_with<WgmmaSmallTiling, AKContig, BKContig>(a, lda, b, ldb, c, m, k, n, stream);
    }
    return matmul_tc_wgmma_with<WgmmaTiling, AKContig, BKContig>(a, lda, b, ldb, c, m, k, n, stream);
}

// The kernel binding.cpp's forward and backward launch where the GPU has wgmma, by the product's shape
// (H200, 2026-11-29, benchmarks/results/2026-11-29-h200-matmul-tc-v5): v5 where 128 x 256 tiles fill the
// SMs (4096^3: 91.0% of cuBLAS, v4 89.9%), v4's 128 x 128 tiles where they would not (1024^3: v4 98.5%,
// v5 70.9%), v3 for operands cp.async and the tensor maps cannot move (as matmul_tc_wgmma).
template <bool AKContig, bool BKContig, class E>
bool matmul_tc_fastest(const E* a, int64_t lda, const E* b, int64_t ldb, E* c,
                       int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    const int sms = brrr::device_attribute(cudaDevAttrMultiProcessorCount);
    const bool fills = ((m + TmaMatmulTiling::bm - 1) / TmaMatmulTiling::bm) *
                           ((n + TmaMatmulTiling::bn - 1) / TmaMatmulTiling::bn) >= sms;
    return fills ? matmul_tc_tma<AKContig, BKContig>(a, lda, b, ldb, c, m, k, n, stream)
                 : matmul_tc_wgmma<AKContig, BKContig>(a, lda, b, ldb, c, m, k, n, stream);
}

// The three products binding.cpp asks for: a @ b (forward), grad_c @ b^T (grad_a), a^T @ grad_c (grad_b),
// in both element types.
#define MATMUL_TC_INSTANTIATE(AK, BK, E)                                                                            \
    template void matmul_tc_mma<AK, BK>(const E*, int64_t, const E*, int64_t, E*, int64_t, int64_t, int64_t,         \
                                        cudaStream_t);                                                               \
    template bool matmul_tc_pipelined<AK, BK>(const E*, int64_t, const E*, int64_t, E*, int64_t, int64_t, int64_t,   \
                                              cudaStream_t);                                                         \
    template bool matmul_tc_wgmma<AK, BK>(const E*, int64_t, const E*, int64_t, E*, int64_t, int64_t, int64_t,       \
                                          cudaStream_t);                                                             \
    template bool matmul_tc_tma<AK, BK>(const E*, int64_t, const E*, int64_t, E*, int64_t, int64_t, int64_t,         \
                                        cudaStream_t);                                                               \
    template bool matmul_tc_fastest<AK, BK>(const E*, int64_t, const E*, int64_t, E*, int64_t, int64_t, int64_t,     \
                                            cudaStream_t);
#define MATMUL_TC_INSTANTIATE_ALL(E)                                                                                \
    template void matmul_tc_naive(const E*, const E*, E*, int64_t, int64_t, int64_t, cudaStream_t);                 \
    MATMUL_TC_INSTANTIATE(true, false, E)                                                                           \
    MATMUL_TC_INSTANTIATE(true, true, E)                                                                            \
    MATMUL_TC_INSTANTIATE(false, false, E)
MATMUL_TC_INSTANTIATE_ALL(__nv_bfloat16)
MATMUL_TC_INSTANTIATE_ALL(__half)
