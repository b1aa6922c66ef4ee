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
//   v5 vectorised_matmul_kernel: v4's steps, each operand loaded 16 bytes at a time along whichever
//                             of its strides is 1, and each warp over a 32x64 tile of c
//
// forward and backward run v5 for float32 products (any shape; 16-byte loads where the output's
// rows and columns are multiples of 128) and for float16 and bfloat16 (element loads, each widened to
// float: products and sums in float32, c rounded once; for tensor-core speed see stages/matmul_tc),
// v2 for float64; binding.cpp registers v1 to v4 as forward_v1 .. _v4 for
// brrr bench to time beside forward (and validate checks them).
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
// On an H200 (benchmarks/matmul_variants/bench.cu, 2026-11-29-h200-matmul-v5), % of cuBLAS's SGEMM:
//   v4: forward 69.7%, grad_a 54.3%, grad_b 66.5%
//   v5: forward 85.7%, grad_a 89.6%, grad_b 80.1% (3.15 ms forward, 43.6 TFLOP/s)
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
        brrr::acc_t<T> acc = 0;  // float for the 16-bit types: a 16-bit running sum loses K's terms
        for (int64_t p = 0; p < k; ++p) {
            acc += brrr::to_acc(a[row * a_rs + p * a_cs]) * brrr::to_acc(b[p * b_rs + col * b_cs]);
        }
        c[row * n + col] = brrr::from_acc<T>(acc);
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
        brrr::acc_t<T> acc = 0;
        for (int64_t k0 = 0; k0 < k; k0 += kTile) {
            const int64_t ka = k0 + tx;
            if (row < m && ka < k) {
                a_tile[ty][tx] = a[row * a_rs + ka * a_cs];
            } else {
                a_tile[ty][tx] = brrr::from_acc<T>(0);  // past the edge, in both tiles: 0 * a stale NaN is NaN
            }
            const int64_t kb = k0 + ty;
            if (kb < k && col < n) {
                b_tile[ty][tx] = b[kb * b_rs + col * b_cs];
            } else {
                b_tile[ty][tx] = brrr::from_acc<T>(0);
            }
            __syncthreads();  // tiles loaded: every thread reads elements others wrote
#pragma unroll
            for (int kk = 0; kk < kTile; ++kk) {
                acc += brrr::to_acc(a_tile[ty][kk]) * brrr::to_acc(b_tile[kk][tx]);
            }
            __syncthreads();  // tiles used: only now may the next k0 overwrite them
        }
        if (row < m && col < n) {
            c[row * n + col] = brrr::from_acc<T>(acc);
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

// One k of a thread's 8x8 outer product: its 8 elements of A's k-th row of the transposed tile (4 at
// `a`, 4 at a + kRowHalf) times its 8 of B's k-th row (4 at `b`, 4 at b + kColHalf), two float4
// loads each.
template <int kRowHalf, int kColHalf>
__device__ __forceinline__ void outer_product(float (&acc)[8][8], const float* a, const float* b) {
    const float4 a_lo = *reinterpret_cast<const float4*>(a);
    const float4 a_hi = *reinterpret_cast<const float4*>(a + kRowHalf);
    const float4 b_lo = *reinterpret_cast<const float4*>(b);
    const float4 b_hi = *reinterpret_cast<const float4*>(b + kColHalf);
    const float av[8] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
    const float bv[8] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += av[i] * bv[j];
    }
}

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
            for (int kk = 0; kk < kBlockK; ++kk) outer_product<kHalf, kHalf>(acc, &a_tile[kk][ty * 4], &b_tile[kk][tx * 4]);
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

// v4's and v5's walk through k: step 0's tiles fetched into registers and stashed in buffer 0, then
// each step fetches the next step's elements (in flight during this step's FMAs), multiplies from
// its buffer and stashes the next step in the other one. One barrier a step is enough: it orders
// this step's stores before the next step's reads, and this step's reads of a buffer before the
// stores into it a step later.
template <typename Fetch, typename Stash, typename Multiply>
__device__ __forceinline__ void double_buffered_steps(int64_t k, Fetch fetch, Stash stash, Multiply multiply) {
    fetch(0);
    stash(0);
    __syncthreads();  // step 0's tiles stored: every thread reads elements others wrote
    int buf = 0;
    for (int64_t k0 = 0; k0 < k; k0 += kStepK) {
        const bool more = k0 + kStepK < k;
        if (more) fetch(k0 + kStepK);  // in flight during the FMAs below
        multiply(buf);
        if (more) stash(buf ^ 1);  // the buffer every thread finished reading before the last barrier
        buf ^= 1;
        __syncthreads();  // stores seen before the next step's reads; this step's reads done before its stores
    }
}

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
        double_buffered_steps(k, fetch, stash, [&](int buf) {
#pragma unroll
            for (int kk = 0; kk < kStepK; ++kk) {
                outer_product<kHalf, kHalf>(acc, &a_buf[buf][kk][ty * 4], &b_buf[buf][kk][tx * 4]);
            }
        });
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int64_t row = row0 + micro(i, ty);
#pragma unroll
            for (int j = 0; j < 8; ++j) c[row * n + col0 + micro(j, tx)] = acc[i][j];
        }
    }
}

// ---- v5: v4's steps, 16-byte loads along each operand's unit stride, warps over 32x64 tiles ------

// v4 issues an instruction every 4.85 cycles a warp at 4 warps a scheduler, with not_selected first
// (Nsight Compute, 2026-11-28-h200-16bit/ncu.txt): issue slots are short, so v5 spends fewer of them
// outside the FMAs. Two changes, measured alone and together on an H200
// (benchmarks/matmul_variants/bench.cu; forward, % of cuBLAS: v4 69.7%, warp tiles alone 67.6%,
// 16-byte loads alone 82.4%, both 84.5-85.7%):
// - 16-byte loads. A step's 128 x 16 tile of A is 512 float4: two a thread instead of v4's 8 scalar
//   loads, and B's likewise, along whichever stride of the operand is 1: A along k (row-major: forward,
//   grad_a) or along m (a^T: grad_b), B along n (row-major) or along k (b^T: grad_a). Along k a float4
//   holds 4 k of one row of A (column of B), stored into the transposed tile one element at a time;
//   along m or n it holds 4 rows (columns) of one k and is stored whole. Both tiles are padded by 4
//   floats a k, so those element stores meet at most two to a bank. Where a float4 cannot be read (m
//   or n not a multiple of 128, k not of 16, a stride of 1 missing, a pointer not 16-byte aligned) the
//   same elements are read one at a time, zeros past k, m and n, and c is stored only inside m and n
//   (kVec false): the thread layout is the same either way, for every float32 shape.
// - warp tiles. v4's 16 x 16 threads make a warp 2 x 16 threads, which reads B's whole 128-column row
//   each k (two wavefronts a float4 load, 6 a k). Here the block's 8 warps are 4 x 2, each over 32 rows
//   and 64 columns of c with its lanes 4 x 8, and thread t owns rows row_base + 0..3 and row_base + 16
//   + 0..3, columns col_base + 0..3 and col_base + 32 + 0..3 (v3's split layout at this scale): each
//   float4 load of A or B a warp makes is one wavefront, 4 a k.
// The sum over k is v4's, in v4's order: v5 and v4 agree bit for bit.
constexpr int kV5RowHalf = 16, kV5ColHalf = 32;

__device__ __forceinline__ int v5_row_base(int t) { return (t / 64) * 32 + (t % 32 / 8) * 4; }
__device__ __forceinline__ int v5_col_base(int t) { return (t / 32 % 2) * 64 + (t % 8) * 4; }

// kAk: A is read along k (a_cs == 1), else along m (a_rs == 1); kBk: B along k (b_rs == 1), else along n.
template <typename T, bool kAk, bool kBk, bool kVec>
__global__ void __launch_bounds__(kThreads, 2)
vectorised_matmul_kernel(const T* __restrict__ a, int64_t a_rs, int64_t a_cs, const T* __restrict__ b,
                         int64_t b_rs, int64_t b_cs, T* __restrict__ c, int64_t m, int64_t k, int64_t n) {
    static_assert(!kVec || std::is_same_v<T, float>, "16-byte loads hold 4 floats: 16-bit operands take element loads");
    __shared__ __align__(16) float a_buf[2][kStepK][kBlock + kAPad];
    __shared__ __align__(16) float b_buf[2][kStepK][kBlock + kAPad];
    const int t = threadIdx.x;
    const int row_base = v5_row_base(t), col_base = v5_col_base(t);
    // This thread's two float4 of a step (q = 0, 1), element e = 0..3 of each. Along k: row (column)
    // a_r + 64 q, k a_k + e. Along m (n): rows a_r + e, k a_k + 8 q.
    const int a_r = kAk ? t / 4 : (t % 32) * 4, a_k = kAk ? (t % 4) * 4 : t / 32;
    const int b_c = kBk ? t / 4 : (t % 32) * 4, b_k = kBk ? (t % 4) * 4 : t / 32;
    const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kBlock;
    // Element loads take any shape: tiles past m or n hold zeros there and store nothing there.
    const int64_t tile_rows = kVec ? m / kBlock : (m + kBlock - 1) / kBlock;
    for (int64_t tile_row = blockIdx.y; tile_row < tile_rows; tile_row += gridDim.y) {
        const int64_t row0 = tile_row * kBlock;
        float acc[8][8] = {};
        float4 a_next[2], b_next[2];
        const T* a_at = a + (row0 + a_r) * a_rs + a_k * a_cs;  // element (a_r, a_k) of step 0
        const T* b_at = b + b_k * b_rs + (col0 + b_c) * b_cs;  // element (b_k, b_c) of step 0
        // Offsets from a_at (b_at) of element e of float4 q, at k0 = 0, and its k within the step.
        const auto a_off = [&](int q, int e) { return kAk ? 64 * q * a_rs + e * a_cs : e * a_rs + 8 * q * a_cs; };
        const auto a_kk = [&](int q, int e) { return kAk ? a_k + e : a_k + 8 * q; };
        const auto b_off = [&](int q, int e) { return kBk ? 64 * q * b_cs + e * b_rs : e * b_cs + 8 * q * b_rs; };
        const auto b_kk = [&](int q, int e) { return kBk ? b_k + e : b_k + 8 * q; };
        const auto a_row = [&](int q, int e) { return kAk ? a_r + 64 * q : a_r + e; };
        const auto b_col = [&](int q, int e) { return kBk ? b_c + 64 * q : b_c + e; };
        auto fetch = [&](int64_t k0) {
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                if constexpr (kVec) {  // k is a multiple of kStepK here: no step runs past it
                    a_next[q] = *reinterpret_cast<const float4*>(a_at + a_off(q, 0) + k0 * a_cs);
                    b_next[q] = *reinterpret_cast<const float4*>(b_at + b_off(q, 0) + k0 * b_rs);
                } else {  // zeros past k, m and n (in both tiles: a stale NaN times 0 is NaN)
                    float* av = reinterpret_cast<float*>(&a_next[q]);
                    float* bv = reinterpret_cast<float*>(&b_next[q]);
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const bool a_in = k0 + a_kk(q, e) < k && row0 + a_row(q, e) < m;
                        const bool b_in = k0 + b_kk(q, e) < k && col0 + b_col(q, e) < n;
                        av[e] = a_in ? brrr::to_acc(a_at[a_off(q, e) + k0 * a_cs]) : 0.0f;
                        bv[e] = b_in ? brrr::to_acc(b_at[b_off(q, e) + k0 * b_rs]) : 0.0f;
                    }
                }
            }
        };
        auto stash = [&](int buf) {
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const float* av = reinterpret_cast<const float*>(&a_next[q]);
                const float* bv = reinterpret_cast<const float*>(&b_next[q]);
                if constexpr (kAk) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) a_buf[buf][a_k + e][a_r + 64 * q] = av[e];
                } else {
                    *reinterpret_cast<float4*>(&a_buf[buf][a_k + 8 * q][a_r]) = a_next[q];
                }
                if constexpr (kBk) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) b_buf[buf][b_k + e][b_c + 64 * q] = bv[e];
                } else {
                    *reinterpret_cast<float4*>(&b_buf[buf][b_k + 8 * q][b_c]) = b_next[q];
                }
            }
        };
        double_buffered_steps(k, fetch, stash, [&](int buf) {
#pragma unroll
            for (int kk = 0; kk < kStepK; ++kk) {
                outer_product<kV5RowHalf, kV5ColHalf>(acc, &a_buf[buf][kk][row_base], &b_buf[buf][kk][col_base]);
            }
        });
        // Scalar stores (float4 ones measured 2% slower: 2026-11-29-h200-matmul-v5).
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int64_t row = row0 + row_base + (i / 4) * kV5RowHalf + i % 4;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int64_t col = col0 + col_base + (j / 4) * kV5ColHalf + j % 4;
                if (kVec || (row < m && col < n)) c[row * n + col] = brrr::from_acc<T>(acc[i][j]);
            }
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

// v4 where it applies (as v3), v2 otherwise: forward_v4 for brrr bench.
template <typename T>
void matmul_prefetched(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c,
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

// v5's instance for the operands' strides: float4 loads for the three pairs binding.cpp passes
// (forward: A along k, B along n; grad_a: A along k, B along k; grad_b: A along m, B along n) when m
// and n are multiples of 128, k of 16 and the pointers 16-byte aligned, element loads otherwise.
template <typename T, bool kAk, bool kBk, bool kVec>
static void launch_v5(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c,
                      int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    vectorised_matmul_kernel<T, kAk, kBk, kVec><<<grid_for(m, n, kBlock), kThreads, 0, stream>>>(a, a_rs, a_cs, b,
                                                                                                b_rs, b_cs, c, m, k, n);
}

static void matmul_vectorised(const float* a, int64_t a_rs, int64_t a_cs, const float* b, int64_t b_rs,
                              int64_t b_cs, float* c, int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    const bool whole = m % kBlock == 0 && n % kBlock == 0 && k > 0 && k % kStepK == 0 && brrr::aligned16(a) &&
                       brrr::aligned16(b);
    const bool a_k = whole && a_cs == 1 && a_rs % 4 == 0, a_m = whole && a_rs == 1 && a_cs % 4 == 0;
    const bool b_n = whole && b_cs == 1 && b_rs % 4 == 0, b_k = whole && b_rs == 1 && b_cs % 4 == 0;
    if (a_k && b_n) launch_v5<float, true, false, true>(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n, stream);
    else if (a_k && b_k) launch_v5<float, true, true, true>(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n, stream);
    else if (a_m && b_n) launch_v5<float, false, false, true>(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n, stream);
    else launch_v5<float, true, false, false>(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n, stream);
}

// What forward and backward use: v5 for float32 (every shape), v5's element loads for float16 and
// bfloat16 (each element widened to float as it is fetched, so tiles, products and sums are float32's
// and c is rounded once), v2 for float64. The thread layout depends only on the dtype (v5's instances
// share one), which is what spec.py's cuda layout needs to name the right thread.
template <typename T>
void matmul_product(const T* a, int64_t a_rs, int64_t a_cs, const T* b, int64_t b_rs, int64_t b_cs, T* c,
                    int64_t m, int64_t k, int64_t n, cudaStream_t stream) {
    if constexpr (std::is_same_v<T, float>) {
        matmul_vectorised(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n, stream);
    } else if constexpr (!std::is_same_v<T, double>) {
        launch_v5<T, true, false, false>(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n, stream);
    } else {
        matmul_tiled(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n, stream);
    }
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
MATMUL_INSTANTIATE(matmul_prefetched, float)
MATMUL_INSTANTIATE(matmul_prefetched, double)
MATMUL_INSTANTIATE(matmul_product, float)
MATMUL_INSTANTIATE(matmul_product, double)
// float16 and bfloat16: every launcher, v1 and v2 (and v3, v4's fallback) with float sums.
MATMUL_INSTANTIATE(matmul_naive, __half)
MATMUL_INSTANTIATE(matmul_naive, __nv_bfloat16)
MATMUL_INSTANTIATE(matmul_tiled, __half)
MATMUL_INSTANTIATE(matmul_tiled, __nv_bfloat16)
MATMUL_INSTANTIATE(matmul_blocked, __half)
MATMUL_INSTANTIATE(matmul_blocked, __nv_bfloat16)
MATMUL_INSTANTIATE(matmul_prefetched, __half)
MATMUL_INSTANTIATE(matmul_prefetched, __nv_bfloat16)
MATMUL_INSTANTIATE(matmul_product, __half)
MATMUL_INSTANTIATE(matmul_product, __nv_bfloat16)
