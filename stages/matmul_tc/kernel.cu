// Tensor-core matrix product, CUDA C stage: c = A @ B in bfloat16, products exact, sums in float32,
// c rounded once to bfloat16. Written twice, the second as fast kernels are written for sm_80+:
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
// Napkin math at 4096^3: 1.37e11 flops, 0.14 ms at the H100 SXM's ~990 TFLOP/s of dense bf16 (wgmma;
// mma.sync reaches about two thirds of that); the three matrices are 96 MiB, 0.03 ms at 3 TB/s. A
// 128x128x32 step loads 16 KiB and does 2 * 128 * 128 * 32 flops: 64 flops a byte of shared memory.
#include <cstdint>

#include "brrr_kernel.cuh"

// ---- v1: naive --------------------------------------------------------------------------------

constexpr int kNaiveTile = 16;  // 16x16 threads a block, one element of c each

// Operands through (row, column) strides, so the same kernel could serve transposed views.
__global__ void naive_kernel(const __nv_bfloat16* __restrict__ a, const __nv_bfloat16* __restrict__ b,
                             __nv_bfloat16* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kNaiveTile + threadIdx.y;
    const int64_t col = static_cast<int64_t>(blockIdx.y) * kNaiveTile + threadIdx.x;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (int64_t p = 0; p < k; ++p) {
        acc += __bfloat162float(a[row * k + p]) * __bfloat162float(b[p * n + col]);  // the product is exact
    }
    c[row * n + col] = __float2bfloat16_rn(acc);
}

// ---- v2: mma.sync, ldmatrix, cp.async double buffering -----------------------------------------

constexpr int kTileMN = 128;                // a block's tile of c: kTileMN x kTileMN
constexpr int kTileK = 32;                  // its step through k
constexpr int kWarpMN = 64;                 // a warp's quarter of it
constexpr int kThreads = 128;               // 4 warps, 2 x 2
constexpr int kPad = 8;                     // bf16 elements padding each shared row: 16 bytes
constexpr int kChunk = 8;                   // bf16 elements in one 16-byte copy
constexpr int kTileElems = kTileMN * (kTileK + kPad);  // the larger of the two staged shapes

// A tile of an MN x K operand as it is staged: K-contiguous operands as [mn][k], MN-contiguous ones
// as [k][mn]. Rows are the contiguous dimension, padded.
template <bool KContig>
struct Staged {
    static constexpr int rows = KContig ? kTileMN : kTileK;
    static constexpr int cols = KContig ? kTileK : kTileMN;
    static constexpr int ld = cols + kPad;
};

__device__ __forceinline__ uint32_t shared_address(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies tile (mn0, k0) of operand x (`ld` elements between rows of its contiguous dimension;
// `mn` x `k` elements in all) into `tile`, zero past the edges. Each thread copies 4 of the 512 chunks
// of 8 elements. `vec`: x's rows are whole 16-byte chunks, so cp.async can move them.
template <bool KContig>
__device__ __forceinline__ void stage_tile(__nv_bfloat16* tile, const __nv_bfloat16* __restrict__ x, int64_t ld,
                                           int64_t mn0, int64_t k0, int64_t mn, int64_t k, bool vec) {
    using S = Staged<KContig>;
    const int64_t row0 = KContig ? mn0 : k0;  // where the tile starts in x's rows and columns
    const int64_t col0 = KContig ? k0 : mn0;
    const int64_t rows = KContig ? mn : k;
    const int64_t cols = KContig ? k : mn;
#pragma unroll
    for (int i = 0; i < S::rows * S::cols / kChunk / kThreads; ++i) {
        const int chunk = static_cast<int>(threadIdx.x) + i * kThreads;
        const int r = chunk / (S::cols / kChunk);
        const int cc = chunk % (S::cols / kChunk) * kChunk;
        const int64_t row = row0 + r;
        const int64_t col = col0 + cc;
        // Elements of this chunk inside x: 0 past the last row, a partial chunk at the last column.
        const int64_t left = row < rows ? cols - col : 0;
        const int64_t valid = left < 0 ? 0 : left < kChunk ? left : kChunk;
        __nv_bfloat16* dst = tile + r * S::ld + cc;
        if (vec) {
            // src-size: the copy reads `valid` elements and zero-fills the rest of the 16 bytes.
            const __nv_bfloat16* src = valid > 0 ? x + row * ld + col : x;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)), "l"(src),
                         "r"(static_cast<int>(valid * 2)));
        } else {
            for (int e = 0; e < kChunk; ++e) dst[e] = e < valid ? x[row * ld + col + e] : __float2bfloat16_rn(0.0f);
        }
    }
}

// The 16x16 fragment at (mn, kk) of a staged tile, in the registers mma.sync takes: r[0] holds rows
// 0-7 / k 0-7, r[1] rows 8-15 / k 0-7, r[2] rows 0-7 / k 8-15, r[3] rows 8-15 / k 8-15 ("rows" along
// MN). Lane l names the row of 8x8 matrix l / 8 that it points at; .trans transposes each matrix so
// a [k][mn] tile lands in the lanes as a [mn][k] one would.
template <bool KContig>
__device__ __forceinline__ void load_fragment(const __nv_bfloat16* tile, int mn, int kk, uint32_t r[4]) {
    using S = Staged<KContig>;
    const int lane = threadIdx.x % 32;
    if constexpr (KContig) {
        const uint32_t at = shared_address(tile + (mn + lane % 16) * S::ld + kk + 8 * (lane / 16));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(at));
    } else {
        const uint32_t at = shared_address(tile + (kk + 8 * (lane / 16) + lane % 8) * S::ld + mn + 8 * (lane / 8 % 2));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(at));
    }
}

__device__ __forceinline__ void mma_16816(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c [m, n] = A [m, k] @ B [k, n]; A's tile (mn0 = a row) and B^T's (mn0 = a column) staged as above.
// gridDim.x counts row tiles, gridDim.y column tiles.
template <bool AKContig, bool BKContig>
__global__ void __launch_bounds__(kThreads)
mma_kernel(const __nv_bfloat16* __restrict__ a, int64_t lda, bool a_vec, const __nv_bfloat16* __restrict__ b,
           int64_t ldb, bool b_vec, __nv_bfloat16* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    __shared__ alignas(16) __nv_bfloat16 a_tiles[2][kTileElems];
    __shared__ alignas(16) __nv_bfloat16 b_tiles[2][kTileElems];
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int wm = warp / 2 * kWarpMN;  // the warp's quarter of the block's tile
    const int wn = warp % 2 * kWarpMN;
    const int64_t row0 = static_cast<int64_t>(blockIdx.x) * kTileMN;
    const int64_t col0 = static_cast<int64_t>(blockIdx.y) * kTileMN;
    float acc[4][8][4] = {};  // [m16 tile][n8 tile][mma's d0..d3]
    const int64_t steps = (k + kTileK - 1) / kTileK;
    if (steps > 0) {
        stage_tile<AKContig>(a_tiles[0], a, lda, row0, 0, m, k, a_vec);
        stage_tile<BKContig>(b_tiles[0], b, ldb, col0, 0, n, k, b_vec);
    }
    asm volatile("cp.async.commit_group;\n" ::);
    for (int64_t s = 0; s < steps; ++s) {
        // Step s + 1's copies go out before step s's math: they land while the tensor cores work.
        if (s + 1 < steps) {
            stage_tile<AKContig>(a_tiles[(s + 1) % 2], a, lda, row0, (s + 1) * kTileK, m, k, a_vec);
            stage_tile<BKContig>(b_tiles[(s + 1) % 2], b, ldb, col0, (s + 1) * kTileK, n, k, b_vec);
        }
        asm volatile("cp.async.commit_group;\n" ::);
        asm volatile("cp.async.wait_group 1;\n" ::);  // this thread's copies of step s have landed ...
        __syncthreads();                              // ... and every other thread's
        const __nv_bfloat16* at = a_tiles[s % 2];
        const __nv_bfloat16* bt = b_tiles[s % 2];
#pragma unroll
        for (int kk = 0; kk < kTileK; kk += 16) {
            uint32_t af[4][4], bf[4][4];
#pragma unroll
            for (int i = 0; i < 4; ++i) load_fragment<AKContig>(at, wm + 16 * i, kk, af[i]);
#pragma unroll
            for (int j = 0; j < 4; ++j) load_fragment<BKContig>(bt, wn + 16 * j, kk, bf[j]);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    // bf[j] holds columns wn + 16 j + 0..7 in registers 0 and 2, + 8..15 in 1 and 3.
                    mma_16816(acc[i][2 * j], af[i], bf[j][0], bf[j][2]);
                    mma_16816(acc[i][2 * j + 1], af[i], bf[j][1], bf[j][3]);
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
                if (row < m && col < n) c[row * n + col] = __float2bfloat16_rn(acc[i][j][q]);
            }
        }
    }
}

// ---- launchers ---------------------------------------------------------------------------------

// c [m, n] row-major, m, n > 0 (binding.cpp returns empty outputs itself); k = 0 writes zeros.
void matmul_tc_naive(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, int64_t m, int64_t k,
                     int64_t n, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned int>((m + kNaiveTile - 1) / kNaiveTile),
                    static_cast<unsigned int>((n + kNaiveTile - 1) / kNaiveTile));
    naive_kernel<<<grid, dim3(kNaiveTile, kNaiveTile), 0, stream>>>(a, b, c, m, k, n);
}

// Whether an operand's rows can be moved 16 bytes at a time: a whole number of chunks a row, and
// the storage 16-byte aligned.
static bool vectorizable(const __nv_bfloat16* x, int64_t ld) { return ld % kChunk == 0 && brrr::aligned16(x); }

// A [m, k] and B [k, n] as MN x K operands: AKContig says A is stored row-major (else as A^T, row-major),
// BKContig that B is stored as B^T row-major (else as B, row-major); lda and ldb are the strides of
// their stored rows.
template <bool AKContig, bool BKContig>
void matmul_tc_mma(const __nv_bfloat16* a, int64_t lda, const __nv_bfloat16* b, int64_t ldb, __nv_bfloat16* c,
                   int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned int>((m + kTileMN - 1) / kTileMN),
                    static_cast<unsigned int>((n + kTileMN - 1) / kTileMN));
    mma_kernel<AKContig, BKContig><<<grid, kThreads, 0, stream>>>(a, lda, vectorizable(a, lda), b, ldb,
                                                                  vectorizable(b, ldb), c, m, k, n);
}

// The three products binding.cpp asks for: a @ b (forward), grad_c @ b^T (grad_a), a^T @ grad_c (grad_b).
#define MATMUL_TC_INSTANTIATE(AK, BK)                                                                      \
    template void matmul_tc_mma<AK, BK>(const __nv_bfloat16*, int64_t, const __nv_bfloat16*, int64_t,     \
                                        __nv_bfloat16*, int64_t, int64_t, int64_t, cudaStream_t);
MATMUL_TC_INSTANTIATE(true, false)
MATMUL_TC_INSTANTIATE(true, true)
MATMUL_TC_INSTANTIATE(false, false)
