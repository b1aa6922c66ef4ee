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
// v1 reads each row three times (mean, centred squares, y; the second and third from L1/L2 when the
// row is still there), one element a thread a step. v2 loads the row once into registers as
// 16-byte packs, takes both statistics from there and writes y with 16-byte stores; rows that do
// not fit (too long, a width that is not a whole number of packs, a pointer off 16 bytes) still
// take v1, which handles any row. The launcher layernorm_forward chooses.
#include "brrr_kernel.cuh"

constexpr int kThreads = 256;  // v1 and backward: a multiple of 32, the reduction works in whole warps
constexpr int kWarps = kThreads / 32;
constexpr int kColumns = 32;   // weight-gradient kernel: a warp reads 32 neighbouring columns of a row
constexpr int kRowGroups = 16; // ... and 16 warps split the rows: each column's walk down them is 16x shorter

// v2's register paths. A thread holds up to kMaxPacks<T> 16-byte packs of its row: 8 for float
// and double (32 registers); 4 for bfloat16, whose 32 values the compiler keeps as floats (8 packs
// spilled 224 bytes). Rows of up to kWarpPacks * 32 packs take a warp each (no barrier at all),
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
    using S = stat_t<T>;
    __shared__ S partial[kWarps];
    const int64_t row = blockIdx.x;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    S total = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) total += to_stat(xr[c]);
    const S mu = block_sum(total, partial) / cols;
    // Second pass over the row (from L1/L2) for the centred sum of squares: E[x^2] - E[x]^2 would cancel.
    S squares = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
        const S d = to_stat(xr[c]) - mu;
        squares += d * d;
    }
    const S r = S(1) / sqrt(block_sum(squares, partial) / cols + eps);
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
    __device__ __forceinline__ A operator()(T x, T w, T b) const {
        A d = brrr::to_acc(x) - hi;
        if constexpr (!kSame<A, stat_t<T>>) d -= lo;  // lo is exactly 0 when A holds the mean whole
        return d * r * brrr::to_acc(w) + brrr::to_acc(b);
    }
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

// One row, by the `stride` threads that share it (t = 0 .. stride - 1): thread t holds packs
// t, t + stride, ..., up to kPacks of them, those at or past `packs` not loaded and never used.
// Every thread of a block reaches both row_sum calls: nothing returns before them.
template <typename T, int kPacks, bool kWholeBlock>
__device__ __forceinline__ void normalise_row(const T* __restrict__ xr, const T* __restrict__ weight,
                                              const T* __restrict__ bias, T* __restrict__ yr,
                                              stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                              int packs, int64_t cols, stat_t<T> eps, int t, int stride,
                                              stat_t<T>* partial_sum, stat_t<T>* partial_squares) {
    using S = stat_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    P v[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (p < packs) v[k] = reinterpret_cast<const P*>(xr)[p];
    }
    // Each pack summed apart, then the packs: chains of W and kPacks dependent adds, not W * kPacks.
    S total = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        if (k * stride + t < packs) {
            S s = to_stat(v[k].v[0]);
#pragma unroll
            for (int j = 1; j < W; ++j) s += to_stat(v[k].v[j]);
            total += s;
        }
    }
    const S mu = row_sum<kWholeBlock>(total, partial_sum) / cols;
    // Centred squares from the same registers: two passes, never E[x^2] - E[x]^2, which cancels.
    S squares = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        if (k * stride + t < packs) {
            S s = 0;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                const S d = to_stat(v[k].v[j]) - mu;
                s += d * d;
            }
            squares += s;
        }
    }
    const S r = S(1) / sqrt(row_sum<kWholeBlock>(squares, partial_squares) / cols + eps);
    const Affine<T> affine(mu, r);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (p < packs) {
            const P w = reinterpret_cast<const P*>(weight)[p];
            const P b = reinterpret_cast<const P*>(bias)[p];
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
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRows + threadIdx.y;
    // A whole warp leaves together, and the warp path has no block barrier to miss.
    if (row >= rows) return;
    const int packs = static_cast<int>(cols / (16 / sizeof(T)));
    normalise_row<T, kPacks, false>(x + row * cols, weight, bias, y + row * cols, mean + row, rstd + row, packs, cols,
                                    eps, threadIdx.x, 32, nullptr, nullptr);
}

// Longer rows: one block per row, blockDim.x a multiple of 32 with blockDim.x * kPacks >= packs.
template <typename T, int kPacks>
__global__ void __launch_bounds__(kMaxThreads)
layernorm_forward_block_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                               T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                               int64_t cols, stat_t<T> eps) {
    __shared__ stat_t<T> partial_sum[kMaxThreads / 32];
    __shared__ stat_t<T> partial_squares[kMaxThreads / 32];
    const int64_t row = blockIdx.x;
    const int packs = static_cast<int>(cols / (16 / sizeof(T)));
    normalise_row<T, kPacks, true>(x + row * cols, weight, bias, y + row * cols, mean + row, rstd + row, packs, cols,
                                   eps, threadIdx.x, blockDim.x, partial_sum, partial_squares);
}

// ---- backward (v1 for now) -------------------------------------------------------------------

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

// Block (kColumns, kRowGroups): thread (tx, ty) sums rows ty, ty + kRowGroups, ... of column
// blockIdx.x * kColumns + tx, then the ty == 0 thread adds the kRowGroups partials in order. No
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
        for (int64_t row = threadIdx.y; row < rows; row += kRowGroups) {
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
        for (int k = 1; k < kRowGroups; ++k) {
            gw += partial_w[k][threadIdx.x];
            gb += partial_b[k][threadIdx.x];
        }
        grad_weight[c] = from_stat<T>(gw);
        grad_bias[c] = from_stat<T>(gb);
    }
}

// ---- launchers (binding.cpp calls these; it checks shapes and rows < 2^31) --------------------

template <typename T>
static void launch_v1(const T* x, const T* weight, const T* bias, T* y, stat_t<T>* mean, stat_t<T>* rstd, int64_t rows,
                      int64_t cols, stat_t<T> eps, cudaStream_t stream) {
    layernorm_forward_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(x, weight, bias, y, mean, rstd,
                                                                                         cols, eps);
}

template <typename T, int kPacks>
static void launch_warp(const T* x, const T* weight, const T* bias, T* y, stat_t<T>* mean, stat_t<T>* rstd,
                        int64_t rows, int64_t cols, stat_t<T> eps, cudaStream_t stream) {
    layernorm_forward_warp_kernel<T, kPacks><<<brrr::blocks_for(rows, kWarpRows), dim3(32, kWarpRows), 0, stream>>>(
        x, weight, bias, y, mean, rstd, rows, cols, eps);
}

template <typename T, int kPacks>
static void launch_block(const T* x, const T* weight, const T* bias, T* y, stat_t<T>* mean, stat_t<T>* rstd,
                         int64_t rows, int64_t cols, int64_t packs, stat_t<T> eps, cudaStream_t stream) {
    const int threads = static_cast<int>((packs + kPacks - 1) / kPacks + 31) / 32 * 32;
    layernorm_forward_block_kernel<T, kPacks><<<static_cast<unsigned int>(rows), threads, 0, stream>>>(
        x, weight, bias, y, mean, rstd, cols, eps);
}

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

template <typename T, typename S>
void layernorm_backward(const T* grad_y, const T* x, const T* weight, const S* mean, const S* rstd, T* grad_x,
                        T* grad_weight, T* grad_bias, int64_t rows, int64_t cols, cudaStream_t stream) {
    static_assert(kSame<S, stat_t<T>>, "mean and rstd have the statistics' type");
    if (rows > 0 && cols > 0) {
        layernorm_backward_x_kernel<T><<<static_cast<unsigned int>(rows), kThreads, 0, stream>>>(grad_y, x, weight, mean,
                                                                                                rstd, grad_x, cols);
    }
    // With no rows the column sums are empty sums: the kernel writes their zeros.
    if (cols > 0) {
        layernorm_backward_weight_kernel<T><<<brrr::blocks_for(cols, kColumns), dim3(kColumns, kRowGroups), 0, stream>>>(
            grad_y, x, mean, rstd, grad_weight, grad_bias, rows, cols);
    }
}

// The dtypes binding.cpp dispatches to, each with its statistics' type.
#define LAYERNORM_INSTANTIATE(T, S)                                                                                  \
    template void layernorm_forward(const T*, const T*, const T*, T*, S*, S*, int64_t, int64_t, double, cudaStream_t); \
    template void layernorm_forward_v1(const T*, const T*, const T*, T*, S*, S*, int64_t, int64_t, double,            \
                                       cudaStream_t);                                                                \
    template void layernorm_backward(const T*, const T*, const T*, const S*, const S*, T*, T*, T*, int64_t, int64_t,  \
                                     cudaStream_t);
LAYERNORM_INSTANTIATE(float, double)
LAYERNORM_INSTANTIATE(double, double)
LAYERNORM_INSTANTIATE(__nv_bfloat16, float)
