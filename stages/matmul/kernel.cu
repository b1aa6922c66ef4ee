// Matrix product, CUDA C stage: c = A @ B, written three times, each version faster than the last.
// Every kernel reads A and B through (row, column) strides, so backward reuses them on b^T and a^T
// without copying (a transposed view is the same memory with its two strides swapped). 64-bit
// indices throughout: row * stride passes 2^31 long before a tensor is too large for the GPU.
//
//   v1 naive_matmul_kernel:   one thread per element of c, both operands read from global memory
//   v2 tiled_matmul_kernel:   16x16 tiles in shared memory, one element per thread; a line-for-line
//                             translation of numba_kernel.py
//   v3 blocked_matmul_kernel: 128x128 tiles, each thread an 8x8 block of c held in registers
//   v4 prefetched_matmul_kernel: v3's tiles and threads, k-steps of 16 through two shared buffers,
//                             the next step's loads in flight (in registers) during this step's FMAs
//
// forward and backward run v4 for float32 products whose output has rows and columns in multiples
// of 128, v2 otherwise (float64 always); binding.cpp registers v1, v2 and v3 as forward_v1/_v2/_v3
// for brrr bench to time beside forward.
//
// Napkin math at 4096^3 float32: 2 * 4096^3 = 1.37e11 flops, 2.05 ms at the H100 SXM's 67 TFLOP/s
// of FP32 FMA (no tensor cores), while the three matrices are 192 MiB, 0.07 ms at 3 TB/s: a
// matmul is bound by how fast operands reach the FMA units, not by DRAM. The question for each
// version is how many FMAs it gets per load instruction:
//   v1: 1 FMA per 2 global loads (L1 and L2 catch the reuse, but every load is an instruction).
//   v2: 1 FMA per 2 shared-memory loads. An SM issues 4 warp FMAs a cycle but serves one warp
//       LDS a cycle: at best 1/8 of the FMA peak, 8.4 TFLOP/s; v2 measures 8.3 (16.6 ms below).
//   v3: 64 FMAs per 4 shared-memory loads (two float4 of A, two of B, per k), 16 per LDS.
// Measured on an H100 (benchmarks/results/2026-11-23-h100-bench2, 4096^3 fp32, TF32 off):
//   cuBLAS (torch.matmul):  2.68 ms forward
//   v1: 42.80 ms forward (6% of cuBLAS)
//   v2: 16.87 ms forward (16% of cuBLAS)
//   v3:  4.05 ms forward (66% of cuBLAS)
//   v4:  3.88 ms forward (69.5% of cuBLAS's 2.70 ms in the same process; 2026-11-25-h100-matmul run3)
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "brrr_kernel.cuh"

constexpr int kTile = 16;             // v1 and v2: 16x16 threads a block, one element of c each
constexpr int64_t kMaxGridY = 65535;  // CUDA's limit on gridDim.y; taller outputs loop over row tiles

// ---- v1: naive --------------------------------------------------------------------------------

// The textbook kernel, the baseline v2 and v3 have to beat. threadIdx.x runs along c's columns,
// so a warp (two rows of 16 threads) reads two elements of A, each a broadcast, and 16 consecutive
// elements of B's row p.
// No barrier, so out-of-range threads may return at once.
template <typename T>
__global__ void naive_matmul_kernel(const T* __restrict__ a, int64_t a_rs, int64_t a_cs,
                                    const T* __restrict__ b, int64_t b_rs, int64_t b_cs,
                                    T* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
    if (col >= n) return;
    for (int64_t tile_row = blockIdx.y; tile_row < (m + kTile - 1) / kTile; tile_row += gridDim.y) {
        const int64_t row = tile_row * kTile + threadIdx.y;
        if (row >= m) return;
        T acc = 0;
        for (int64_t p = 0; p < k; ++p) {
            acc += a[row * a_rs + p * a_cs] * b[p * b_rs + col * b_cs];
        }
        c[row * n + col] = acc;
    }
}

// ---- v2: 16x16 shared-memory tiles --------------------------------------------------------------

template <typename T>
__global__ void tiled_matmul_kernel(const T* __restrict__ a, int64_t a_rs, int64_t a_cs,
                                    const T* __restrict__ b, int64_t b_rs, int64_t b_cs,
                                    T* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    __shared__ T a_tile[kTile][kTile];  // two tiles of 1 KiB (float) or 2 KiB (double)
    __shared__ T b_tile[kTile][kTile];
    const int tx = threadIdx.x;
    const int ty = threadIdx.y;
    const int64_t col = static_cast<int64_t>(blockIdx.x) * kTile + tx;
    // Every thread runs the same trip counts, out-of-range ones too: they load the zeros of
    // boundary tiles and must reach each barrier, so none may return early.
    for (int64_t tile_row = blockIdx.y; tile_row < (m + kTile - 1) / kTile; tile_row += gridDim.y) {
        const int64_t row = tile_row * kTile + ty;
        T acc = 0;
        for (int64_t k0 = 0; k0 < k; k0 += kTile) {
            const int64_t ka = k0 + tx;
            if (row < m && ka < k) {
                a_tile[ty][tx] = a[row * a_rs + ka * a_cs];
            } else {
                a_tile[ty][tx] = T(0);  // past the edge, in both tiles: 0 * a stale NaN is NaN
            }
            const int64_t kb = k0 + ty;
            if (kb < k && col < n) {
                b_tile[ty][tx] = b[kb * b_rs + col * b_cs];
            } else {
                b_tile[ty][tx] = T(0);
            }
            __syncthreads();  // tiles loaded: every thread reads elements others wrote
#pragma unroll
            for (int kk = 0; kk < kTile; ++kk) {
                acc += a_tile[ty][kk] * b_tile[kk][tx];
            }
            __syncthreads();  // tiles used: only now may the next k0 overwrite them
        }
        if (row < m && col < n) {
            c[row * n + col] = acc;
        }
    }
}

// ---- v3: 128x128 tiles, an 8x8 register block per thread (float32) ----------------------------

constexpr int kBlock = 128;      // a block computes a 128x128 tile of c ...
constexpr int kBlockK = 8;       // ... stepping through k 8 at a time
constexpr int kThreads = 256;    // 16 x 16 threads, each owning 8x8 elements of the tile
constexpr int kHalf = kBlock / 2;
constexpr int kAPad = 4;         // see a_tile below

// A thread's 8 rows (and, with tx, its 8 columns) are not contiguous: they are rows ty*4 + 0..3
// and 64 + ty*4 + 0..3 of the tile. Four consecutive threads then read 4 consecutive float4 of
// a shared-memory row, 64 bytes with no two in one bank; eight contiguous columns a thread would
// put tx and tx + 4 on the same banks.
__device__ __forceinline__ int micro(int i, int t) { return (i / 4) * kHalf + t * 4 + i % 4; }

// Each k-tile step, a thread loads 4 elements of A's 128x8 tile and 4 of B's 8x128 tile (plain
// loads through the strides, so the transposed operands of backward work too), then does 8 x 64
// FMAs from registers: per k, its 8 elements of A's column and 8 of B's row are 4 float4 reads.
// Only float32 products with m and n multiples of 128 come here (see matmul_product), so no row
// or column is out of range: the only bounds check is on k.
__global__ void __launch_bounds__(kThreads)
blocked_matmul_kernel(const float* __restrict__ a, int64_t a_rs, int64_t a_cs, const float* __restrict__ b,
                      int64_t b_rs, int64_t b_cs, float* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    // A's tile is stored transposed, [k][row], so 4 rows of one k are one float4. The 4 extra
    // floats a row shift each k's row by 4 banks: the loads' stores (8 k x 4 rows a warp) then
    // hit 32 distinct banks, and 132 floats keep every float4 16-byte aligned.
    __shared__ __align__(16) float a_tile[kBlockK][kBlock + kAPad];
    __shared__ __align__(16) float b_tile[kBlockK][kBlock];
    const int t = threadIdx.x;
    const int ty = t / 16;
    const int tx = t % 16;
    // Loading: thread t fills a_tile[a_k][a_r + 32 i] and b_tile[b_k + 2 i][b_c], i = 0..3. A warp
    // reads 4 rows x 8 k of A (32-byte runs when A is row-major) and 32 consecutive columns of B.
    const int a_k = t % kBlockK;
    const int a_r = t / kBlockK;
    const int b_k = t / kBlock;
    const int b_c = t % kBlock;
    const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kBlock;
    for (int64_t tile_row = blockIdx.y; tile_row < m / kBlock; tile_row += gridDim.y) {
        const int64_t row0 = tile_row * kBlock;
        float acc[8][8] = {};
        for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
            // Rows and columns are whole tiles; only k can run past the edge, where both tiles
            // get zeros: a stale value times a zero would still be wrong if it were NaN.
            const int64_t ka = k0 + a_k;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int r = a_r + 32 * i;
                if (ka < k) a_tile[a_k][r] = a[(row0 + r) * a_rs + ka * a_cs];
                else a_tile[a_k][r] = 0.0f;
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int kk = b_k + 2 * i;
                if (k0 + kk < k) b_tile[kk][b_c] = b[(k0 + kk) * b_rs + (col0 + b_c) * b_cs];
                else b_tile[kk][b_c] = 0.0f;
            }
            __syncthreads();  // tiles loaded: every thread reads elements others wrote
#pragma unroll
            for (int kk = 0; kk < kBlockK; ++kk) {
                const float4 a_lo = *reinterpret_cast<const float4*>(&a_tile[kk][ty * 4]);
                const float4 a_hi = *reinterpret_cast<const float4*>(&a_tile[kk][kHalf + ty * 4]);
                const float4 b_lo = *reinterpret_cast<const float4*>(&b_tile[kk][tx * 4]);
                const float4 b_hi = *reinterpret_cast<const float4*>(&b_tile[kk][kHalf + tx * 4]);
                const float av[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
                const float bv[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
                for (int i = 0; i < 8; ++i) {
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] += av[i] * bv[j];
                }
            }
            __syncthreads();  // tiles used: only now may the next k0 overwrite them
        }
        // Scalar stores: once per element of c, next to k / 8 loads and 8 k FMAs each, they do
        // not matter, and they need no alignment of c.
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int64_t row = row0 + micro(i, ty);
#pragma unroll
            for (int j = 0; j < 8; ++j) c[row * n + col0 + micro(j, tx)] = acc[i][j];
        }
    }
}

// ---- v4: v3's tiles and threads, k-steps of 16 double-buffered through registers -----------------

// Nsight Compute put v3 at 2 blocks of 8 warps an SM, its warps mostly ready but not selected: issue
// slots, not memory, are short. v4 spends fewer of them on anything but FMAs, and waits less:
// - k-steps of 16, not 8: half the barriers, loop and address work per FMA;
// - two shared buffers, and the next step's global loads issued into registers before this step's
//   FMAs (stored to the other buffer after them), so their latency hides behind 16 x 64 FMAs and
//   one barrier a step is enough: it orders this step's stores before the next step's reads, and
//   this step's reads of a buffer before the stores into it a step later.
// The thread owning each element of c (micro) and the k order of its sum are v3's.
constexpr int kStepK = 16;

__global__ void __launch_bounds__(kThreads, 2)
prefetched_matmul_kernel(const float* __restrict__ a, int64_t a_rs, int64_t a_cs, const float* __restrict__ b,
                         int64_t b_rs, int64_t b_cs, float* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    // As v3's: A's tiles transposed, [k][row]; the 4 floats of padding keep float4 rows aligned.
    __shared__ __align__(16) float a_buf[2][kStepK][kBlock + kAPad];
    __shared__ __align__(16) float b_buf[2][kStepK][kBlock];
    const int t = threadIdx.x;
    const int ty = t / 16;
    const int tx = t % 16;
    // Loading: thread t holds A's (a_row + 16 i, a_col) and B's (b_row + 2 i, b_col), i = 0..7, of a
    // step's 128 x 16 and 16 x 128 tiles. 16 consecutive threads read 64 bytes of a row-major A's row.
    const int a_col = t % kStepK;
    const int a_row = t / kStepK;
    const int b_row = t / kBlock;
    const int b_col = t % kBlock;
    const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kBlock;
    for (int64_t tile_row = blockIdx.y; tile_row < m / kBlock; tile_row += gridDim.y) {
        const int64_t row0 = tile_row * kBlock;
        float acc[8][8] = {};
        float a_next[8], b_next[8];
        // Step k0's elements into registers: zeros past k (in both tiles: a stale NaN times 0 is NaN).
        // Each walks from the thread's first element by a fixed stride, rather than recomputing
        // 64-bit indices: the registers are needed for the prefetched elements.
        const float* a_at = a + (row0 + a_row) * a_rs + a_col * a_cs;  // (a_row, a_col) of step 0
        const float* b_at = b + b_row * b_rs + (col0 + b_col) * b_cs;  // (b_row, b_col) of step 0
        auto fetch = [&](int64_t k0) {
            const bool a_in = k0 + a_col < k;
#pragma unroll
            for (int i = 0; i < 8; ++i) a_next[i] = a_in ? a_at[16 * i * a_rs + k0 * a_cs] : 0.0f;
#pragma unroll
            for (int i = 0; i < 8; ++i) b_next[i] = k0 + b_row + 2 * i < k ? b_at[(k0 + 2 * i) * b_rs] : 0.0f;
        };
        auto stash = [&](int buf) {
#pragma unroll
            for (int i = 0; i < 8; ++i) a_buf[buf][a_col][a_row + 16 * i] = a_next[i];
#pragma unroll
            for (int i = 0; i < 8; ++i) b_buf[buf][b_row + 2 * i][b_col] = b_next[i];
        };
        fetch(0);
        stash(0);
        __syncthreads();  // step 0's tiles stored: every thread reads elements others wrote
        int buf = 0;
        for (int64_t k0 = 0; k0 < k; k0 += kStepK) {
            const bool more = k0 + kStepK < k;
            if (more) fetch(k0 + kStepK);  // in flight during the FMAs below
#pragma unroll
            for (int kk = 0; kk < kStepK; ++kk) {
                const float4 a_lo = *reinterpret_cast<const float4*>(&a_buf[buf][kk][ty * 4]);
                const float4 a_hi = *reinterpret_cast<const float4*>(&a_buf[buf][kk][kHalf + ty * 4]);
                const float4 b_lo = *reinterpret_cast<const float4*>(&b_buf[buf][kk][tx * 4]);
                const float4 b_hi = *reinterpret_cast<const float4*>(&b_buf[buf][kk][kHalf + tx * 4]);
                const float av[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
                const float bv[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
                for (int i = 0; i < 8; ++i) {
#pragma unroll
                    for (int j = 0; j < 8; ++j) acc[i][j] += av[i] * bv[j];
                }
            }
            if (more) stash(buf ^ 1);  // the buffer every thread finished reading before the last barrier
            buf ^= 1;
            __syncthreads();  // stores seen before the next step's reads; this step's reads done before its stores
        }
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int64_t row = row0 + micro(i, ty);
#pragma unroll
            for (int j = 0; j < 8; ++j) c[row * n + col0 + micro(j, tx)] = acc[i][j];
        }
    }
}

// ---- launchers ---------------------------------------------------------------------------------

// All take A [m, k] and B [k, n] as flat storage with (row, column) strides, and write c [m, n]
// row-major. m, n > 0 (binding.cpp returns empty outputs itself); k = 0 still writes zeros.

static dim3 grid_for(int64_t m, int64_t n, int tile) {
    return dim3(static_cast<unsigned int>((n + tile - 1) / tile),
                static_cast<unsigned int>(std::min((m + tile - 1) / tile, kMaxGridY)));
}

template <typename T>
void matmul_naive(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c, int64_t m,
                  int64_t k, int64_t n, cudaStream_t stream) {
    naive_matmul_kernel<T><<<grid_for(m, n, kTile), dim3(kTile, kTile), 0, stream>>>(a, a_rs, a_cs, b, b_rs, b_cs,
                                                                                    c, m, k, n);
}

template <typename T>
void matmul_tiled(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c, int64_t m,
                  int64_t k, int64_t n, cudaStream_t stream) {
    tiled_matmul_kernel<T><<<grid_for(m, n, kTile), dim3(kTile, kTile), 0, stream>>>(a, a_rs, a_cs, b, b_rs, b_cs,
                                                                                    c, m, k, n);
}

// v3 where it applies (as matmul_product picks v4), v2 otherwise: forward_v3 for brrr bench.
template <typename T>
void matmul_blocked(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c,
                    int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    if constexpr (std::is_same_v<T, float>) {
        if (m % kBlock == 0 && n % kBlock == 0) {
            blocked_matmul_kernel<<<grid_for(m, n, kBlock), kThreads, 0, stream>>>(a, a_rs, a_cs, b, b_rs, b_cs, c,
                                                                                   m, k, n);
            return;
        }
    }
    matmul_tiled(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n, stream);
}

// What forward and backward use: v4 where it applies (float32, c's rows and columns multiples of
// 128), v2 otherwise. The choice depends only on the dtype and c's shape, which is what spec.py's
// cuda layout needs to name the right thread (v4's threads own v3's elements).
template <typename T>
void matmul_product(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c,
                    int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    if constexpr (std::is_same_v<T, float>) {
        if (m % kBlock == 0 && n % kBlock == 0) {
            prefetched_matmul_kernel<<<grid_for(m, n, kBlock), kThreads, 0, stream>>>(a, a_rs, a_cs, b, b_rs, b_cs,
                                                                                      c, m, k, n);
            return;
        }
    }
    matmul_tiled(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n, stream);
}

// The dtypes binding.cpp dispatches to.
#define MATMUL_INSTANTIATE(launcher, T)                                                                     \
    template void launcher(const T*, int64_t, int64_t, const T*, int64_t, int64_t, T*, int64_t, int64_t, \
                           int64_t, cudaStream_t);
MATMUL_INSTANTIATE(matmul_naive, float)
MATMUL_INSTANTIATE(matmul_naive, double)
MATMUL_INSTANTIATE(matmul_tiled, float)
MATMUL_INSTANTIATE(matmul_tiled, double)
MATMUL_INSTANTIATE(matmul_blocked, float)
MATMUL_INSTANTIATE(matmul_blocked, double)
MATMUL_INSTANTIATE(matmul_product, float)
MATMUL_INSTANTIATE(matmul_product, double)
