// Layer norm over the last dim, CUDA C stage: numba_kernel.py's kernels, with each reduction done
// by warp shuffles plus one shared slot per warp (the simulator has no shuffles, so numba takes one
// slot per thread), and the column sums split over row groups. x is [rows, cols], weight and bias
// [cols]. 64-bit indices: rows * cols passes 2^31 long before memory runs out.
//
// Napkin math: the forward must read x and write y once (weight, bias, mean and rstd are a row's
// or a column's worth), so a float32 4096 x 8192 input moves 2 x 134 MB, 91 us at the 2.96 TB/s
// an H100 copies (bfloat16: half that). Measured on an H100 at 4096 x 8192 (benchmarks/results/
// 2026-11-23-h100-bench2; torch eager 59.3% of copy float32, 57.8% bfloat16):
//   v1, one block of 256 threads per row, three passes over the row from memory (forward_v1):
//       0.1424 ms float32 (63.0% of copy), 0.0655 ms bfloat16 (68.6%)
//   v2, the row read once into registers as 16-byte packs (forward, this file's fast paths):
//       0.0998 ms float32 (89.8%), 0.0511 ms bfloat16 (87.9%)
//   v2 launched early (brrr::launch_early; each forward kernel waits for the kernel before it first):
//       on an H200, brrr bench in one process against the same files without it, two runs in opposite
//       orders: float32 69.6-70.0 -> 67.7-67.8 us (93.4% of copy; torch.compile 68.9-69.1), bfloat16
//       38.6-38.8 -> 36.9-37.0 us (85.7%); forward+backward bfloat16 98.8 -> 96.9-97.2 us. After a torch
//       kernel that does not allow it, 1.3-1.6 us a call as well (benchmarks/results/
//       2026-11-30-h200-launch-early): the gap between two kernels, in which no SM works, is what goes.
// v1 reads each row three times (mean, centred squares, y; the second and third from L1/L2 when the
// row is still there), one element a thread a step. v2 loads the row once into registers as
// 16-byte packs, takes both statistics from there and writes y with 16-byte stores; rows that do
// not fit (too long, a width that is not a whole number of packs, a pointer off 16 bytes) still
// take v1, which handles any row. The launcher layernorm_forward chooses.
//
// Backward: grad_y and x in, grad_x out (3 tensors' traffic: 403 MB at float32 4096 x 8192, 136 us at
// copy speed), plus the weight and bias gradients, column sums over all rows.
//   backward v1, grad_x by rows then the column sums in a second pass over grad_y and x: fwd+bwd
//       0.458-0.48 ms float32 (48% of copy, as eager), bfloat16 43% (issue 26's table)
//   backward v2, one pass, per-block column sums reduced in a fixed order (layernorm_backward):
//       fwd+bwd 0.2727 ms float32 (81.7% of copy; eager 0.4711, torch.compile 0.3814), bfloat16
//       0.1793 ms (62.1%) with one block of 1024 threads an SM (benchmarks/results/2026-11-24-h100-perf/
//       run1; the GPU time of the kernels: torch.profiler's sum was 0.2705 ms float32). bfloat16 rows of
//       8192 now take 512 threads of 2 packs, two blocks an SM: 0.1706 ms (65.3%; run3). Nsight Compute
//       (run2): the fused kernel 112 us at 56% of DRAM peak, occupancy 48% (64 registers, 2 x 512
//       threads), the reduction of 264 parts 8.9 us; the parts are 17 MB written and read again, 8%
//       on top of the 201 MB the backward must move.
//   backward v3, rows staged through shared memory by cp.async (kStages rows of loads in flight a block,
//       no registers held for them), the column sums in registers, one block an SM of 512 threads:
//       on an H100 at 4096 x 8192, bench in benchmarks/rowwise_variants (median of 30, L2 flushed, in the
//       same process as a 3004 GB/s copy; benchmarks/results/2026-11-25-h100-rowwise/variants.txt),
//       backward alone bfloat16 83.3 us (80.5% of copy; v2 123.8 us, 54.2%), float32 172.9 us (77.6%;
//       v2 181.1 us, 74.1%). A forward on the same plan (persistent grid, the row staged by cp.async)
//       ran slower than v2's block path (bfloat16 54.4 against 51.7 us, float32 99.4 against 96.3): it
//       stays in that benchmark, not here.
//   backward v4 (layernorm_backward, what ships), v3 with fewer instructions an element (its section
//       says which): on an H200, backward alone bfloat16 69.5 -> 65.5 us (72.3% of copy), float32
//       144.3 -> 118.2 us (80.1%); forward+backward 85.3% float32, 78.3% bfloat16 (brrr bench,
//       benchmarks/results/2026-11-29-h200-layernorm-narrow). v4 and its reduction now launch by
//       programmatic dependent launch (launch_early): forward+backward 86.2% and 80.3%
//       (2026-11-29-h200-layernorm-pdl-v4). Not kept: a "v5" adding the parts up in v4's own grid after
//       a cooperative grid-wide barrier (no faster than the separate kernel).
#include <algorithm>

#include "brrr_kernel.cuh"

constexpr int kThreads = 256;  // v1 and backward: a multiple of 32, the reduction works in whole warps
constexpr int kWarps = kThreads / 32;
constexpr int kColumns = 32;   // weight-gradient kernel: a warp reads 32 neighbouring columns of a row
constexpr int kRowGroups = 16; // ... and 16 warps split the rows: each column's walk down them is 16x shorter

// v2's register paths. A thread holds up to kMaxPacks<T> 16-byte packs of its row: 8 for float
// and double (32 registers); 4 for bfloat16, whose 32 values the compiler keeps as floats (8 packs
// spilled 224 bytes under the 1024-thread bound), except 16-bit rows of 513-1024 packs, which take
// 8 packs a thread under a 128-thread bound (kNarrowPacks, below launch_block). Rows of up to kWarpPacks * 32 packs take a warp each (no barrier at all),
// longer ones a block of up to kMaxThreads threads, as few packs a thread as keeps the block within
// kTargetThreads.
template <typename T> constexpr int kMaxPacks = sizeof(T) == 2 ? 4 : 8;
constexpr int kMaxThreads = 1024;
constexpr int kTargetThreads = 256;
constexpr int kWarpPacks = 4;
constexpr int kWarpRows = 8;  // warp path: rows (warps) per block

template <typename A, typename B> constexpr bool kSame = false;
template <typename A> constexpr bool kSame<A, A> = true;

// Statistics and sums are double for float and double inputs: a float mean of values near 1e4 is off
// by up to half an ulp (4.9e-4), an error every normalised value inherits divided by the row's std.
// bfloat16 carries 8 bits, so float's 24 leave room to spare. The stats tensors have this dtype.
template <typename T> struct Stat { using type = double; };
template <> struct Stat<__nv_bfloat16> { using type = float; };
template <> struct Stat<__half> { using type = float; };
template <typename T> using stat_t = typename Stat<T>::type;

template <typename T> __device__ __forceinline__ stat_t<T> to_stat(T v) { return static_cast<stat_t<T>>(brrr::to_acc(v)); }
template <typename T> __device__ __forceinline__ T from_stat(stat_t<T> v) {
    return brrr::from_acc<T>(static_cast<brrr::acc_t<T>>(v));
}

// ---- v1: one block per row, threads striding over it (any width, any alignment) --------------

// The sum of `value` over the block, returned to every thread. After the xor butterfly all lanes of
// a warp hold the same value (a + b == b + a exactly), and every thread then adds the per-warp sums
// in one fixed order, so all threads, and all runs, agree bit for bit.
template <typename T>
__device__ T block_sum(T value, T* partial) {
    value = brrr::warp_sum(value);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
    __syncthreads();
    T result = partial[0];
    for (int w = 1; w < kWarps; ++w) result += partial[w];
    // No thread may write `partial` for the next reduction until every thread has read this one.
    __syncthreads();
    return result;
}

template <typename T>
__global__ void layernorm_forward_kernel(const T* __restrict__ x, const T* __restrict__ weight,
                                         const T* __restrict__ bias, T* __restrict__ y,
                                         stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                         int64_t cols, stat_t<T> eps) {
    brrr::wait_for_prior_grid();  // launched early (brrr::launch_early): the kernel before it first
    brrr::allow_dependents();     // the next kernel may launch now (it waits for this grid's end)
    using S = stat_t<T>;
    __shared__ double partial[kWarps];  // v1's rows are long: each thread sums cols / kThreads terms
    const int64_t row = blockIdx.x;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    double total = 0;  // double for the 16-bit types too: a float sum of 4096 terms a thread drifted units
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) total += static_cast<double>(to_stat(xr[c]));
    const double mu_d = block_sum(total, partial) / cols;  // rounded once to S: the mean's one rounding
    // Second pass over the row (from L1/L2) for the centred sum of squares: E[x^2] - E[x]^2 would cancel.
    double squares = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        const double d = static_cast<double>(to_stat(xr[c])) - mu_d;
        squares += d * d;
    }
    const S mu = static_cast<S>(mu_d), r = static_cast<S>(1.0 / sqrt(block_sum(squares, partial) / cols + eps));
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        yr[c] = from_stat<T>((to_stat(xr[c]) - mu) * r * to_stat(weight[c]) + to_stat(bias[c]));
    }
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// ---- v2: the row in registers, as 16-byte packs ----------------------------------------------

// y = (x - mean) * rstd * w + b, element by element, in brrr::acc_t<T>: float for float and
// bfloat16, double for double. For float the statistics stay double (see Stat) and y alone is
// float arithmetic: the double mean is split into hi + lo floats, and (x - hi) - lo is x - mean to
// within two float roundings of the centred value itself, where float(mean) would carry the mean's
// rounding (4.9e-4 near 1e4) into every element. The rest costs a few float ulps of xhat * w and
// of b, against float32's tolerance of 1e-5 relative, and saves four conversions to and from
// double per element. Those run at 16 a clock per SM on an H100 (the CUDA guide's throughput table,
// a quarter of the FP64 rate): v1's six an element come to ~55 us at 4096 x 8192 (132 SMs at
// 1.755 GHz), against 91 us of memory traffic; the two left here, for the double sums, to ~18 us.
template <typename T>
struct Affine {
    using A = brrr::acc_t<T>;
    A hi, lo, r;
    __device__ Affine(stat_t<T> mu, stat_t<T> rs)
        : hi(static_cast<A>(mu)), lo(static_cast<A>(mu - static_cast<stat_t<T>>(static_cast<A>(mu)))),
          r(static_cast<A>(rs)) {}
    __device__ __forceinline__ A centred(T x) const {
        A d = brrr::to_acc(x) - hi;
        if constexpr (!kSame<A, stat_t<T>>) d -= lo;  // lo is exactly 0 when A holds the mean whole
        return d;
    }
    __device__ __forceinline__ A operator()(T x, T w, T b) const { return centred(x) * r * brrr::to_acc(w) + brrr::to_acc(b); }
};

// One rounding per element either way; bfloat16 converts two floats per instruction.
template <typename T, int W>
__device__ __forceinline__ brrr::Pack<T, W> round_pack(const brrr::acc_t<T> (&a)[W]) {
    brrr::Pack<T, W> out;
    if constexpr (kSame<T, __nv_bfloat16>) {
#pragma unroll
        for (int j = 0; j < W; j += 2) {
            const __nv_bfloat162 two = __floats2bfloat162_rn(a[j], a[j + 1]);
            out.v[j] = two.x;
            out.v[j + 1] = two.y;
        }
    } else {
#pragma unroll
        for (int j = 0; j < W; ++j) out.v[j] = brrr::from_acc<T>(a[j]);
    }
    return out;
}

// The sum over the threads that share a row, returned to each of them in the same bits (see
// block_sum). A whole block: one slot per warp in `partial`, which each call site gives its own
// array, so no thread can overwrite a slot another has yet to read and one barrier a sum suffices.
template <bool kWholeBlock, typename S>
__device__ __forceinline__ S row_sum(S value, S* partial) {
    value = brrr::warp_sum(value);
    if constexpr (kWholeBlock) {
        if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
        __syncthreads();
        value = partial[0];
        const int warps = blockDim.x / 32;
        for (int w = 1; w < warps; ++w) value += partial[w];
    }
    return value;
}

// A thread's two statistics sums over the packs it holds (holds(k): pack k is the thread's), in the
// statistics' type: each pack summed apart, then the packs, so chains of W and kPacks dependent adds,
// not W * kPacks. The squares are of x - mu from the same registers: two passes, never E[x^2] -
// E[x]^2, which cancels.
template <typename T, int kPacks, typename Holds>
__device__ __forceinline__ stat_t<T> held_sum(const brrr::Pack<T, 16 / sizeof(T)> (&v)[kPacks], Holds holds) {
    stat_t<T> total = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        if (holds(k)) {
            stat_t<T> s = to_stat(v[k].v[0]);
#pragma unroll
            for (int j = 1; j < 16 / static_cast<int>(sizeof(T)); ++j) s += to_stat(v[k].v[j]);
            total += s;
        }
    }
    return total;
}

template <typename T, int kPacks, typename Holds>
__device__ __forceinline__ stat_t<T> held_squares(const brrr::Pack<T, 16 / sizeof(T)> (&v)[kPacks], stat_t<T> mu,
                                                  Holds holds) {
    stat_t<T> squares = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        if (holds(k)) {
            stat_t<T> s = 0;
#pragma unroll
            for (int j = 0; j < 16 / static_cast<int>(sizeof(T)); ++j) {
                const stat_t<T> d = to_stat(v[k].v[j]) - mu;
                s += d * d;
            }
            squares += s;
        }
    }
    return squares;
}

// Weight and bias, which every row reads. float32 and double keep them in L1 and L2 ahead of the
// streamed rows (brrr::load_kept: forward 70.5 -> 69.6 us on an H200 at 4096 x 8192, forward+backward
// unchanged). The 16-bit types load them plainly: there the forward gained as much (38.3 -> 37.7 us)
// but the forward+backward lost more, 97.9 -> 99.3 us in two runs each
// (benchmarks/results/2026-11-30-h200-kept-loads).
template <typename T, typename P>
__device__ __forceinline__ P load_param(const P* p) {
    if constexpr (sizeof(T) >= 4) return brrr::load_kept(p);
    else return *p;
}

// One row, by the `stride` threads that share it (t = 0 .. stride - 1): thread t holds packs
// t, t + stride, ..., up to kPacks of them, those at or past `packs` not loaded and never used.
// kFull: packs == kPacks x stride, so every thread holds all kPacks and no slot is tested (the
// tests were a third of the 16-bit forward's instructions; see the softmax's v4).
// Every thread of a block reaches both row_sum calls: nothing returns before them.
template <typename T, int kPacks, bool kWholeBlock, bool kFull = false>
__device__ __forceinline__ void normalise_row(const T* __restrict__ xr, const T* __restrict__ weight,
                                              const T* __restrict__ bias, T* __restrict__ yr,
                                              stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                              int packs, int64_t cols, stat_t<T> eps, int t, int stride,
                                              stat_t<T>* partial_sum, stat_t<T>* partial_squares) {
    using S = stat_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    const auto holds = [&](int k) { return kFull || k * stride + t < packs; };
    P v[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (holds(k)) v[k] = reinterpret_cast<const P*>(xr)[p];
    }
    const S mu = row_sum<kWholeBlock>(held_sum<T, kPacks>(v, holds), partial_sum) / cols;
    const S r = S(1) / sqrt(row_sum<kWholeBlock>(held_squares<T, kPacks>(v, mu, holds), partial_squares) / cols + eps);
    const Affine<T> affine(mu, r);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (holds(k)) {
            const P w = load_param<T>(reinterpret_cast<const P*>(weight) + p);
            const P b = load_param<T>(reinterpret_cast<const P*>(bias) + p);
            brrr::acc_t<T> out[W];
#pragma unroll
            for (int j = 0; j < W; ++j) out[j] = affine(v[k].v[j], w.v[j], b.v[j]);
            reinterpret_cast<P*>(yr)[p] = round_pack<T, W>(out);
        }
    }
    if (t == 0) {
        *mean = mu;
        *rstd = r;
    }
}

// Rows of up to kWarpPacks * 32 packs: warp threadIdx.y of block b owns row b * kWarpRows + y.
template <typename T, int kPacks>
__global__ void __launch_bounds__(32 * kWarpRows)
layernorm_forward_warp_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                              T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                              int64_t rows, int64_t cols, stat_t<T> eps) {
    brrr::wait_for_prior_grid();  // launched early (brrr::launch_early): the kernel before it first
    brrr::allow_dependents();     // the next kernel may launch now (it waits for this grid's end)
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRows + threadIdx.y;
    // A whole warp leaves together, and the warp path has no block barrier to miss.
    if (row >= rows) return;
    const int packs = static_cast<int>(cols / (16 / sizeof(T)));
    normalise_row<T, kPacks, false>(x + row * cols, weight, bias, y + row * cols, mean + row, rstd + row, packs, cols,
                                    eps, threadIdx.x, 32, nullptr, nullptr);
}

// Longer rows: one block per row, blockDim.x a multiple of 32 with blockDim.x * kPacks >= packs, at
// most kMaxT threads and at least kMinBlocks blocks an SM (the register bound: 64 a thread at 1024).
template <typename T, int kPacks, bool kFull, int kMaxT = kMaxThreads, int kMinBlocks = 0>
__global__ void __launch_bounds__(kMaxT, kMinBlocks)
layernorm_forward_block_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                               T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                               int64_t cols, stat_t<T> eps) {
    brrr::wait_for_prior_grid();  // launched early (brrr::launch_early): the kernel before it first
    brrr::allow_dependents();     // the next kernel may launch now (it waits for this grid's end)
    __shared__ stat_t<T> partial_sum[kMaxT / 32];
    __shared__ stat_t<T> partial_squares[kMaxT / 32];
    const int64_t row = blockIdx.x;
    const int packs = static_cast<int>(cols / (16 / sizeof(T)));
    normalise_row<T, kPacks, true, kFull>(x + row * cols, weight, bias, y + row * cols, mean + row, rstd + row, packs,
                                          cols, eps, threadIdx.x, blockDim.x, partial_sum, partial_squares);
}

// ---- backward v1: grad_x by rows, then the column sums in a second pass ---------------------
// Kept for what v2 does not take (widths that are not whole 16-byte packs, unaligned tensors, rows
// whose column sums do not fit in shared memory) and as the first rung of the ladder.
// layernorm_backward_x_kernel reads grad_y and x and writes grad_x; layernorm_backward_weight_kernel
// reads grad_y and x again: 5 passes of a tensor's size where 3 must be, so at best 60% of copy.

template <typename T>
__global__ void layernorm_backward_x_kernel(const T* __restrict__ grad_y, const T* __restrict__ x,
                                            const T* __restrict__ weight, const stat_t<T>* __restrict__ mean,
                                            const stat_t<T>* __restrict__ rstd, T* __restrict__ grad_x, int64_t cols) {
    using S = stat_t<T>;
    __shared__ S partial[kWarps];
    const int64_t row = blockIdx.x;
    const T* gr = grad_y + row * cols;
    const T* xr = x + row * cols;
    T* gxr = grad_x + row * cols;
    const S mu = mean[row];
    const S r = rstd[row];
    S sum_g = 0;
    S sum_gx = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        const S gxhat = to_stat(gr[c]) * to_stat(weight[c]);
        sum_g += gxhat;
        sum_gx += gxhat * (to_stat(xr[c]) - mu) * r;
    }
    const S mean_g = block_sum(sum_g, partial) / cols;
    const S mean_gx = block_sum(sum_gx, partial) / cols;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        const S xhat = (to_stat(xr[c]) - mu) * r;
        gxr[c] = from_stat<T>(r * (to_stat(gr[c]) * to_stat(weight[c]) - mean_g - xhat * mean_gx));
    }
}

// Block (kColumns, groups), groups = blockDim.y <= kRowGroups (fewer for fewer rows: a thread with no
// row would only add zeros): thread (tx, ty) sums rows ty, ty + groups, ... of column
// blockIdx.x * kColumns + tx, then the ty == 0 thread adds the groups' partials in order. No
// atomics: the same bits on every run.
template <typename T>
__global__ void layernorm_backward_weight_kernel(const T* __restrict__ grad_y, const T* __restrict__ x,
                                                 const stat_t<T>* __restrict__ mean, const stat_t<T>* __restrict__ rstd,
                                                 T* __restrict__ grad_weight, T* __restrict__ grad_bias,
                                                 int64_t rows, int64_t cols) {
    using S = stat_t<T>;
    __shared__ S partial_w[kRowGroups][kColumns];
    __shared__ S partial_b[kRowGroups][kColumns];
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kColumns + threadIdx.x;
    S gw = 0;
    S gb = 0;
    if (c < cols) {
        for (int64_t row = threadIdx.y; row < rows; row += blockDim.y) {
            const S g = to_stat(grad_y[row * cols + c]);
            gw += g * (to_stat(x[row * cols + c]) - mean[row]) * rstd[row];
            gb += g;
        }
    }
    // Every thread stores, in range or not, so the barrier below is reached by the whole block.
    partial_w[threadIdx.y][threadIdx.x] = gw;
    partial_b[threadIdx.y][threadIdx.x] = gb;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        for (int k = 1; k < static_cast<int>(blockDim.y); ++k) {
            gw += partial_w[k][threadIdx.x];
            gb += partial_b[k][threadIdx.x];
        }
        grad_weight[c] = from_stat<T>(gw);
        grad_bias[c] = from_stat<T>(gb);
    }
}


// ---- backward v2: one pass over grad_y and x ---------------------------------------------------
// What it changes from v1: grad_y and x are read once. A persistent grid of `parts` blocks (as many
// as fit on the chip at once) takes rows parts apart; each block holds its row in registers as
// 16-byte packs (a thread the packs t, t + blockDim.x, ... as the forward's block path), takes both
// row sums with one barrier, writes grad_x with 16-byte stores, and adds g * xhat and g into its
// own column sums in shared memory, where each column's slot belongs to the one thread that holds
// the column (no barrier, no atomics). The next row's loads are issued before this row's barrier,
// so they are in flight while the block waits. At the end each block writes its column sums as one
// row of `partial` ([2][parts][cols]: grad_weight's, then grad_bias's), and
// layernorm_backward_reduce_kernel adds the parts of each column in a fixed order: the same bits on
// every run, as v1's column kernel. Traffic: 3 tensors' worth, plus 2 x parts x cols partials
// written and read (132 x 8192 doubles x 2 x 2 = 35 MB at float32 4096 x 8192, against 403 MB).
// Sums are in Part<T> (double for float and double, float for the 16-bit types, as the statistics);
// the products summed are computed in acc_t and widened once.
template <typename T> using part_t = stat_t<T>;
constexpr int kMaxBwdPacks = 2;
constexpr int kBwdThreads = 512;  // g and x, this row's and the next: 4 x 2 packs a thread in registers
constexpr int kReduceColumns = 32;
constexpr int kReduceGroups = 16;

template <typename T, int kPacks>
__device__ __forceinline__ void load_packs(const T* __restrict__ row, brrr::Pack<T, 16 / sizeof(T)> (&out)[kPacks], int t,
                                           int stride, int packs) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (p < packs) out[k] = reinterpret_cast<const brrr::Pack<T, 16 / sizeof(T)>*>(row)[p];
    }
}

template <typename T, int kPacks>
__global__ void __launch_bounds__(kMaxThreads, 1)
layernorm_backward_fused_kernel(const T* __restrict__ grad_y, const T* __restrict__ x, const T* __restrict__ weight,
                                const stat_t<T>* __restrict__ mean, const stat_t<T>* __restrict__ rstd,
                                T* __restrict__ grad_x, part_t<T>* __restrict__ partial, int64_t rows, int64_t cols) {
    using S = stat_t<T>;
    using A = brrr::acc_t<T>;
    using Q = part_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    // [grad_weight's sums | grad_bias's], element j of pack p at j * packs + p: a warp's 32 threads
    // touch 32 consecutive slots.
    extern __shared__ __align__(16) unsigned char column_sums[];
    // Two slots a warp for each row sum, alternating by row: a thread may write row i + 1's slots while
    // a slower one still reads row i's, and row i + 2's only after all have passed row i + 1's barrier.
    __shared__ S partial_g[2][kMaxThreads / 32];
    __shared__ S partial_gx[2][kMaxThreads / 32];
    const int packs = static_cast<int>(cols / W);
    Q* sum_w = reinterpret_cast<Q*>(column_sums);
    Q* sum_b = sum_w + cols;
    const int t = threadIdx.x;
    const int stride = blockDim.x;
    const int warps = blockDim.x / 32;
    // weight stays packed (16-bit: half the registers of floats) and is widened where used.
    P w[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (p < packs) {
            w[k] = reinterpret_cast<const P*>(weight)[p];
#pragma unroll
            for (int j = 0; j < W; ++j) {
                sum_w[j * packs + p] = Q(0);
                sum_b[j * packs + p] = Q(0);
            }
        }
    }
    P g[kPacks], v[kPacks];
    int64_t row = blockIdx.x;
    if (row < rows) {
        load_packs<T, kPacks>(grad_y + row * cols, g, t, stride, packs);
        load_packs<T, kPacks>(x + row * cols, v, t, stride, packs);
    }
    int parity = 0;
    for (; row < rows; row += gridDim.x) {
        const int64_t next = row + gridDim.x;
        P gn[kPacks], vn[kPacks];
        if (next < rows) {
            load_packs<T, kPacks>(grad_y + next * cols, gn, t, stride, packs);
            load_packs<T, kPacks>(x + next * cols, vn, t, stride, packs);
        }
        const Affine<T> affine(mean[row], rstd[row]);
        A sum_wg = 0;
        A sum_wgx = 0;
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            if (k * stride + t < packs) {
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    const A wg = brrr::to_acc(g[k].v[j]) * brrr::to_acc(w[k].v[j]);
                    sum_wg += wg;
                    sum_wgx += wg * (affine.centred(v[k].v[j]) * affine.r);
                }
            }
        }
        S total_g = brrr::warp_sum(static_cast<S>(sum_wg));
        S total_gx = brrr::warp_sum(static_cast<S>(sum_wgx));
        if (t % 32 == 0) {
            partial_g[parity][t / 32] = total_g;
            partial_gx[parity][t / 32] = total_gx;
        }
        __syncthreads();
        total_g = partial_g[parity][0];
        total_gx = partial_gx[parity][0];
        for (int i = 1; i < warps; ++i) {
            total_g += partial_g[parity][i];
            total_gx += partial_gx[parity][i];
        }
        parity ^= 1;
        const A mean_g = static_cast<A>(total_g / cols);
        const A mean_gx = static_cast<A>(total_gx / cols);
        T* gxr = grad_x + row * cols;
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            const int p = k * stride + t;
            if (p < packs) {
                A out[W];
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    const A gy = brrr::to_acc(g[k].v[j]);
                    const A xhat = affine.centred(v[k].v[j]) * affine.r;
                    out[j] = affine.r * (gy * brrr::to_acc(w[k].v[j]) - mean_g - xhat * mean_gx);
                    sum_w[j * packs + p] += static_cast<Q>(gy * xhat);
                    sum_b[j * packs + p] += static_cast<Q>(gy);
                }
                reinterpret_cast<P*>(gxr)[p] = round_pack<T, W>(out);
            }
        }
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            g[k] = gn[k];
            v[k] = vn[k];
        }
    }
    // This block's row of partial, in packs of W sums (only this thread's own slots are read).
    using QP = brrr::Pack<Q, W>;
    const int64_t parts = gridDim.x;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (p < packs) {
            QP pw, pb;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                pw.v[j] = sum_w[j * packs + p];
                pb.v[j] = sum_b[j * packs + p];
            }
            reinterpret_cast<QP*>(partial + static_cast<int64_t>(blockIdx.x) * cols)[p] = pw;
            reinterpret_cast<QP*>(partial + (parts + blockIdx.x) * cols)[p] = pb;
        }
    }
}

// grad_weight and grad_bias from v2's partials: column c of either is the sum of its `parts` rows,
// kReduceGroups interleaved groups of them summed apart, then the groups in order: fixed, so the
// same bits every run. Block (kReduceColumns, kReduceGroups) over 2 * cols columns (grad_weight's
// then grad_bias's).
template <typename T>
__global__ void layernorm_backward_reduce_kernel(const part_t<T>* __restrict__ partial, T* __restrict__ grad_weight,
                                                 T* __restrict__ grad_bias, int64_t parts, int64_t cols) {
    using S = stat_t<T>;
    brrr::wait_for_prior_grid();  // launched early (programmatic dependent launch): the parts first
    __shared__ S groups[kReduceGroups][kReduceColumns];
    const int64_t c = static_cast<int64_t>(blockIdx.x) * kReduceColumns + threadIdx.x;
    const bool bias_column = c >= cols;
    const int64_t column = bias_column ? c - cols : c;
    const part_t<T>* source = partial + (bias_column ? parts * cols : 0) + column;
    S total = 0;
    if (c < 2 * cols) {
        for (int64_t b = threadIdx.y; b < parts; b += kReduceGroups) total += static_cast<S>(source[b * cols]);
    }
    // Every thread stores, in range or not, so the barrier is reached by the whole block.
    groups[threadIdx.y][threadIdx.x] = total;
    __syncthreads();
    if (threadIdx.y == 0 && c < 2 * cols) {
        for (int k = 1; k < kReduceGroups; ++k) total += groups[k][threadIdx.x];
        (bias_column ? grad_bias : grad_weight)[column] = from_stat<T>(total);
    }
}

// ---- backward v3: rows staged through shared memory by cp.async, column sums in registers -------
// (v3's kernel is in benchmarks/rowwise_variants/layernorm_bench.cu now; v4 below keeps its plan and
// these helpers.) What it changes from v2 (Nsight Compute on v2, bfloat16 4096 x 8192: 1890 GB/s, long_scoreboard
// 5.2 and barrier 3.4 stalls: one row of loads in flight a block, the next issued only as this one
// is reduced; 64 registers for 2 x 512 threads an SM, the column sums in shared memory):
//   - each thread copies its own packs of the next kStages rows (grad_y and x) into its own slots of
//     shared memory with cp.async, kStages - 1 rows ahead of the one it works on: up to kStages rows of
//     loads in flight a block whatever the barriers do, and no registers held for them. A thread only
//     ever reads the slots it wrote itself, so cp.async.wait_group alone orders them (no barrier);
//   - the column sums of weight and bias live in registers (a thread always holds the same columns),
//     not in shared memory: no shared read-modify-write an element;
//   - mean and rstd of the next row are loaded a row ahead;
//   - one block an SM of kPacks packs a thread (persistent grid, `parts` = SMs); the row sums still
//     meet over the block with one barrier a row, two slots a warp alternating by row as v2.
// The partial column sums go out as v2's ([2][parts][cols]) and layernorm_backward_reduce_kernel adds
// them in the same fixed order: deterministic, the same bits every run.
constexpr int kRowsMaxThreads = 1024;  // v3 and v4: the most threads a block of theirs has

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    static_assert(N >= 0 && N <= 3, "wait_group takes an immediate: the cases below");
    if constexpr (N == 0) asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    else if constexpr (N == 1) asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    else if constexpr (N == 2) asm volatile("cp.async.wait_group 2;\n" ::: "memory");
    else asm volatile("cp.async.wait_group 3;\n" ::: "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// (The waits above clobber "memory": the shared loads after them must not be moved before them.)
__device__ __forceinline__ void cp_async16(void* to, const void* from) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(to))),
                 "l"(from));
}

// Row `row`'s packs of this thread, grad_y's then x's, into stage `s` of `stage` ([kStages][2][packs]).
template <typename T, int kPacks>
__device__ __forceinline__ void stage_row(brrr::Pack<T, 16 / sizeof(T)>* stage, const T* __restrict__ grad_y,
                                          const T* __restrict__ x, int64_t row, int64_t cols, int packs, int t,
                                          int stride) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (p < packs) {
            cp_async16(stage + p, grad_y + row * cols + static_cast<int64_t>(p) * (16 / sizeof(T)));
            cp_async16(stage + packs + p, x + row * cols + static_cast<int64_t>(p) * (16 / sizeof(T)));
        }
    }
}

// ---- backward v4: v3 with fewer instructions an element ------------------------------------------
// v3 (rows staged by cp.async, the column sums in registers, a persistent grid of one block of 512 an
// SM) now lives in benchmarks/rowwise_variants/layernorm_bench.cu, which times it beside this.
// Nsight Compute on v3 at 4096 x 8192 on an H200: 63% of DRAM peak at 25% occupancy (114-128
// registers), a warp issuing every 6.1 cycles with 4 warps a scheduler: instructions, not bytes, set
// its pace. What v4 changes, each measured alone on the H200 (benchmarks/results/2026-11-29-h200-
// layernorm-v4, variants-flags.txt; the backward with its reduction, L2 flushed):
//   - weight is held widened (acc_t) for all the block's rows, up to 16 values a thread, where v3 held
//     its packs (or, at 4 packs, read them again every row) and widened every element twice a row;
//   - kFull instances for rows whose threads all hold kPacks packs: no slot tests (the softmax's v4);
//   - the warps' row sums meet by a butterfly over the lanes (lane l reads warp l's slot, then
//     warp_sum), where each thread of v3 added all the slots in turn: 1 shared load and 5 shuffles a
//     sum in place of 16 loads and adds. Every warp runs the same butterfly: the same bits in all;
//   - 16-bit types keep g * w and xhat of the row sums' pass in registers for grad_x's pass (kKeep),
//     so each element is widened and centred once; float and double read them again from shared
//     memory (kept, float's spilled 96 bytes at the 128 registers a 512-thread block allows, and ran
//     23% slower);
//   - grad_x = r * wg - r * mean_g - xhat * (r * mean_gx): two FFMAs an element where v3's
//     r * (wg - mean_g - xhat * mean_gx) took four operations.
// Measured: bfloat16 69.5 -> 65.5 us (68.1% -> 72.3% of copy), float32 144.3 -> 118.2 us (65.6% ->
// 80.1%). Tried and not kept: float sums of 8 rows before the double ones (float32: 156 us, the group
// sums spilled), a third stage (no change), 1024 threads of 1 pack in bfloat16 (66.1 us).
// Same mapping, partial layout and reduction as v3: the numba stage mirrors it as it did v3.
template <typename T, int kPacks, int kStages, int kMaxT, bool kFull>
__global__ void __launch_bounds__(kMaxT, 1)
layernorm_backward_v4_kernel(const T* __restrict__ grad_y, const T* __restrict__ x, const T* __restrict__ weight,
                             const stat_t<T>* __restrict__ mean, const stat_t<T>* __restrict__ rstd,
                             T* __restrict__ grad_x, part_t<T>* __restrict__ partial, int64_t rows, int64_t cols) {
    using S = stat_t<T>;
    brrr::wait_for_prior_grid();  // launched early (programmatic dependent launch): its inputs first
    brrr::allow_dependents();     // the reduction kernel may launch now (it waits for this grid's end)
    using A = brrr::acc_t<T>;
    using Q = part_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    // Up to 16 values a thread (float's 4 packs, bfloat16's 2), weight is held widened and 16-bit rows
    // keep their products; past that (bfloat16's 4 packs) both spilled at the 128 registers a 512-thread
    // block allows, so weight is read again each row (an L1 hit) and nothing is kept, as v3.
    constexpr bool kHoldW = kPacks * W <= 16;
    constexpr bool kKeep = sizeof(T) == 2 && kHoldW;
    extern __shared__ __align__(16) unsigned char staged[];
    __shared__ S partial_g[2][kRowsMaxThreads / 32];
    __shared__ S partial_gx[2][kRowsMaxThreads / 32];
    const int packs = static_cast<int>(cols / W);
    P* stages = reinterpret_cast<P*>(staged);  // [kStages][grad_y | x][packs]
    const int t = threadIdx.x;
    const int stride = blockDim.x;
    const int warps = blockDim.x / 32;
    const int64_t step = gridDim.x;
    const auto holds = [&](int k) { return kFull || k * stride + t < packs; };
    // Fill the pipeline: rows blockIdx.x + i * step into stage i, one commit group each (empty past
    // the last row, so that wait_group's count means the same every iteration).
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
        const int64_t r = blockIdx.x + i * step;
        if (r < rows) stage_row<T, kPacks>(stages + i * 2 * packs, grad_y, x, r, cols, packs, t, stride);
        cp_async_commit();
    }
    A w[kHoldW ? kPacks : 1][W];
    Q sum_w[kPacks][W], sum_b[kPacks][W];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        P wp{};
        if (kHoldW && holds(k)) wp = reinterpret_cast<const P*>(weight)[k * stride + t];
#pragma unroll
        for (int j = 0; j < W; ++j) {
            if constexpr (kHoldW) w[k][j] = brrr::to_acc(wp.v[j]);
            sum_w[k][j] = Q(0);
            sum_b[k][j] = Q(0);
        }
    }
    const auto weight_at = [&](int k, int j) {
        if constexpr (kHoldW) return w[k][j];
        else return brrr::to_acc(reinterpret_cast<const P*>(weight)[k * stride + t].v[j]);
    };
    int64_t row = blockIdx.x;
    S mu = 0, rs = 0;
    if (row < rows) {
        mu = mean[row];
        rs = rstd[row];
    }
    int parity = 0;
    int s = 0;  // the stage holding `row`
    for (; row < rows; row += step) {
        // Row + (kStages - 1) * step goes into the stage freed by the row before this one.
        const int64_t ahead = row + (kStages - 1) * step;
        const int s_ahead = s == 0 ? kStages - 1 : s - 1;
        if (ahead < rows) stage_row<T, kPacks>(stages + s_ahead * 2 * packs, grad_y, x, ahead, cols, packs, t, stride);
        cp_async_commit();
        const int64_t next = row + step;
        S mu_next = 0, rs_next = 0;
        if (next < rows) {
            mu_next = mean[next];
            rs_next = rstd[next];
        }
        // All but the kStages - 1 newest groups have landed: this row's among them.
        cp_async_wait<kStages - 1>();
        const P* here = stages + s * 2 * packs;
        const Affine<T> affine(mu, rs);
        P g[kPacks];
        A wg[kKeep ? kPacks : 1][W], xh[kKeep ? kPacks : 1][W];  // kKeep: this row's g * w and xhat
        A sum_wg = 0, sum_wgx = 0;
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            if (holds(k)) {
                const int p = k * stride + t;
                g[k] = here[p];
                const P v = here[packs + p];
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    const A a = brrr::to_acc(g[k].v[j]) * weight_at(k, j);
                    const A xhat = affine.centred(v.v[j]) * affine.r;
                    sum_wg += a;
                    sum_wgx += a * xhat;
                    if constexpr (kKeep) {
                        wg[k][j] = a;
                        xh[k][j] = xhat;
                    }
                }
            }
        }
        S total_g = brrr::warp_sum(static_cast<S>(sum_wg));
        S total_gx = brrr::warp_sum(static_cast<S>(sum_wgx));
        if (t % 32 == 0) {
            partial_g[parity][t / 32] = total_g;
            partial_gx[parity][t / 32] = total_gx;
        }
        __syncthreads();
        const int lane = t % 32;
        total_g = brrr::warp_sum(lane < warps ? partial_g[parity][lane] : S(0));
        total_gx = brrr::warp_sum(lane < warps ? partial_gx[parity][lane] : S(0));
        parity ^= 1;
        const A r = affine.r;
        const A rg = r * static_cast<A>(total_g / cols);
        const A rgx = r * static_cast<A>(total_gx / cols);
        T* gxr = grad_x + row * cols;
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            if (holds(k)) {
                const int p = k * stride + t;
                P v{};
                if constexpr (!kKeep) {
                    g[k] = here[p];
                    v = here[packs + p];
                }
                A out[W];
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    const A gy = brrr::to_acc(g[k].v[j]);
                    const A a = kKeep ? wg[k][j] : gy * weight_at(k, j);
                    const A xhat = kKeep ? xh[k][j] : affine.centred(v.v[j]) * r;
                    out[j] = r * a - rg - xhat * rgx;
                    sum_w[k][j] += static_cast<Q>(gy * xhat);
                    sum_b[k][j] += static_cast<Q>(gy);
                }
                reinterpret_cast<P*>(gxr)[p] = round_pack<T, W>(out);
            }
        }
        mu = mu_next;
        rs = rs_next;
        s = s + 1 == kStages ? 0 : s + 1;
    }
    cp_async_wait<0>();  // nothing may still be landing in shared memory when the block exits
    using QP = brrr::Pack<Q, W>;
    const int64_t parts = gridDim.x;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        if (holds(k)) {
            const int p = k * stride + t;
            QP pw, pb;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                pw.v[j] = sum_w[k][j];
                pb.v[j] = sum_b[k][j];
            }
            reinterpret_cast<QP*>(partial + static_cast<int64_t>(blockIdx.x) * cols)[p] = pw;
            reinterpret_cast<QP*>(partial + (parts + blockIdx.x) * cols)[p] = pb;
        }
    }
}

// ---- launchers (binding.cpp calls these; it checks shapes and rows < 2^31) --------------------

template <typename T>
static void launch_v1(const T* x, const T* weight, const T* bias, T* y, stat_t<T>* mean, stat_t<T>* rstd, int64_t rows,
                      int64_t cols, stat_t<T> eps, cudaStream_t stream) {
    brrr::launch_early(layernorm_forward_kernel<T>, dim3(static_cast<unsigned int>(rows)), dim3(kThreads), 0, stream, x,
                       weight, bias, y, mean, rstd, cols, eps);
}

template <typename T, int kPacks>
static void launch_warp(const T* x, const T* weight, const T* bias, T* y, stat_t<T>* mean, stat_t<T>* rstd,
                        int64_t rows, int64_t cols, stat_t<T> eps, cudaStream_t stream) {
    brrr::launch_early(layernorm_forward_warp_kernel<T, kPacks>, dim3(brrr::blocks_for(rows, kWarpRows)),
                       dim3(32, kWarpRows), 0, stream, x, weight, bias, y, mean, rstd, rows, cols, eps);
}

template <typename T, int kPacks, int kMaxT = kMaxThreads, int kMinBlocks = 0>
static void launch_block(const T* x, const T* weight, const T* bias, T* y, stat_t<T>* mean, stat_t<T>* rstd,
                         int64_t rows, int64_t cols, int64_t packs, stat_t<T> eps, cudaStream_t stream) {
    const int threads = static_cast<int>((packs + kPacks - 1) / kPacks + 31) / 32 * 32;
    const unsigned int grid = static_cast<unsigned int>(rows);
    const auto kernel = packs == static_cast<int64_t>(kPacks) * threads
                            ? layernorm_forward_block_kernel<T, kPacks, true, kMaxT, kMinBlocks>
                            : layernorm_forward_block_kernel<T, kPacks, false, kMaxT, kMinBlocks>;
    brrr::launch_early(kernel, dim3(grid), dim3(threads), 0, stream, x, weight, bias, y, mean, rstd, cols, eps);
}

// 16-bit rows of 513-1024 packs: 8 packs a thread, at most 128 threads, 6 blocks an SM (80 registers).
// The 1024-thread bound held every instance to 64 registers, where 8 packs of bfloat16 spilled, so
// these rows took 4 packs and 256 threads: 4 rows an SM. Measured on an H200 at 4096 x 8192 bfloat16
// (benchmarks/results/2026-11-29-h200-layernorm-v4, variants-bounded.txt): 40.0 -> 38.9 us (79.0% ->
// 81.3% of copy); 6 rows an SM hold more of the row loads in flight. 8 blocks (64 registers) spilled
// and ran at 41%; 16 packs x 64 threads at 75%; float32 gained nothing from any bound (89.0-89.2%).
constexpr int kNarrowPacks = 8;
constexpr int kNarrowThreads = 128;
constexpr int kNarrowBlocks = 6;

// S is stat_t<T>, spelled out so binding.cpp can declare this without kernel.cu's traits.
template <typename T, typename S>
void layernorm_forward(const T* x, const T* weight, const T* bias, T* y, S* mean, S* rstd, int64_t rows, int64_t cols,
                       double eps, cudaStream_t stream) {
    static_assert(kSame<S, stat_t<T>>, "mean and rstd have the statistics' type");
    if (rows == 0 || cols == 0) return;
    constexpr int W = 16 / sizeof(T);
    const int64_t packs = cols / W;
    // cols a whole number of packs and x 16-byte aligned put every row on a 16-byte boundary.
    const bool packed = cols % W == 0 && brrr::aligned16(x) && brrr::aligned16(weight) && brrr::aligned16(bias) &&
                        brrr::aligned16(y);
    const S e = static_cast<S>(eps);
    if (packed && packs <= 32 * kWarpPacks) {
        static_assert(kWarpPacks == 4, "the cases below cover 1, 2 and 4 packs a lane");
        if (packs <= 32) launch_warp<T, 1>(x, weight, bias, y, mean, rstd, rows, cols, e, stream);
        else if (packs <= 64) launch_warp<T, 2>(x, weight, bias, y, mean, rstd, rows, cols, e, stream);
        else launch_warp<T, 4>(x, weight, bias, y, mean, rstd, rows, cols, e, stream);
    } else if (packed && packs <= static_cast<int64_t>(kMaxThreads) * kMaxPacks<T>) {
        if constexpr (sizeof(T) == 2) {
            if (packs > 2 * kTargetThreads && packs <= kNarrowPacks * kNarrowThreads) {
                launch_block<T, kNarrowPacks, kNarrowThreads, kNarrowBlocks>(x, weight, bias, y, mean, rstd, rows, cols,
                                                                            packs, e, stream);
                return;
            }
        }
        if (packs <= 2 * kTargetThreads) {
            launch_block<T, 2>(x, weight, bias, y, mean, rstd, rows, cols, packs, e, stream);
        } else if (kMaxPacks<T> == 4 || packs <= 4 * kTargetThreads) {
            launch_block<T, 4>(x, weight, bias, y, mean, rstd, rows, cols, packs, e, stream);
        } else if constexpr (kMaxPacks<T> == 8) {
            launch_block<T, 8>(x, weight, bias, y, mean, rstd, rows, cols, packs, e, stream);
        }
    } else {
        launch_v1<T>(x, weight, bias, y, mean, rstd, rows, cols, e, stream);
    }
}

// The first version, whatever the row: kept so brrr bench can time it beside forward.
template <typename T, typename S>
void layernorm_forward_v1(const T* x, const T* weight, const T* bias, T* y, S* mean, S* rstd, int64_t rows,
                          int64_t cols, double eps, cudaStream_t stream) {
    static_assert(kSame<S, stat_t<T>>, "mean and rstd have the statistics' type");
    if (rows == 0 || cols == 0) return;
    launch_v1<T>(x, weight, bias, y, mean, rstd, rows, cols, static_cast<S>(eps), stream);
}

// v2's packs a thread for a row of `packs` 16-byte packs, 0 where v2 cannot take the row: the row
// must fit in kMaxThreads threads of kMaxBwdPacks packs, and its column sums in shared memory.
template <typename T>
static int fused_packs(int64_t cols) {
    constexpr int W = 16 / sizeof(T);
    if (cols == 0 || cols % W != 0) return 0;
    const int64_t packs = cols / W;
    const int limit = brrr::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    if (2 * cols * static_cast<int64_t>(sizeof(part_t<T>)) > limit) return 0;
    // Up to kBwdThreads threads a pack each; beyond, 2 packs a thread (up to kMaxThreads): a block of
    // 512 leaves room for two on an SM, whose barriers then overlap (bfloat16 at 8192 columns: one
    // block of 1024 threads an SM ran the backward at 52% of copy).
    if (packs <= kBwdThreads) return 1;
    if (packs <= static_cast<int64_t>(kMaxThreads) * kMaxBwdPacks) return 2;
    return 0;
}

template <typename T, int kPacks>
static int64_t fused_parts(int64_t rows, int64_t cols, int threads, size_t smem) {
    const int64_t resident = static_cast<int64_t>(brrr::device_attribute(cudaDevAttrMultiProcessorCount)) *
                             brrr::blocks_per_sm(layernorm_backward_fused_kernel<T, kPacks>, threads, smem);
    return rows < resident ? rows : resident;
}

struct FusedShape {
    int packs_per_thread, threads;
    size_t smem;
};

template <typename T>
static FusedShape fused_shape(int64_t cols) {
    constexpr int W = 16 / sizeof(T);
    const int k = fused_packs<T>(cols);
    if (k == 0) return {0, 0, 0};
    const int64_t packs = cols / W;
    const int threads = static_cast<int>((packs + k - 1) / k + 31) / 32 * 32;
    return {k, threads, static_cast<size_t>(2 * cols) * sizeof(part_t<T>)};
}

// v4's shape for a row of `cols` (v3's): packs a thread (1, 2 or 4, as few as keep the block within
// kV4Threads; 0 where v4 cannot take the row: not whole packs, or longer than 4 x kV4Threads packs, or
// its kV4Stages rows of grad_y and x past the shared memory a block may have), threads, shared bytes.
// Measured on an H100 at 4096 x 8192 (benchmarks/results/2026-11-25-h100-rowwise, variants.txt): v3 at
// 512 threads of 2 packs (bfloat16) or 4 (float32) ran the backward at 80.5% and 77.6% of copy; 1024
// of 1 or 2 at 68.4% and 73.5%; a third or fourth stage changed nothing beyond the runs' spread. v4 on
// an H200: the same (2026-11-29-h200-layernorm-v4).
constexpr int kV4Threads = 512;
constexpr int kV4Stages = 2;

template <typename T>
static FusedShape v4_shape(int64_t cols) {
    constexpr int W = 16 / sizeof(T);
    if (cols == 0 || cols % W != 0) return {0, 0, 0};
    const int64_t packs = cols / W;
    const int limit = brrr::device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin);
    const int64_t smem = static_cast<int64_t>(kV4Stages) * 2 * packs * 16;
    if (smem > limit) return {0, 0, 0};
    int k = 0;
    for (int c : {1, 2, 4}) {
        if (k == 0 && packs <= static_cast<int64_t>(c) * kV4Threads) k = c;
    }
    if (k == 0) return {0, 0, 0};
    const int threads = static_cast<int>((packs + k - 1) / k + 31) / 32 * 32;
    return {k, threads, static_cast<size_t>(smem)};
}

// Whether every thread of v4's shape holds all its packs: the kFull instance.
template <typename T>
static bool v4_full(int64_t cols, const FusedShape& f) {
    return cols / (16 / static_cast<int64_t>(sizeof(T))) == static_cast<int64_t>(f.packs_per_thread) * f.threads;
}

// v4's blocks: as many as fit on the chip at once (either instance), at most one a row.
template <typename T, int kPacks>
static int64_t v4_parts(int64_t rows, const FusedShape& f) {
    const auto full = layernorm_backward_v4_kernel<T, kPacks, kV4Stages, kV4Threads, true>;
    const auto any = layernorm_backward_v4_kernel<T, kPacks, kV4Stages, kV4Threads, false>;
    const int per_sm = std::min(brrr::blocks_per_sm(full, f.threads, f.smem), brrr::blocks_per_sm(any, f.threads, f.smem));
    const int64_t resident = static_cast<int64_t>(brrr::device_attribute(cudaDevAttrMultiProcessorCount)) * per_sm;
    return rows < resident ? rows : resident;
}

template <typename T>
static int64_t v4_parts_for(int64_t rows, const FusedShape& f) {
    if (f.packs_per_thread == 1) return v4_parts<T, 1>(rows, f);
    if (f.packs_per_thread == 2) return v4_parts<T, 2>(rows, f);
    return v4_parts<T, 4>(rows, f);
}

// What the backward's kernels read and write, for the launchers below.
template <typename T>
struct BackwardArgs {
    const T *grad_y, *x, *weight;
    const stat_t<T> *mean, *rstd;
    T* grad_x;
    part_t<T>* partial;
    int64_t rows, cols;
};

// v4 and its reduction launch early (brrr::launch_early; the forward's kernels and v4 allow it from
// their start). Measured on an H200 at 4096 x 8192: the reduction so, the backward bfloat16 65.9 -> 64.3
// us, float32 117.5 -> 116.5 us (benchmarks/results/2026-11-29-h200-layernorm-pdl); v4 too, after the
// forward, forward+backward bfloat16 100.2 -> 98.0 us, float32 184.3 -> 182.5 (-pdl-v4).
template <typename T, int kPacks>
static void launch_v4(const BackwardArgs<T>& a, const FusedShape& f, unsigned int grid, cudaStream_t stream) {
    const auto kernel = v4_full<T>(a.cols, f) ? layernorm_backward_v4_kernel<T, kPacks, kV4Stages, kV4Threads, true>
                                              : layernorm_backward_v4_kernel<T, kPacks, kV4Stages, kV4Threads, false>;
    brrr::allow_shared(kernel, f.smem);
    brrr::launch_early(kernel, dim3(grid), dim3(f.threads), f.smem, stream, a.grad_y, a.x, a.weight, a.mean, a.rstd, a.grad_x,
                 a.partial, a.rows, a.cols);
}

// The reduction of v4's (or v2's) parts: its first line waits for the kernel before it.
template <typename T>
static void launch_reduce(const part_t<T>* partial, T* grad_weight, T* grad_bias, int64_t parts, int64_t cols,
                          cudaStream_t stream) {
    brrr::launch_early(layernorm_backward_reduce_kernel<T>, dim3(brrr::blocks_for(2 * cols, kReduceColumns)),
                 dim3(kReduceColumns, kReduceGroups), 0, stream, partial, grad_weight, grad_bias, parts, cols);
}

// Elements of part_t<T> scratch the backward needs at [rows, cols] (binding.cpp allocates them): the
// partial sums of v4, or of v2 where v4 does not take the row, or 0 where neither runs (v1 needs none).
template <typename T>
int64_t layernorm_backward_scratch(int64_t rows, int64_t cols) {
    if (rows == 0) return 0;
    const FusedShape v4 = v4_shape<T>(cols);
    if (v4.packs_per_thread != 0) return 2 * v4_parts_for<T>(rows, v4) * cols;
    const FusedShape f = fused_shape<T>(cols);
    if (f.packs_per_thread == 0) return 0;
    const int64_t parts = f.packs_per_thread == 1 ? fused_parts<T, 1>(rows, cols, f.threads, f.smem)
                                                  : fused_parts<T, 2>(rows, cols, f.threads, f.smem);
    return 2 * parts * cols;
}

template <typename T, typename S>
static void backward_v1(const T* grad_y, const T* x, const T* weight, const S* mean, const S* rstd, T* grad_x,
                        T* grad_weight, T* grad_bias, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (rows > 0 && cols > 0) {
        layernorm_backward_x_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(grad_y, x, weight, mean,
                                                                                                rstd, grad_x, cols);
    }
    // With no rows the column sums are empty sums: the kernel writes their zeros.
    if (cols > 0) {
        // One row group a row, up to kRowGroups: a one-row input runs 32 threads a block, not 512.
        const unsigned int groups = static_cast<unsigned int>(rows < kRowGroups ? (rows > 0 ? rows : 1) : kRowGroups);
        layernorm_backward_weight_kernel<T><<<brrr::blocks_for(cols, kColumns), dim3(kColumns, groups), 0, stream>>>(
            grad_y, x, mean, rstd, grad_weight, grad_bias, rows, cols);
    }
}

// scratch: layernorm_backward_scratch<T>(rows, cols) elements (nullptr if that is 0).
template <typename T, typename S>
void layernorm_backward(const T* grad_y, const T* x, const T* weight, const S* mean, const S* rstd, T* grad_x,
                        T* grad_weight, T* grad_bias, S* scratch, int64_t rows, int64_t cols, cudaStream_t stream) {
    static_assert(kSame<S, stat_t<T>>, "mean and rstd have the statistics' type");
    const FusedShape f = fused_shape<T>(cols);
    const bool aligned = brrr::aligned16(grad_y) && brrr::aligned16(x) && brrr::aligned16(weight) &&
                         brrr::aligned16(grad_x) && brrr::aligned16(scratch);
    const FusedShape v4 = v4_shape<T>(cols);
    if ((f.packs_per_thread == 0 && v4.packs_per_thread == 0) || rows == 0 || scratch == nullptr || !aligned) {
        backward_v1(grad_y, x, weight, mean, rstd, grad_x, grad_weight, grad_bias, rows, cols, stream);
        return;
    }
    int64_t parts;
    if (v4.packs_per_thread != 0) {
        parts = v4_parts_for<T>(rows, v4);
        const BackwardArgs<T> args{grad_y, x, weight, mean, rstd, grad_x, scratch, rows, cols};
        const unsigned int grid = static_cast<unsigned int>(parts);
        if (v4.packs_per_thread == 1) launch_v4<T, 1>(args, v4, grid, stream);
        else if (v4.packs_per_thread == 2) launch_v4<T, 2>(args, v4, grid, stream);
        else launch_v4<T, 4>(args, v4, grid, stream);
    } else if (f.packs_per_thread == 1) {
        parts = fused_parts<T, 1>(rows, cols, f.threads, f.smem);
        brrr::allow_shared(layernorm_backward_fused_kernel<T, 1>, f.smem);
        layernorm_backward_fused_kernel<T, 1><<<static_cast<unsigned int>(parts), f.threads, f.smem, stream>>>(
            grad_y, x, weight, mean, rstd, grad_x, scratch, rows, cols);
    } else {
        parts = fused_parts<T, 2>(rows, cols, f.threads, f.smem);
        brrr::allow_shared(layernorm_backward_fused_kernel<T, 2>, f.smem);
        layernorm_backward_fused_kernel<T, 2><<<static_cast<unsigned int>(parts), f.threads, f.smem, stream>>>(
            grad_y, x, weight, mean, rstd, grad_x, scratch, rows, cols);
    }
    launch_reduce<T>(scratch, grad_weight, grad_bias, parts, cols, stream);
}

// v1 whatever the row, for brrr bench to time beside backward.
template <typename T, typename S>
void layernorm_backward_v1(const T* grad_y, const T* x, const T* weight, const S* mean, const S* rstd, T* grad_x,
                           T* grad_weight, T* grad_bias, int64_t rows, int64_t cols, cudaStream_t stream) {
    static_assert(kSame<S, stat_t<T>>, "mean and rstd have the statistics' type");
    backward_v1(grad_y, x, weight, mean, rstd, grad_x, grad_weight, grad_bias, rows, cols, stream);
}

// The dtypes binding.cpp dispatches to, each with its statistics' type.
#define LAYERNORM_INSTANTIATE(T, S)                                                                                  \
    template void layernorm_forward(const T*, const T*, const T*, T*, S*, S*, int64_t, int64_t, double, cudaStream_t); \
    template void layernorm_forward_v1(const T*, const T*, const T*, T*, S*, S*, int64_t, int64_t, double,            \
                                       cudaStream_t);                                                                \
    template void layernorm_backward(const T*, const T*, const T*, const S*, const S*, T*, T*, T*, S*, int64_t,      \
                                     int64_t, cudaStream_t);                                                        \
    template void layernorm_backward_v1(const T*, const T*, const T*, const S*, const S*, T*, T*, T*, int64_t,       \
                                        int64_t, cudaStream_t);                                                     \
    template int64_t layernorm_backward_scratch<T>(int64_t, int64_t);
LAYERNORM_INSTANTIATE(float, double)
LAYERNORM_INSTANTIATE(double, double)
LAYERNORM_INSTANTIATE(__nv_bfloat16, float)
LAYERNORM_INSTANTIATE(__half, float)
