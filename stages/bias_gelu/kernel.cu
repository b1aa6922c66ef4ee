// Bias + GELU (tanh form), CUDA C stage. The math is numba_kernel.py's (the forward in an
// equivalent one-exp form, see gelu below); the thread layout is not: numba gives each element
// its own thread, here the backward's threads (and the forward's, where rows are not whole 16-byte
// packs or a tensor is unaligned) own a tile of kPack columns by rows_per_thread consecutive rows;
// the forward of aligned rows of whole packs gives each 16-byte pack its own thread (v7 below).
// spec.py's cuda_layout names the thread for any element. The tile buys three things:
//   - bias is read once per thread and kept in registers for all of its rows;
//   - where rows are whole vectors and the pointers 16-byte aligned, every access is a vector
//     (16 bytes of float), with scalar accesses for the threads at a row's ragged end and for
//     unaligned tensors;
//   - the backward kernel sums grad_x over its rows as it goes, so the bias gradient needs
//     no second pass over grad_x: a block adds up its threads' sums in a fixed order and
//     writes one partial sum per column, and a small kernel adds those partials, again in a
//     fixed order. No atomics: the result is the same bit for bit on every run.
// A thread's kPack = 8 columns are two vectors of kVec = 4, kStride = 128 columns apart: lane
// i of a warp owns columns 4i..4i+3 and 128+4i..128+4i+3 of the warp's 256. Each vector
// instruction of a warp then covers one contiguous run (512 bytes of float). v1 gave a thread
// 8 consecutive columns, so each of its two float4 instructions touched every other 16 bytes
// of 1 KiB: all 32 sectors half used, twice, and for stores two half-filled writes of each
// sector to L2 instead of one full one.
// Half and bfloat16 compute in float (brrr::acc_t); every sum is accumulated in double.
//
// Napkin math: the forward reads x and writes y, 8 bytes per float32 element (bias, one row,
// is 1/rows of that), so 8192 x 8192 moves 512 MiB: 0.181 ms at the 2.96 TB/s an H100 copies,
// 0.201 ms at 90%. In float the vector loop is 14 SASS instructions an element (cuobjdump:
// 4 for u and w, 8 for expf, the reciprocal, the product), 2^26 x 14 lane-instructions over
// 132 SMs x 128 lanes x ~1.7 GHz: ~0.03 ms of issue, well under the memory time, if enough
// loads are in flight to hide their latency. v1 had 2 float4 loads in flight a thread and
// then ~33 instructions an element, each element's IEEE division a branch region of its own
// (slow-path call), so a thread's 8 elements ran one after another. This version issues the
// loads of 4 rows (8 vectors, 128 bytes of float) before any math, and its math is straight-
// line code the scheduler can interleave.
// Measured on an H100, 8192 x 8192 forward (benchmarks/results/2026-11-23-h100-bench2; eager x + bias then GELU:
// 0.403 ms float32, torch.compile of it 0.191 ms):
//   v1, 8 consecutive columns a thread, one row at a time, IEEE division (forward_v1):
//       0.1887 ms float32 (95.0% of copy), 0.1174 ms bfloat16 (76.5%)
//   v2, this file: 0.1873 ms float32 (95.7%), 0.1205 ms bfloat16 (74.5%); fwd+bwd float32 85.3%
// The two are within noise of each other in float32; in 16-bit both trail torch.compile (87.5%).
//   v3, this file now: the 16-bit types move 16-byte vectors of 8 columns (v2's 4-column vectors were
//       8-byte accesses for them, twice the load and store instructions a byte); the forward keeps its
//       4 rows of loads as loaded and widens a row at a time (widened on load, 4 rows of 8 columns
//       took 141 registers, one block an SM). float and double are unchanged.
//       Measured (benchmarks/results/2026-11-24-h100-perf/run3): bfloat16 forward 0.0935 ms (95.3% of copy;
//       torch.compile 0.0972), float32 0.1812 ms (98.3%); with the parallel bias_grad_kernel below,
//       forward+backward 0.4765 ms float32 (93.5%), 0.3169 ms bfloat16 (70.3%; ncu in run2: the backward
//       kernel at 57% of DRAM peak, 102 registers, 2 blocks of 256 threads an SM).
//   backward v4 and v5 (below; the launcher runs v5): the same tiles, sums and order; v4 loads the next
//       row while computing this one, keeps bias and the rows as loaded and sums a thread's rows in acc_t
//       before adding them to double slots in shared memory; v5 stages the thread's 4 rows of grad_y and
//       x in shared memory by cp.async before any math. Backward alone on an H100, 8192 x 8192
//       (benchmarks/rowwise_variants, median of 30, L2 flushed, beside a 3007 GB/s copy; benchmarks/
//       results/2026-11-25-h100-rowwise/run2/variants.txt): bfloat16 v3 233.0 us (57.5% of copy), v4
//       195.4 us (68.5%), v5 160.7 us (83.3%); float32 v3 301.3 us (88.9%), v4 292.3 (91.6%), v5 288.4
//       (92.9%). v4 capped at 3 or 4 blocks an SM spilled (80 or 64 registers) and ran 4-5x slower.
//   v6, this file now: the 16-bit types' exp by brrr::exp_for (ex2.approx, 2 instructions instead of
//       expf's 8), forward and backward; float and double unchanged. On an H200 (4.27 TB/s, the same
//       132 SMs as the H100) v5's bfloat16 forward fell to 83.8% of copy (75.1 us; torch.compile 89.6
//       us) and forward+backward to 73.8% (benchmarks/results/2026-11-28-h200-perf): 16 elements a
//       thread's 32 bytes, so 1.45x the H100's bandwidth asks 1.45x its instructions a second.
//   v7, this file now: the forward of rows that are whole 16-byte packs, all tensors 16-byte aligned,
//       is flat (bias_gelu_forward_flat_kernel): one pack a thread, blocks of kFlatThreads laid over the
//       whole tensor, each pack's bias pack read beside it (an L1 or L2 hit). The tile above was for the
//       bias held over 4 rows; it costs more than it saves on an H200, where a copy kernel of this
//       shape moves 100% of cudaMemcpy's bytes and a grid-stride float4 copy 92%
//       (benchmarks/rowwise_variants/softmax_bench.cu). Same math, same bits. Measured on an H200 in one
//       process (benchmarks/rowwise_variants/bias_gelu_bench.cu, benchmarks/results/2026-11-29-h200-variants):
//       bfloat16 forward 74.0 -> 70.1 us (85.7% -> 90.5% of copy), float32 130.4 -> 128.8 us (97.4 -> 98.6%);
//       2 and 4 packs a thread were slower (80.9%, 66.8% in bfloat16). The backward keeps the tile: its
//       bias gradient is summed over a thread's rows.
//   v8, this file now: the backward's threads take up to kMaxBackwardRows rows (backward_rows_per_thread):
//       each block row of the grid writes a partial column sum of cols doubles that bias_grad_kernel
//       reads again, 16 MiB each way at 8192 x 8192 with 4 rows a thread, 8% of the bfloat16 backward's
//       traffic. On an H200 (2026-11-29-h200-variants, call5), v5's kernel at 8192 x 8192: 4 rows a
//       thread 133.3 us bfloat16 (71.0% of copy), 8 rows 119.2 (79.4%), 16 rows 117.2 (80.8%), 32 rows
//       115.5 (82.0%); float32 205.5, 203.9, 203.5, 206.4 us (92.1, 92.8, 93.0, 91.7%). 16, while
//       kMinBackwardBlockRows block rows remain, so that shorter matrices keep their blocks.
#include "brrr_kernel.cuh"

constexpr double kBeta = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;

// Columns a vector moves: 16 bytes, 4 floats or 8 halves / bfloat16 (v2 moved 4 of any type, so
// the 16-bit types took 8-byte accesses); double keeps 4, in two 16-byte accesses.
template <typename T> constexpr int kVec = sizeof(T) == 2 ? 8 : 4;
constexpr int kPacks = 2;               // vectors a thread owns in a row
template <typename T> constexpr int kPack = kVec<T> * kPacks;  // columns a thread owns
constexpr int kBlockX = 32;             // threads a block row: one warp spans kBlockX * kPack columns
template <typename T> constexpr int kStride = kBlockX * kVec<T>;  // columns from a thread's first vector to its second
constexpr int kBlockY = 8;              // row groups a block
constexpr int64_t kRowsPerThread = 4;
// Rows whose loads the forward's scalar path issues together: 4 for float; 2 for the 16-bit types,
// whose vectors hold twice the columns (4 rows widened on load took 141 registers).
template <typename T> constexpr int kRowsInFlight = sizeof(T) == 2 ? 2 : 4;
constexpr int64_t kMaxGridY = 65535;
constexpr int kFinalizeColumns = 32;  // bias_grad_kernel: a warp reads 32 neighbouring columns of a part
constexpr int kFinalizeGroups = 8;    // ... and 8 warps split the parts

template <typename T>
using A = brrr::acc_t<T>;

// 1 / d for d >= 1 (or inf). In float, one MUFU.RCP: PTX's rcp.approx.f32 is within 1 ulp
// over the whole range (6e-8 relative, far inside float32's 1e-5) and gives 1/inf = +0; .ftz
// only flushes results below 2^-126, i.e. d > 2^126, where the exact value is as good as 0.
// The IEEE division it replaces costs a reciprocal plus four FMAs and a slow-path check, and
// __fdividef adds a scaling test for tiny divisors that d >= 1 never needs. double has no
// fast reciprocal, and its tolerance (1e-10) needs the IEEE division anyway.
__device__ __forceinline__ float recip(float d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    return r;
}
__device__ __forceinline__ double recip(double d) { return 1.0 / d; }

// gelu(u) = u sigmoid(2z) = u / (1 + exp(-2z)), z = kBeta (u + kKappa u^3), so
// -2z = w = u (-2 kBeta - 2 kBeta kKappa u^2). One exp and one reciprocal, and nothing can go
// wrong at either end: for z >= 0, exp(w) is in (0, 1] and 1 + exp(w) in (1, 2]; for z < 0 it
// grows and overflows to inf, where y = u * (1/inf) = -0, the limit (the edge inputs reach
// u = -2e4). No difference of two numbers near 1 is ever formed.
// Error of y in float: expf 2 ulp, the add 0.5, recip 1, the product 0.5: ~4 ulp, 5e-7
// relative, plus what the rounding of w costs every form of this formula: w is off by ~2 ulp,
// which exp turns into |w| x 2.4e-7 relative. That is at most 4e-6 where |y| is above
// float32's atol (there |w| < ~17), inside the 1e-5 rtol; further out y is below atol.
// In float32, exp is the accurate expf, not __expf: __expf's own error is 2 + 1.17|w| ulp, another
// ~2.5e-6 at |w| = 17, which would leave little of the 1e-5; and expf's 6 extra instructions
// an element are free there (napkin math above). T is the stored type: the 16-bit types, which keep
// 8 or 11 bits of the result, take brrr::exp_for's 2-instruction exp (v6 below).
template <typename T>
__device__ __forceinline__ A<T> gelu(A<T> u) {
    const A<T> w = u * (A<T>(-2 * kBeta) + A<T>(-2 * kBeta * kKappa) * u * u);
    return u * recip(A<T>(1) + brrr::exp_for<T>(w));
}

// sigmoid(2z) and sigmoid(-2z), z = kBeta (u + kKappa u^3): (1 + tanh z)/2 and its complement,
// from one exp of a non-positive number, which cannot overflow, and one reciprocal of a
// number in (1, 2] (recip above; small = e * big is then within 1.5 ulp): both factors of the
// backward's 1 - tanh^2 = 4 sigmoid(2z) sigmoid(-2z) come out directly, never as a
// difference of two numbers near 1.
template <typename T>
__device__ __forceinline__ void sigmoids(A<T> u, A<T>& s, A<T>& s_neg) {
    const A<T> z = A<T>(kBeta) * (u + A<T>(kKappa) * u * u * u);
    const A<T> e = brrr::exp_for<T>(A<T>(-2) * fabs(z));
    const A<T> big = recip(A<T>(1) + e);
    const A<T> small = e * big;
    s = z >= A<T>(0) ? big : small;
    s_neg = z >= A<T>(0) ? small : big;
}

// kVec elements at p, in accesses of 16 bytes at most (two for double, one of 8 bytes for the
// 16-bit types), so the vector path needs p aligned to 16 bytes or to the vector, whichever is
// smaller: the launchers check the base pointers and that a row is a whole number of vectors.
template <typename T>
constexpr int kAccess = 16 / static_cast<int>(sizeof(T)) < kVec<T> ? 16 / static_cast<int>(sizeof(T)) : kVec<T>;

// The first `width` (at most kVec) elements at p, widened to A<T>, zeros past them; vector
// accesses when `vector`. The unrolled loops with constant indices keep the arrays in registers.
template <typename T>
__device__ __forceinline__ void load_vec(const T* __restrict__ p, bool vector, int width, A<T> (&out)[kVec<T>]) {
    if (vector) {
        using V = brrr::Pack<T, kAccess<T>>;
#pragma unroll
        for (int a = 0; a < kVec<T> / kAccess<T>; ++a) {
            const V v = reinterpret_cast<const V*>(p)[a];
#pragma unroll
            for (int e = 0; e < kAccess<T>; ++e) out[a * kAccess<T> + e] = brrr::to_acc(v.v[e]);
        }
    } else {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) out[k] = k < width ? brrr::to_acc(p[k]) : A<T>(0);
    }
}

template <typename T>
__device__ __forceinline__ void store_vec(T* __restrict__ p, bool vector, int width, const A<T> (&in)[kVec<T>]) {
    if (vector) {
        using V = brrr::Pack<T, kAccess<T>>;
#pragma unroll
        for (int a = 0; a < kVec<T> / kAccess<T>; ++a) {
            V v;
#pragma unroll
            for (int e = 0; e < kAccess<T>; ++e) v.v[e] = brrr::from_acc<T>(in[a * kAccess<T> + e]);
            reinterpret_cast<V*>(p)[a] = v;
        }
    } else {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) {
            if (k < width) p[k] = brrr::from_acc<T>(in[k]);
        }
    }
}

// Where a thread's tile starts: its vector j covers columns col0 + j * kStride onwards, width[j]
// of them (0 to kVec) inside the row. width[0] == 0 means the thread has no columns, and then
// neither has its second vector, which starts kStride further right.
struct Tile {
    int64_t col0, row0, row1;
    int width[kPacks];
};

template <typename T>
__device__ __forceinline__ Tile tile_of(int64_t rows, int64_t cols, int64_t rows_per_thread) {
    Tile t;
    t.col0 = static_cast<int64_t>(blockIdx.x) * (kBlockX * kPack<T>) + static_cast<int64_t>(threadIdx.x) * kVec<T>;
    t.row0 = (static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y) * rows_per_thread;
    t.row1 = t.row0 + rows_per_thread < rows ? t.row0 + rows_per_thread : rows;
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
        const int64_t c = t.col0 + j * kStride<T>;
        t.width[j] = c < cols ? static_cast<int>(cols - c < kVec<T> ? cols - c : kVec<T>) : 0;
    }
    return t;
}

// A thread takes the vector path for all of its accesses or for none: it is decided once per
// thread (both of its vectors full, every pointer aligned) and compiled as a template constant
// into each kernel's row loop, so the hot loops have no per-access branch.
template <typename T>
__device__ __forceinline__ bool vector_path(const Tile& t, bool aligned) {
    return aligned && t.width[kPacks - 1] == kVec<T>;
}

template <typename T>
__device__ __forceinline__ void load_row(const T* __restrict__ row, const Tile& t, bool vector,
                                         A<T> (&out)[kPacks][kVec<T>]) {
#pragma unroll
    for (int j = 0; j < kPacks; ++j) load_vec(row + t.col0 + j * kStride<T>, vector, t.width[j], out[j]);
}

template <typename T>
__device__ __forceinline__ void store_row(T* __restrict__ row, const Tile& t, bool vector,
                                          const A<T> (&in)[kPacks][kVec<T>]) {
#pragma unroll
    for (int j = 0; j < kPacks; ++j) store_vec(row + t.col0 + j * kStride<T>, vector, t.width[j], in[j]);
}

// The loads of kRowsPerThread rows go out before any math: a thread has 8 vectors (128 bytes
// of float) in flight instead of 2, so fewer warps keep the memory system busy while others
// compute. Rows past row1 (the last rows of the matrix, or of a rows_per_thread that is not a
// multiple of kRowsPerThread) are skipped; their registers are never read.
template <bool kVector, typename T>
__device__ __forceinline__ void forward_tile(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y,
                                             int64_t cols, const Tile& t) {
    A<T> b[kPacks][kVec<T>];
    load_row(bias, t, kVector, b);
    if constexpr (kVector) {
        // kRowsPerThread rows of loads in flight, kept as loaded (a 16-bit vector is 4 registers,
        // 8 once widened) and widened a row at a time: 128 bytes in flight a thread in every dtype.
        using V = brrr::Pack<T, kAccess<T>>;
        constexpr int kV = kVec<T> / kAccess<T>;
        for (int64_t r0 = t.row0; r0 < t.row1; r0 += kRowsPerThread) {
            V raw[kRowsPerThread][kPacks][kV];
#pragma unroll
            for (int i = 0; i < kRowsPerThread; ++i) {
                if (r0 + i < t.row1) {
#pragma unroll
                    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
                        for (int a = 0; a < kV; ++a) {
                            raw[i][j][a] = reinterpret_cast<const V*>(x + (r0 + i) * cols + t.col0 + j * kStride<T>)[a];
                        }
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < kRowsPerThread; ++i) {
                if (r0 + i < t.row1) {
                    A<T> u[kPacks][kVec<T>];
#pragma unroll
                    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
                        for (int a = 0; a < kV; ++a) {
#pragma unroll
                            for (int e = 0; e < kAccess<T>; ++e) {
                                const int k = a * kAccess<T> + e;
                                u[j][k] = gelu<T>(brrr::to_acc(raw[i][j][a].v[e]) + b[j][k]);
                            }
                        }
                    }
                    store_row(y + (r0 + i) * cols, t, true, u);
                }
            }
        }
    } else {
        // The scalar path (ragged rows, unaligned tensors) widens as it loads: fewer rows at once,
        // or its registers would set the whole kernel's.
        for (int64_t r0 = t.row0; r0 < t.row1; r0 += kRowsInFlight<T>) {
            A<T> u[kRowsInFlight<T>][kPacks][kVec<T>];
#pragma unroll
            for (int i = 0; i < kRowsInFlight<T>; ++i) {
                if (r0 + i < t.row1) load_row(x + (r0 + i) * cols, t, false, u[i]);
            }
#pragma unroll
            for (int i = 0; i < kRowsInFlight<T>; ++i) {
                if (r0 + i < t.row1) {
#pragma unroll
                    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
                        for (int k = 0; k < kVec<T>; ++k) u[i][j][k] = gelu<T>(u[i][j][k] + b[j][k]);
                    }
                    store_row(y + (r0 + i) * cols, t, false, u[i]);
                }
            }
        }
    }
}

// v7's forward: pack i of x (16 bytes, kAccess<T> elements) with pack i % row_packs of bias.
constexpr int kFlatThreads = 256;

template <typename T>
__global__ void __launch_bounds__(kFlatThreads)
bias_gelu_forward_flat_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y, int64_t row_packs,
                              int64_t packs) {
    using V = brrr::Pack<T, kAccess<T>>;
    const int64_t i = static_cast<int64_t>(blockIdx.x) * kFlatThreads + threadIdx.x;
    if (i >= packs) return;
    const V xv = reinterpret_cast<const V*>(x)[i];
    const V bv = brrr::load_kept(reinterpret_cast<const V*>(bias) + i % row_packs);  // every row reads it
    V out;
#pragma unroll
    for (int e = 0; e < kAccess<T>; ++e) out.v[e] = brrr::from_acc<T>(gelu<T>(brrr::to_acc(xv.v[e]) + brrr::to_acc(bv.v[e])));
    reinterpret_cast<V*>(y)[i] = out;
}

template <typename T>
__global__ void bias_gelu_forward_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y,
                                         int64_t rows, int64_t cols, int64_t rows_per_thread, bool aligned) {
    const Tile t = tile_of<T>(rows, cols, rows_per_thread);
    if (t.width[0] == 0) return;
    if (vector_path<T>(t, aligned)) {
        forward_tile<true>(x, bias, y, cols, t);
    } else {
        forward_tile<false>(x, bias, y, cols, t);
    }
}

// grad_x for the thread's rows, and into acc each column's sum of grad_x before its rounding to T.
template <bool kVector, typename T>
__device__ __forceinline__ void backward_tile(const T* __restrict__ grad_y, const T* __restrict__ x,
                                              const T* __restrict__ bias, T* __restrict__ grad_x, int64_t cols,
                                              const Tile& t, double (&acc)[kPacks][kVec<T>]) {
    A<T> b[kPacks][kVec<T>];
    load_row(bias, t, kVector, b);
    for (int64_t r = t.row0; r < t.row1; ++r) {
        A<T> g[kPacks][kVec<T>], u[kPacks][kVec<T>];
        load_row(grad_y + r * cols, t, kVector, g);
        load_row(x + r * cols, t, kVector, u);
#pragma unroll
        for (int j = 0; j < kPacks; ++j) {
#pragma unroll
            for (int k = 0; k < kVec<T>; ++k) {
                const A<T> v = u[j][k] + b[j][k];
                A<T> s, s_neg;
                sigmoids<T>(v, s, s_neg);
                const A<T> slope =
                    s + A<T>(2) * v * s * s_neg * A<T>(kBeta) * (A<T>(1) + A<T>(3 * kKappa) * v * v);
                g[j][k] *= slope;
                acc[j][k] += static_cast<double>(g[j][k]);
            }
        }
        store_row(grad_x + r * cols, t, kVector, g);
    }
}

// grad_x for the thread's tile, and per block one partial column sum of grad_x over the block's
// rows: partial[blockIdx.y * cols + col].
template <typename T>
__global__ void bias_gelu_backward_kernel(const T* __restrict__ grad_y, const T* __restrict__ x,
                                          const T* __restrict__ bias, T* __restrict__ grad_x,
                                          double* __restrict__ partial, int64_t rows, int64_t cols,
                                          int64_t rows_per_thread, bool aligned) {
    // [row group][column in tile][thread]: the warp's 32 threads write 32 consecutive doubles.
    __shared__ double sums[kBlockY][kPack<T>][kBlockX];
    const Tile t = tile_of<T>(rows, cols, rows_per_thread);
    double acc[kPacks][kVec<T>];
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) acc[j][k] = 0.0;
    }
    // No early return: every thread of the block must reach __syncthreads below.
    if (t.width[0] > 0) {
        if (vector_path<T>(t, aligned)) {
            backward_tile<true>(grad_y, x, bias, grad_x, cols, t, acc);
        } else {
            backward_tile<false>(grad_y, x, bias, grad_x, cols, t, acc);
        }
    }
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) sums[threadIdx.y][j * kVec<T> + k][threadIdx.x] = acc[j][k];
    }
    __syncthreads();
    if (threadIdx.y != 0) return;
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) {
            if (k < t.width[j]) {
                double total = 0.0;
                for (int r = 0; r < kBlockY; ++r) total += sums[r][j * kVec<T> + k][threadIdx.x];  // row groups in order
                partial[static_cast<int64_t>(blockIdx.y) * cols + t.col0 + j * kStride<T> + k] = total;
            }
        }
    }
}

// --- backward v4: the next row's loads in flight while this one is computed, no double registers --
// What it changes from the backward above (Nsight Compute, bfloat16 8192 x 8192: 102 registers a
// thread, 25% occupancy, 1890 GB/s, long_scoreboard first: a thread's one row of grad_y and x, 64
// bytes, in flight only between its stores). The tile and the thread of each element are the same
// (spec.py's cuda_layout holds), but
//   - the vector path loads row r + 1 of grad_y and x, kept as loaded (a 16-bit vector is 4
//     registers, 8 once widened), before it computes row r: loads stay in flight through the math;
//   - bias stays as loaded too, widened where used;
//   - a thread's column sums are taken in acc_t (float for the 16-bit types) over kBwdRows rows at
//     most, then added into its own double slots of the block's shared sums (no race, no barrier),
//     instead of 16 doubles (32 registers) held for the thread's whole life. Every longer sum is still
//     double and in the same order (a thread's row groups, the block's row groups, then the parts):
//     deterministic as before;
//   - __launch_bounds__ asks for kMinBlocks blocks an SM, which caps the registers;
//   - the scalar path (ragged rows, unaligned tensors) is the backward above's, whose registers are fewer:
//     a kernel has one register count, and a scalar path that kept rows in acc_t set it and spilled.
constexpr int kBwdRows = 4;
constexpr int kBwdMinBlocks = 2;  // 3 or 4 spilled (benchmarks/rowwise_variants)

template <typename T>
using Raw = brrr::Pack<T, kAccess<T>>[kPacks][kVec<T> / kAccess<T>];

template <typename T>
__device__ __forceinline__ void load_raw(const T* __restrict__ row, const Tile& t, Raw<T>& out) {
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int a = 0; a < kVec<T> / kAccess<T>; ++a) {
            out[j][a] = reinterpret_cast<const brrr::Pack<T, kAccess<T>>*>(row + t.col0 + j * kStride<T>)[a];
        }
    }
}

template <typename T>
__device__ __forceinline__ void widen(const Raw<T>& in, A<T> (&out)[kPacks][kVec<T>]) {
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int a = 0; a < kVec<T> / kAccess<T>; ++a) {
#pragma unroll
            for (int e = 0; e < kAccess<T>; ++e) out[j][a * kAccess<T> + e] = brrr::to_acc(in[j][a].v[e]);
        }
    }
}

// gelu'(v), as the backward above computes it.
template <typename T>
__device__ __forceinline__ A<T> gelu_slope(A<T> v) {
    A<T> s, s_neg;
    sigmoids<T>(v, s, s_neg);
    return s + A<T>(2) * v * s * s_neg * A<T>(kBeta) * (A<T>(1) + A<T>(3 * kKappa) * v * v);
}

// The vector path's row: grad_x from grad_y, x and bias as loaded, a 16-byte vector at a time, each
// element widened where it is used (never all of a row's 2 x 16 values widened at once).
template <typename T>
__device__ __forceinline__ void gelu_grad_raw(const Raw<T>& g, const Raw<T>& u, const Raw<T>& b, T* __restrict__ row,
                                              const Tile& t, A<T> (&acc)[kPacks][kVec<T>]) {
    using V = brrr::Pack<T, kAccess<T>>;
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int a = 0; a < kVec<T> / kAccess<T>; ++a) {
            V out;
#pragma unroll
            for (int e = 0; e < kAccess<T>; ++e) {
                const A<T> gx = brrr::to_acc(g[j][a].v[e]) *
                                gelu_slope<T>(brrr::to_acc(u[j][a].v[e]) + brrr::to_acc(b[j][a].v[e]));
                acc[j][a * kAccess<T> + e] += gx;
                out.v[e] = brrr::from_acc<T>(gx);
            }
            reinterpret_cast<V*>(row + t.col0 + j * kStride<T>)[a] = out;
        }
    }
}

// The vector path of v4.
template <typename T>
__device__ __forceinline__ void backward_tile_v4(const T* __restrict__ grad_y, const T* __restrict__ x,
                                                 const T* __restrict__ bias, T* __restrict__ grad_x, int64_t cols,
                                                 const Tile& t, double (*sums)[kBlockX]) {
    A<T> acc[kPacks][kVec<T>];
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) acc[j][k] = A<T>(0);
    }
    Raw<T> b, g, u, next_g, next_u;
    load_raw(bias, t, b);
    load_raw(grad_y + t.row0 * cols, t, next_g);
    load_raw(x + t.row0 * cols, t, next_u);
    // Not unrolled: unrolled, the compiler hoists later rows' loads and math and spills.
#pragma unroll 1
    for (int64_t r = t.row0; r < t.row1; ++r) {
#pragma unroll
        for (int j = 0; j < kPacks; ++j) {
#pragma unroll
            for (int a = 0; a < kVec<T> / kAccess<T>; ++a) {
                g[j][a] = next_g[j][a];
                u[j][a] = next_u[j][a];
            }
        }
        if (r + 1 < t.row1) {
            load_raw(grad_y + (r + 1) * cols, t, next_g);
            load_raw(x + (r + 1) * cols, t, next_u);
        }
        gelu_grad_raw<T>(g, u, b, grad_x + r * cols, t, acc);
        // Every kBwdRows rows of the thread, and after its last: the float sums into the double slots.
        if ((r - t.row0) % kBwdRows == kBwdRows - 1 || r + 1 == t.row1) {
#pragma unroll
            for (int j = 0; j < kPacks; ++j) {
#pragma unroll
                for (int k = 0; k < kVec<T>; ++k) {
                    sums[j * kVec<T> + k][threadIdx.x] += static_cast<double>(acc[j][k]);
                    acc[j][k] = A<T>(0);
                }
            }
        }
    }
}

// The scalar path of v4 and v5 (ragged rows, unaligned tensors): the backward above's, its double
// sums then added into the thread's slots. Its registers set the kernel's, so it stays the lean one.
template <typename T>
__device__ __forceinline__ void backward_tile_scalar(const T* __restrict__ grad_y, const T* __restrict__ x,
                                                     const T* __restrict__ bias, T* __restrict__ grad_x, int64_t cols,
                                                     const Tile& t, double (*sums)[kBlockX]) {
    double acc[kPacks][kVec<T>];
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) acc[j][k] = 0.0;
    }
    backward_tile<false>(grad_y, x, bias, grad_x, cols, t, acc);
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) sums[j * kVec<T> + k][threadIdx.x] += acc[j][k];
    }
}

// bias_gelu_backward_kernel's grid and partial sums, with backward_tile_v4's row loop; kMinBlocks:
// kBwdMinBlocks (benchmarks/rowwise_variants tries others).
template <typename T, int kMinBlocks = kBwdMinBlocks>
__global__ void __launch_bounds__(kBlockX * kBlockY, kMinBlocks) bias_gelu_backward_v4_kernel(const T* __restrict__ grad_y, const T* __restrict__ x,
                                             const T* __restrict__ bias, T* __restrict__ grad_x,
                                             double* __restrict__ partial, int64_t rows, int64_t cols,
                                             int64_t rows_per_thread, bool aligned) {
    __shared__ double sums[kBlockY][kPack<T>][kBlockX];
    const Tile t = tile_of<T>(rows, cols, rows_per_thread);
#pragma unroll
    for (int c = 0; c < kPack<T>; ++c) sums[threadIdx.y][c][threadIdx.x] = 0.0;
    // No early return: every thread of the block must reach __syncthreads below.
    if (t.width[0] > 0) {
        if (vector_path<T>(t, aligned)) {
            backward_tile_v4<T>(grad_y, x, bias, grad_x, cols, t, sums[threadIdx.y]);
        } else {
            backward_tile_scalar<T>(grad_y, x, bias, grad_x, cols, t, sums[threadIdx.y]);
        }
    }
    __syncthreads();
    if (threadIdx.y != 0) return;
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) {
            if (k < t.width[j]) {
                double total = 0.0;
                for (int r = 0; r < kBlockY; ++r) total += sums[r][j * kVec<T> + k][threadIdx.x];  // row groups in order
                partial[static_cast<int64_t>(blockIdx.y) * cols + t.col0 + j * kStride<T> + k] = total;
            }
        }
    }
}

// --- backward v5: each thread's rows staged through shared memory by cp.async --------------------
// What it changes from v4 (H100, bfloat16 8192 x 8192: v4's backward 195 us, 68.6% of copy, with 128
// registers and 2 blocks of 256 an SM: 64 bytes of loads in flight a thread while it computes): the
// vector path copies grad_y and x of kBwdRows rows of its tile (its whole tile at the usual 4 rows a
// thread) into its own slots of shared memory with cp.async before any math, 256 bytes a thread, and
// then works through them as they land (cp.async.wait_group; a thread reads only what it copied, so
// no barrier). The math, the tile, the sums and their order are v4's.
template <typename T>
constexpr int kStageVectors = kBwdRows * 2 * kPacks * (kVec<T> / kAccess<T>);  // 16-byte slots a thread

__device__ __forceinline__ void cp_async16(void* to, const void* from) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(to))),
                 "l"(from));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most `pending` of this thread's newest commit groups are still landing (0 to 3).
__device__ __forceinline__ void cp_async_wait(int pending) {
    static_assert(kBwdRows == 4, "the cases below cover 0 to 3 groups pending");
    switch (pending) {
        case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
        case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
        case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
        default: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
    }
}

// Slot (row i, tensor, vector j, access a) of thread `tid`: a warp's 32 threads take 32 consecutive
// 16-byte slots.
template <typename T>
__device__ __forceinline__ int slot(int i, int tensor, int j, int a, int tid) {
    constexpr int kV = kVec<T> / kAccess<T>;
    return (((i * 2 + tensor) * kPacks + j) * kV + a) * (kBlockX * kBlockY) + tid;
}

template <typename T>
__device__ __forceinline__ void backward_tile_v5(const T* __restrict__ grad_y, const T* __restrict__ x,
                                                 const T* __restrict__ bias, T* __restrict__ grad_x, int64_t cols,
                                                 const Tile& t, double (*sums)[kBlockX], brrr::Pack<T, kAccess<T>>* staged) {
    using V = brrr::Pack<T, kAccess<T>>;
    constexpr int kV = kVec<T> / kAccess<T>;
    const int tid = threadIdx.y * kBlockX + threadIdx.x;
    Raw<T> b;
    load_raw(bias, t, b);
    A<T> acc[kPacks][kVec<T>];
#pragma unroll 1
    for (int64_t r0 = t.row0; r0 < t.row1; r0 += kBwdRows) {
        // One commit group a row, empty past the tile's last row, so the count waited on is the same.
#pragma unroll
        for (int i = 0; i < kBwdRows; ++i) {
            if (r0 + i < t.row1) {
#pragma unroll
                for (int j = 0; j < kPacks; ++j) {
#pragma unroll
                    for (int a = 0; a < kV; ++a) {
                        const int64_t at = (r0 + i) * cols + t.col0 + j * kStride<T> + a * kAccess<T>;
                        cp_async16(staged + slot<T>(i, 0, j, a, tid), grad_y + at);
                        cp_async16(staged + slot<T>(i, 1, j, a, tid), x + at);
                    }
                }
            }
            cp_async_commit();
        }
#pragma unroll
        for (int j = 0; j < kPacks; ++j) {
#pragma unroll
            for (int k = 0; k < kVec<T>; ++k) acc[j][k] = A<T>(0);
        }
#pragma unroll
        for (int i = 0; i < kBwdRows; ++i) {
            cp_async_wait(kBwdRows - 1 - i);
            if (r0 + i < t.row1) {
                // A vector at a time from shared memory: the row is never all in registers at once.
                T* out = grad_x + (r0 + i) * cols;
#pragma unroll
                for (int j = 0; j < kPacks; ++j) {
#pragma unroll
                    for (int a = 0; a < kV; ++a) {
                        const V g = staged[slot<T>(i, 0, j, a, tid)];
                        const V u = staged[slot<T>(i, 1, j, a, tid)];
                        V y;
#pragma unroll
                        for (int e = 0; e < kAccess<T>; ++e) {
                            const A<T> gx = brrr::to_acc(g.v[e]) * gelu_slope<T>(brrr::to_acc(u.v[e]) +
                                                                                brrr::to_acc(b[j][a].v[e]));
                            acc[j][a * kAccess<T> + e] += gx;
                            y.v[e] = brrr::from_acc<T>(gx);
                        }
                        reinterpret_cast<V*>(out + t.col0 + j * kStride<T>)[a] = y;
                    }
                }
            }
        }
#pragma unroll
        for (int j = 0; j < kPacks; ++j) {
#pragma unroll
            for (int k = 0; k < kVec<T>; ++k) sums[j * kVec<T> + k][threadIdx.x] += static_cast<double>(acc[j][k]);
        }
    }
}

// v4's kernel with backward_tile_v5 on the vector path; `staged`: kStageVectors<T> x 256 16-byte slots
// of dynamic shared memory.
template <typename T>
__global__ void __launch_bounds__(kBlockX * kBlockY, 2) bias_gelu_backward_v5_kernel(
    const T* __restrict__ grad_y, const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ grad_x,
    double* __restrict__ partial, int64_t rows, int64_t cols, int64_t rows_per_thread, bool aligned) {
    __shared__ double sums[kBlockY][kPack<T>][kBlockX];
    extern __shared__ __align__(16) unsigned char staged[];
    const Tile t = tile_of<T>(rows, cols, rows_per_thread);
#pragma unroll
    for (int c = 0; c < kPack<T>; ++c) sums[threadIdx.y][c][threadIdx.x] = 0.0;
    // No early return: every thread of the block must reach __syncthreads below.
    if (t.width[0] > 0) {
        if (vector_path<T>(t, aligned)) {
            backward_tile_v5<T>(grad_y, x, bias, grad_x, cols, t, sums[threadIdx.y],
                                reinterpret_cast<brrr::Pack<T, kAccess<T>>*>(staged));
        } else {
            backward_tile_scalar<T>(grad_y, x, bias, grad_x, cols, t, sums[threadIdx.y]);
        }
    }
    __syncthreads();
    if (threadIdx.y != 0) return;
#pragma unroll
    for (int j = 0; j < kPacks; ++j) {
#pragma unroll
        for (int k = 0; k < kVec<T>; ++k) {
            if (k < t.width[j]) {
                double total = 0.0;
                for (int r = 0; r < kBlockY; ++r) total += sums[r][j * kVec<T> + k][threadIdx.x];  // row groups in order
                partial[static_cast<int64_t>(blockIdx.y) * cols + t.col0 + j * kStride<T> + k] = total;
            }
        }
    }
}

template <typename T>
constexpr size_t kStageBytes = static_cast<size_t>(kStageVectors<T>) * kBlockX * kBlockY * 16;

// grad_bias[c] = the sum of partial[j * cols + c] over the `parts` block rows: kFinalizeGroups
// interleaved groups of them summed apart (threadIdx.y), then the groups in order, so the same bits
// every run. v2 gave each column one thread walking all parts: 32 blocks at 8192 columns, 34 us of
// a 340 us bfloat16 forward+backward at 15% of copy (ncu, benchmarks/results/2026-11-24-h100-perf/run2).
template <typename T>
__global__ void bias_grad_kernel(const double* __restrict__ partial, T* __restrict__ grad_bias, int64_t parts,
                                 int64_t cols) {
    __shared__ double groups[kFinalizeGroups][kFinalizeColumns];
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kFinalizeColumns + threadIdx.x;
    double acc = 0.0;
    if (c < cols) {
        for (int64_t j = threadIdx.y; j < parts; j += kFinalizeGroups) acc += partial[j * cols + c];
    }
    // Every thread stores, in range or not, so the barrier is reached by the whole block.
    groups[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y != 0 || c >= cols) return;
    for (int g = 1; g < kFinalizeGroups; ++g) acc += groups[g][threadIdx.x];
    grad_bias[c] = brrr::from_acc<T>(static_cast<A<T>>(acc));
}

// --- v1 forward, kept so that brrr bench times it beside this one (binding.cpp's forward_v1):
// each thread owns 8 consecutive columns, read as one 16-byte-aligned Pack of 8 (two adjacent
// float4 of one thread, so a warp's float4 instruction touches every other 16 bytes), rows one
// at a time, and sigmoid(2z) by IEEE division (nvcc folds the two into one per element, each
// still with its slow-path branch). Same grid as v2, results within the tolerance; validation
// checks only forward, so this one is for timing, not for use.
template <typename T>
struct alignas(16) Pack8 {
    T v[8];
};

template <typename T>
__device__ __forceinline__ void load8_v1(const T* __restrict__ p, bool vector, int width, A<T> (&out)[8]) {
    if (vector) {
        const Pack8<T> pack = *reinterpret_cast<const Pack8<T>*>(p);
#pragma unroll
        for (int k = 0; k < 8; ++k) out[k] = brrr::to_acc(pack.v[k]);
    } else {
#pragma unroll
        for (int k = 0; k < 8; ++k) out[k] = k < width ? brrr::to_acc(p[k]) : A<T>(0);
    }
}

template <typename T>
__global__ void bias_gelu_forward_v1_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y,
                                            int64_t rows, int64_t cols, int64_t rows_per_thread, bool aligned) {
    const int64_t col0 = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
    const int64_t row0 = (static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y) * rows_per_thread;
    const int64_t row1 = row0 + rows_per_thread < rows ? row0 + rows_per_thread : rows;
    if (col0 >= cols) return;
    const int width = static_cast<int>(cols - col0 < 8 ? cols - col0 : 8);
    const bool vector = aligned && width == 8;
    A<T> b[8];
    load8_v1(bias + col0, false, width, b);
    for (int64_t r = row0; r < row1; ++r) {
        A<T> u[8];
        load8_v1(x + r * cols + col0, vector, width, u);
        Pack8<T> out;
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            const A<T> v = u[k] + b[k];
            const A<T> z = A<T>(kBeta) * (v + A<T>(kKappa) * v * v * v);
            const A<T> e = exp(A<T>(-2) * fabs(z));
            const A<T> big = A<T>(1) / (A<T>(1) + e);
            const A<T> small = e / (A<T>(1) + e);
            out.v[k] = brrr::from_acc<T>(v * (z >= A<T>(0) ? big : small));
        }
        if (vector) {
            *reinterpret_cast<Pack8<T>*>(y + r * cols + col0) = out;
        } else {
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                if (k < width) y[r * cols + col0 + k] = out.v[k];
            }
        }
    }
}

// --- launchers: what binding.cpp calls ------------------------------------------------------

struct Tiling {
    dim3 grid, block;
    int64_t rows_per_thread;
};

// More rows per thread than `at_least` only where that would need more than kMaxGridY blocks in y.
// `columns`: a thread's columns (kPack<T>; v1's 8).
static Tiling tiling(int64_t rows, int64_t cols, int columns, int64_t at_least = kRowsPerThread) {
    const int64_t needed = (rows + kMaxGridY * kBlockY - 1) / (kMaxGridY * kBlockY);
    const int64_t per_thread = needed > at_least ? needed : at_least;
    const int64_t groups = (rows + per_thread - 1) / per_thread;
    return {dim3(brrr::blocks_for(cols, kBlockX * columns), brrr::blocks_for(groups, kBlockY)), dim3(kBlockX, kBlockY),
            per_thread};
}

// Vectors are aligned in every row only if the base pointers are and a row is a whole number of
// vectors (then each vector starts at a multiple of kVec elements from an aligned row start).
template <typename T>
static bool vectors_fit(int64_t cols) { return cols % kVec<T> == 0; }

template <typename T>
void bias_gelu_forward(const T* x, const T* bias, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (cols % kAccess<T> == 0 && brrr::aligned16(x) && brrr::aligned16(bias) && brrr::aligned16(y)) {
        const int64_t packs = rows * cols / kAccess<T>;
        if (packs > 0) {
            bias_gelu_forward_flat_kernel<T><<<brrr::blocks_for(packs, kFlatThreads), kFlatThreads, 0, stream>>>(
                x, bias, y, cols / kAccess<T>, packs);
        }
        return;
    }
    const Tiling tl = tiling(rows, cols, kPack<T>);
    const bool aligned = vectors_fit<T>(cols) && brrr::aligned16(x) && brrr::aligned16(bias) && brrr::aligned16(y);
    bias_gelu_forward_kernel<T><<<tl.grid, tl.block, 0, stream>>>(x, bias, y, rows, cols, tl.rows_per_thread, aligned);
}

template <typename T>
void bias_gelu_forward_v1(const T* x, const T* bias, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    const Tiling tl = tiling(rows, cols, 8);
    const bool aligned = (cols * static_cast<int64_t>(sizeof(T))) % 16 == 0 && brrr::aligned16(x) && brrr::aligned16(y);
    bias_gelu_forward_v1_kernel<T><<<tl.grid, tl.block, 0, stream>>>(x, bias, y, rows, cols, tl.rows_per_thread,
                                                                     aligned);
}

// Rows of the partial-sum buffer the backward needs ([parts, cols] doubles): one per block row.
// (grid.y does not depend on a thread's columns: the same for every dtype.)
// v8: the backward's rows a thread, kRowsPerThread doubled while the grid keeps kMinBackwardBlockRows
// block rows (spec.py's backward_rows_per_thread mirrors it).
constexpr int64_t kMaxBackwardRows = 16;
constexpr int64_t kMinBackwardBlockRows = 64;

static int64_t backward_rows_per_thread(int64_t rows) {
    int64_t per = kRowsPerThread;
    while (per < kMaxBackwardRows && brrr::blocks_for(brrr::blocks_for(rows, 2 * static_cast<int>(per)), kBlockY) >=
                                         kMinBackwardBlockRows) {
        per *= 2;
    }
    return per;
}

int64_t bias_gelu_backward_parts(int64_t rows, int64_t cols) {
    return rows == 0 ? 0 : tiling(rows, cols, 8, backward_rows_per_thread(rows)).grid.y;
}

// partial: bias_gelu_backward_parts(rows, cols) x cols doubles of scratch. With no rows,
// grad_bias is zeros (the sum of nothing).
template <typename T>
void bias_gelu_backward(const T* grad_y, const T* x, const T* bias, T* grad_x, T* grad_bias, double* partial,
                        int64_t rows, int64_t cols, cudaStream_t stream) {
    const Tiling tl = tiling(rows, cols, kPack<T>, backward_rows_per_thread(rows));
    const int64_t parts = bias_gelu_backward_parts(rows, cols);
    const bool aligned = vectors_fit<T>(cols) && brrr::aligned16(grad_y) && brrr::aligned16(x) &&
                         brrr::aligned16(bias) && brrr::aligned16(grad_x);
    if (parts > 0) {
        // v5: its staging slots are dynamic shared memory, over the 48 KB a block gets unasked.
        cudaFuncSetAttribute(bias_gelu_backward_v5_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kStageBytes<T>));
        bias_gelu_backward_v5_kernel<T><<<tl.grid, tl.block, kStageBytes<T>, stream>>>(grad_y, x, bias, grad_x, partial,
                                                                                      rows, cols, tl.rows_per_thread,
                                                                                      aligned);
    }
    bias_grad_kernel<T><<<brrr::blocks_for(cols, kFinalizeColumns), dim3(kFinalizeColumns, kFinalizeGroups), 0, stream>>>(
        partial, grad_bias, parts, cols);
}

// The dtypes binding.cpp dispatches to.
// The backward kernels before v5 are launched by nothing here: instantiated so they stay compiled
// (the resource report and tests list them) and benchmarks/rowwise_variants can time them. v4 is left
// out for double, where 128 registers spill 48 bytes.
#define INSTANTIATE_V4(T)                                                                                   \
    template __global__ void bias_gelu_backward_v4_kernel<T>(const T*, const T*, const T*, T*, double*, int64_t, \
                                                             int64_t, int64_t, bool);
INSTANTIATE_V4(float)
INSTANTIATE_V4(__half)
INSTANTIATE_V4(__nv_bfloat16)
#define INSTANTIATE(T)                                                                                      \
    template __global__ void bias_gelu_backward_kernel<T>(const T*, const T*, const T*, T*, double*, int64_t,   \
                                                          int64_t, int64_t, bool);                          \
    template void bias_gelu_forward(const T*, const T*, T*, int64_t, int64_t, cudaStream_t);                    \
    template void bias_gelu_forward_v1(const T*, const T*, T*, int64_t, int64_t, cudaStream_t);                 \
    template void bias_gelu_backward(const T*, const T*, const T*, T*, T*, double*, int64_t, int64_t, cudaStream_t);
INSTANTIATE(float)
INSTANTIATE(double)
INSTANTIATE(__half)
INSTANTIATE(__nv_bfloat16)
