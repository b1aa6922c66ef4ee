// Softmax over the last dim, CUDA C stage. Each row is read from HBM once and written once: its
// threads hold the whole row in registers through both reductions (max, then sum of exp), then
// write y from those registers. Rows longer than the registers can hold fall back to v1.
//
// Napkin math: a float32 4096 x 8192 forward reads 128 MiB and writes 128 MiB, 90.7 us at the
// 2.96 TB/s an H100 copies (45.3 us in bfloat16). 80% of copy is 113 us (57 us bfloat16). A row
// of 8192 floats is 32 KiB: 256 threads x 8 packs of 16 bytes, 32 floats of registers a thread
// (61 registers in all, so 4 such blocks fit an SM's 64K registers): ~128 KiB of loads in flight
// per SM, well above the ~20 KiB that Little's law asks for at ~1 us of loaded latency. What it
// cannot hide: 4096 rows over 132 SMs is 31.03 rows an SM, so the busiest SMs do 32 (~3%).
// Measured on an H100, 4096 x 8192 forward (benchmarks/results/2026-11-23-h100-bench2):
//   torch eager:                                        0.150 ms float32 (59.7%), 0.141 ms bf16 (31.9%)
//   v1, one block per row, 3 strided passes over x:     0.133 ms float32 (67.4%), 0.079 ms bf16 (56.7%)
//   v2, row in registers, 16-byte packs (this file):    0.095 ms float32 (94.5%), 0.055 ms bf16 (82.2%)
// (benchmarks/sweep.py softmax: 16 slots a thread and exp2f were within 2% of this either way.)
//   v3, 16-bit rows kept as loaded (kRaw below): bfloat16 forward 45.1 us, backward 68.4 us, 50 and 56
//       registers (Nsight Compute, --clock-control none, benchmarks/results/2026-11-24-h100-perf/run2;
//       v2's forward+backward took 141.6 us of GPU time in run1's probe); do_bench, L2 flushed: forward
//       50 us (run3).
//   v4, this file now: two changes, both measured on an H200 against v3 in one process
//       (benchmarks/rowwise_variants/softmax_bench.cu, benchmarks/results/2026-11-29-h200-softmax-variants):
//       - rows whose threads all hold exactly P packs (cols == P x W x tpr, 8192 among them) take a
//         kFull instance with no per-slot predicates: v3's `k < mine` tests and pointer walks were half
//         of the 16-bit kernels' instructions (SASS: 1080 in the forward, against 384 without them);
//       - the 16-bit forward takes its max on the raw pairs (HMNMX2, exact: 4 elements an instruction
//         instead of 2 widen-and-max pairs) and keeps the 32 exps as floats for the store instead of
//         taking each exp twice.
//       bfloat16 forward 71% -> 86% of copy, backward 78% -> 92%; float32 forward 88% -> 91%.
//   v4 launched early (brrr::launch_early, forward and backward; each kernel waits for the kernel
//       before it first): on an H200, brrr bench in one process against the same files without it,
//       two runs in opposite orders: bfloat16 forward 37.4-37.5 -> 35.7-35.8 us (88.4% of copy),
//       float32 69.0-69.1 -> 67.1-67.2 us (94.2%); forward+backward bfloat16 88.1-88.3 -> 84.6-84.7 us.
//       After a torch kernel that does not allow it, 1.3-1.6 us a call as well
//       (benchmarks/results/2026-11-30-h200-launch-early).
//
// v1 reads x three times (max, sum, write), one element a load; it is kept as forward_v1, and
// as the path for rows too long for registers (more than 1024 threads x kSlots elements).
//
// 64-bit indices: rows * cols passes 2^31 long before memory runs out (within a row, int is
// enough: the register path takes at most 32768 columns).
#include <cstdint>
#include <limits>
#include <type_traits>

#include "brrr_kernel.cuh"

// Elements of a row that one thread holds, as acc_t: 32 floats (32 registers), or 8 doubles (16
// registers: double's exp needs the rest to stay within 64 registers without spilling).
template <typename T>
constexpr int kSlots = sizeof(T) == 8 ? 8 : 32;
// v3: 16-bit rows of whole packs keep their 32 elements a thread as loaded (4 packs, 16 registers;
// the backward 2 x 16), widened where used. v2 widened them on load: the backward's two rows took
// 100 registers (2 blocks of 256 threads an SM, 64 bytes of loads in flight a thread, half of
// float32's), bfloat16 82% of copy forward and 77% forward+backward. The forward then takes exp twice
// (__expf, 2 instructions) rather than keep 32 floats. (64 raw slots a thread spilled in bfloat16.)
template <typename T, int W>
constexpr bool kRaw = sizeof(T) == 2 && W > 1;
template <typename T, int W>
constexpr int kSlotsFor = kSlots<T>;

// Threads per row in the register path are a multiple of 32 up to this: forward's 32 slots plus
// indexing fit the 64 registers a thread of a 1024-thread block may have.
constexpr int kMaxRowThreads = 1024;
// Backward holds two rows (grad_y and y), twice the registers: at most 512 threads a row then.
constexpr int kMaxRowThreadsBackward = 512;
// Short rows share a block: 4 rows of a warp each, or 2 of 64 threads (a warp alone would leave
// SMs short of threads, at 32 blocks an SM).
constexpr int kMinBlockThreads = 128;

// exp of a non-positive number in acc_t. The 16-bit types round the result to 8 or 11 bits, so
// the 2-instruction __expf (a few ulp of float) is exact enough there; float and double keep the
// libm-accurate exp their tolerances (1e-5, 1e-10 relative) are set for.
template <typename T>
__device__ __forceinline__ brrr::acc_t<T> exp_acc(brrr::acc_t<T> d) { return exp(d); }
template <>
__device__ __forceinline__ float exp_acc<__half>(float d) { return __expf(d); }
template <>
__device__ __forceinline__ float exp_acc<__nv_bfloat16>(float d) { return __expf(d); }

// Element j of a 16-bit pack as float, and W floats rounded into a pack. bfloat16 by its bits (the
// top half of a float; two conversions of a pair round at once), which ptxas keeps packed until use.
template <typename T, int W>
__device__ __forceinline__ float widen(const brrr::Pack<T, W>& p, int j) {
    if constexpr (sizeof(T) == 2 && !std::is_same_v<T, __half>) {
        const uint32_t two = reinterpret_cast<const uint32_t*>(p.v)[j / 2];
        return __uint_as_float(j % 2 == 0 ? two << 16 : two & 0xffff0000u);
    } else {
        return brrr::to_acc(p.v[j]);
    }
}

template <typename T, int W>
__device__ __forceinline__ brrr::Pack<T, W> narrow(const brrr::acc_t<T> (&a)[W]) {
    brrr::Pack<T, W> out;
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
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

// The running max of a 16-bit row over the raw pairs of a pack: HMNMX2 is exact and, as max() on
// floats does, returns the other operand where one is NaN (a NaN still reaches the row through its
// exp). Widened once, at the end (pair_max_float).
template <typename T>
using Pair = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;

template <typename T, int W>
__device__ __forceinline__ Pair<T> pair_max(Pair<T> m, const brrr::Pack<T, W>& p) {
    const Pair<T>* two = reinterpret_cast<const Pair<T>*>(p.v);
#pragma unroll
    for (int q = 0; q < W / 2; ++q) m = __hmax2(m, two[q]);
    return m;
}

template <typename T>
__device__ __forceinline__ Pair<T> pair_lowest() {
    Pair<T> m;
    m.x = m.y = brrr::from_acc<T>(-std::numeric_limits<float>::infinity());
    return m;
}

template <typename T>
__device__ __forceinline__ float pair_max_float(Pair<T> m) {
    return max(brrr::to_acc(m.x), brrr::to_acc(m.y));
}

// Reductions over the `tpr` threads of one row (a multiple of 32; a block holds blockDim.x / tpr
// rows), returned to all of them. A warp-per-row launch (tpr == 32) needs no shared memory and no
// barrier; tpr is a kernel argument, so the early return is uniform over the block and every
// thread meets every __syncthreads() or none does. The per-warp values are folded in one fixed
// order by every thread, so all threads, and all runs, agree bit for bit. Each reduction of a
// kernel gets its own `part` array, so no barrier is needed between one reduction's reads and
// the next one's writes.
template <typename A>
__device__ __forceinline__ A row_max(A v, A* part, int tpr) {
    v = brrr::warp_max(v);
    if (tpr == 32) return v;
    const int first = threadIdx.x / tpr * (tpr / 32);  // the first warp of this thread's row
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
    __syncthreads();
    A r = part[first];
    for (int w = 1; w < tpr / 32; ++w) r = max(r, part[first + w]);
    return r;
}

template <typename A>
__device__ __forceinline__ A row_sum(A v, A* part, int tpr) {
    v = brrr::warp_sum(v);
    if (tpr == 32) return v;
    const int first = threadIdx.x / tpr * (tpr / 32);
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
    __syncthreads();
    A r = part[first];
    for (int w = 1; w < tpr / 32; ++w) r += part[first + w];
    return r;
}

// v2. W = 16 / sizeof(T) (16-byte packs) when every row starts 16-byte aligned, W = 1 otherwise.
// Thread `lane` of a row owns packs lane, lane + tpr, lane + 2 tpr, ... (P slots), so each warp
// access covers 32 consecutive packs. A thread's valid slots are a prefix (k < mine, none for a
// row past the last, in a block's last rows): the rest are never loaded, used or stored, yet
// their threads still meet both barriers. The slot loops are unrolled, so v[][] stays in
// registers, and ptxas turns each slot's branch into predicated code, so all P loads of a
// thread are issued before the first max waits on one (checked in the SASS: LDG.E.128 x 8,
// then FMNMX). Each phase walks its own pointer (it may end one stride past the row, never
// dereferenced there): indexing xr[lane + k * tpr] instead lets the compiler keep P offsets
// alive from the loads to the stores, which spills the 32-slot scalar variants.
template <typename T, int W, bool kFull>
__global__ void __launch_bounds__(kMaxRowThreads)
softmax_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int cols, int tpr) {
    brrr::wait_for_prior_grid();  // launched early (brrr::launch_early): the kernel before it first
    brrr::allow_dependents();     // the next kernel may launch now (it waits for this grid's end)
    using A = brrr::acc_t<T>;
    constexpr int P = kSlotsFor<T, W> / W;
    using Vec = brrr::Pack<T, W>;
    __shared__ A part_max[kMaxRowThreads / 32];
    __shared__ A part_sum[kMaxRowThreads / 32];
    const int lane = threadIdx.x % tpr;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
    const bool live = row < rows;
    const int units = live ? cols / W : 0;
    const int mine = units > lane ? (units - lane + tpr - 1) / tpr : 0;
    const int64_t base = (live ? row : 0) * cols;  // a row past the last stays inside x
    // kFull (every thread of a row holds P packs): slot k is loaded and used by every thread, those
    // of a row past the last too (row 0's packs, read, never stored), and stored where the row lives.
    const auto holds = [&](int k) { return kFull || k < mine; };
    const auto stores = [&](int k) { return kFull ? live : k < mine; };

    A m = -std::numeric_limits<A>::infinity();  // the identity of max, for threads with no element
    const Vec* in = reinterpret_cast<const Vec*>(x + base) + lane;
    if constexpr (kRaw<T, W>) {
        Vec raw[P];
        Pair<T> m2 = pair_lowest<T>();
#pragma unroll
        for (int k = 0; k < P; ++k) {
            if (holds(k)) {
                raw[k] = in[k * tpr];
                m2 = pair_max<T, W>(m2, raw[k]);
            }
        }
        m = row_max(pair_max_float<T>(m2), part_max, tpr);
        A e[P][W];
        A s = 0;
#pragma unroll
        for (int k = 0; k < P; ++k) {
            if (holds(k)) {
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    e[k][j] = exp_acc<T>(widen(raw[k], j) - m);
                    s += e[k][j];
                }
            }
        }
        s = row_sum(s, part_sum, tpr);
        const A inv = A(1) / s;
        Vec* out = reinterpret_cast<Vec*>(y + base) + lane;
#pragma unroll
        for (int k = 0; k < P; ++k) {
            if (stores(k)) {
                A o[W];
#pragma unroll
                for (int j = 0; j < W; ++j) o[j] = e[k][j] * inv;
                out[k * tpr] = narrow<T, W>(o);
            }
        }
        return;
    }
    A v[P][W];
#pragma unroll
    for (int k = 0; k < P; ++k) {
        if (holds(k)) {
            const Vec p = *in;
            in += tpr;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                v[k][j] = brrr::to_acc(p.v[j]);
                m = max(m, v[k][j]);
            }
        }
    }
    m = row_max(m, part_max, tpr);

    // After subtracting the max every exponent is <= 0: no overflow, and the largest term is 1.
    A s = 0;
#pragma unroll
    for (int k = 0; k < P; ++k) {
        if (holds(k)) {
#pragma unroll
            for (int j = 0; j < W; ++j) {
                v[k][j] = exp_acc<T>(v[k][j] - m);
                s += v[k][j];
            }
        }
    }
    s = row_sum(s, part_sum, tpr);

    const A inv = A(1) / s;  // one division a thread; the product adds at most one rounding
    Vec* out = reinterpret_cast<Vec*>(y + base) + lane;
#pragma unroll
    for (int k = 0; k < P; ++k) {
        if (stores(k)) {
            Vec o;
#pragma unroll
            for (int j = 0; j < W; ++j) o.v[j] = brrr::from_acc<T>(v[k][j] * inv);
            *out = o;
            out += tpr;
        }
    }
}

// grad_x = y * (grad_y - sum(grad_y * y)): the forward's layout, one reduction. Two rows of
// registers a thread: at most kMaxRowThreadsBackward threads (128 registers each) a row.
// Kept as loaded, bfloat16's rows still took 95 registers (ptxas widens them all early): the raw
// path asks for two blocks of 512 threads an SM, 64 registers a thread.
template <typename T, int W, bool kFull>
__global__ void __launch_bounds__(kMaxRowThreadsBackward, kRaw<T, W> ? 2 : 1)
softmax_backward_kernel(const T* __restrict__ grad_y, const T* __restrict__ y, T* __restrict__ grad_x,
                        int64_t rows, int cols, int tpr) {
    brrr::wait_for_prior_grid();  // launched early (brrr::launch_early): the kernel before it first
    brrr::allow_dependents();     // the next kernel may launch now (it waits for this grid's end)
    using A = brrr::acc_t<T>;
    constexpr int P = kSlotsFor<T, W> / W;
    using Vec = brrr::Pack<T, W>;
    __shared__ A part_sum[kMaxRowThreadsBackward / 32];
    const int lane = threadIdx.x % tpr;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
    const bool live = row < rows;
    const int units = live ? cols / W : 0;
    const int mine = units > lane ? (units - lane + tpr - 1) / tpr : 0;
    const int64_t base = (live ? row : 0) * cols;
    const auto holds = [&](int k) { return kFull || k < mine; };  // as in the forward
    const auto stores = [&](int k) { return kFull ? live : k < mine; };

    const Vec* gin = reinterpret_cast<const Vec*>(grad_y + base) + lane;
    const Vec* yin = reinterpret_cast<const Vec*>(y + base) + lane;
    Vec* out = reinterpret_cast<Vec*>(grad_x + base) + lane;
    A dot = 0;
    if constexpr (kRaw<T, W>) {
        Vec pg[P], py[P];
#pragma unroll
        for (int k = 0; k < P; ++k) {
            if (holds(k)) {
                pg[k] = gin[k * tpr];
                py[k] = yin[k * tpr];
#pragma unroll
                for (int j = 0; j < W; ++j) dot += widen(pg[k], j) * widen(py[k], j);
            }
        }
        dot = row_sum(dot, part_sum, tpr);
#pragma unroll
        for (int k = 0; k < P; ++k) {
            if (stores(k)) {
                A o[W];
#pragma unroll
                for (int j = 0; j < W; ++j) o[j] = widen(py[k], j) * (widen(pg[k], j) - dot);
                out[k * tpr] = narrow<T, W>(o);
            }
        }
        return;
    }
    A g[P][W], yv[P][W];
#pragma unroll
    for (int k = 0; k < P; ++k) {
        if (holds(k)) {
            const Vec pg = *gin;
            const Vec py = *yin;
            gin += tpr;
            yin += tpr;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                g[k][j] = brrr::to_acc(pg.v[j]);
                yv[k][j] = brrr::to_acc(py.v[j]);
                dot += g[k][j] * yv[k][j];
            }
        }
    }
    dot = row_sum(dot, part_sum, tpr);

#pragma unroll
    for (int k = 0; k < P; ++k) {
        if (stores(k)) {
            Vec o;
#pragma unroll
            for (int j = 0; j < W; ++j) o.v[j] = brrr::from_acc<T>(yv[k][j] * (g[k][j] - dot));
            *out = o;
            out += tpr;
        }
    }
}

// --- v1: one block of 256 threads per row, striding over it (numba_kernel.py's kernels, with each
// block reduction done by warp shuffles plus one shared slot per warp). Rows of any length fit.

constexpr int kV1Threads = 256;  // a multiple of 32: the reduction works in whole warps
constexpr int kV1Warps = kV1Threads / 32;

struct Max {
    template <typename A>
    __device__ A operator()(A a, A b) const { return b > a ? b : a; }
};

struct Sum {
    template <typename A>
    __device__ A operator()(A a, A b) const { return a + b; }
};

// The reduction of `value` over the block, returned to every thread. After the xor butterfly all
// lanes of a warp hold the same value (a + b == b + a exactly), and every thread then folds the
// per-warp values in one fixed order, so all threads, and all runs, agree bit for bit.
template <typename A, typename Op>
__device__ A block_reduce(A value, A* partial, Op op) {
    for (int offset = 16; offset > 0; offset /= 2) {
        value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
    }
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
    __syncthreads();
    A result = partial[0];
    for (int w = 1; w < kV1Warps; ++w) result = op(result, partial[w]);
    // No thread may write `partial` for the next reduction until every thread has read this one.
    __syncthreads();
    return result;
}

// Half types are read into float (acc_t) and only the result is rounded back.
template <typename T>
__global__ void softmax_forward_v1_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t cols) {
    using A = brrr::acc_t<T>;
    __shared__ A partial[kV1Warps];
    const int64_t row = blockIdx.x;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    A m = -std::numeric_limits<A>::infinity();  // threads past the end of a short row add the identity
    for (int64_t c = threadIdx.x; c < cols; c += kV1Threads) m = Max{}(m, brrr::to_acc(xr[c]));
    m = block_reduce(m, partial, Max{});
    A total = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kV1Threads) total += exp(brrr::to_acc(xr[c]) - m);
    total = block_reduce(total, partial, Sum{});
    for (int64_t c = threadIdx.x; c < cols; c += kV1Threads) {
        yr[c] = brrr::from_acc<T>(exp(brrr::to_acc(xr[c]) - m) / total);
    }
}

template <typename T>
__global__ void softmax_backward_v1_kernel(const T* __restrict__ grad_y, const T* __restrict__ y,
                                           T* __restrict__ grad_x, int64_t cols) {
    using A = brrr::acc_t<T>;
    __shared__ A partial[kV1Warps];
    const int64_t row = blockIdx.x;
    const T* gr = grad_y + row * cols;
    const T* yr = y + row * cols;
    T* gxr = grad_x + row * cols;
    A dot = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kV1Threads) dot += brrr::to_acc(gr[c]) * brrr::to_acc(yr[c]);
    dot = block_reduce(dot, partial, Sum{});
    for (int64_t c = threadIdx.x; c < cols; c += kV1Threads) {
        gxr[c] = brrr::from_acc<T>(brrr::to_acc(yr[c]) * (brrr::to_acc(gr[c]) - dot));
    }
}

// --- launchers (binding.cpp checks rows < 2^31, so one block per row always fits the grid)

// The register path's shape for a row of `cols`: the fewest threads (a multiple of 32) whose
// kSlots elements each cover the row, and enough rows per block for kMinBlockThreads threads.
struct RowShape {
    int tpr;
    int rows_per_block;
};

inline RowShape row_shape(int64_t cols, int slots) {
    const int tpr = static_cast<int>((cols + slots - 1) / slots + 31) / 32 * 32;
    return {tpr, tpr < kMinBlockThreads ? kMinBlockThreads / tpr : 1};
}

// How the register path runs a launcher's rows: the grid, and whether every thread of a row holds
// all of its slots (cols == slots x tpr), which takes the kFull instance of a kernel.
struct RowLaunch {
    unsigned int blocks;
    int threads;
    int tpr;
    bool full;
    cudaStream_t stream;
};

inline RowLaunch row_launch(int64_t rows, int64_t cols, int slots, cudaStream_t stream) {
    const RowShape s = row_shape(cols, slots);
    return {brrr::blocks_for(rows, s.rows_per_block), s.tpr * s.rows_per_block, s.tpr,
            cols == static_cast<int64_t>(slots) * s.tpr, stream};
}

template <typename T, int W>
void launch_forward(const RowLaunch& l, const T* x, T* y, int64_t rows, int cols) {
    const auto kernel = l.full ? softmax_forward_kernel<T, W, true> : softmax_forward_kernel<T, W, false>;
    brrr::launch_early(kernel, dim3(l.blocks), dim3(l.threads), 0, l.stream, x, y, rows, cols, l.tpr);
}

template <typename T, int W>
void launch_backward(const RowLaunch& l, const T* grad_y, const T* y, T* grad_x, int64_t rows, int cols) {
    const auto kernel = l.full ? softmax_backward_kernel<T, W, true> : softmax_backward_kernel<T, W, false>;
    brrr::launch_early(kernel, dim3(l.blocks), dim3(l.threads), 0, l.stream, grad_y, y, grad_x, rows, cols, l.tpr);
}

template <typename T>
void softmax_forward_v1(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    softmax_forward_v1_kernel<T><<<static_cast<unsigned int>(rows), kV1Threads, 0, stream>>>(x, y, cols);
}

template <typename T>
void softmax_forward(const T* x, T* y, int64_t rows, int64_t cols, cudaStream_t stream) {
    constexpr int V = 16 / sizeof(T);
    // Every row starts 16-byte aligned only if the first does and a row is a whole number of packs.
    const bool packed = cols % V == 0 && brrr::aligned16(x) && brrr::aligned16(y);
    const int slots = packed ? kSlotsFor<T, V> : kSlots<T>;
    if (cols > static_cast<int64_t>(kMaxRowThreads) * slots) {
        softmax_forward_v1(x, y, rows, cols, stream);
        return;
    }
    const RowLaunch l = row_launch(rows, cols, slots, stream);
    if (packed) {
        launch_forward<T, V>(l, x, y, rows, static_cast<int>(cols));
    } else {
        launch_forward<T, 1>(l, x, y, rows, static_cast<int>(cols));
    }
}

template <typename T>
void softmax_backward(const T* grad_y, const T* y, T* grad_x, int64_t rows, int64_t cols, cudaStream_t stream) {
    constexpr int V = 16 / sizeof(T);
    const bool packed = cols % V == 0 && brrr::aligned16(grad_y) && brrr::aligned16(y) && brrr::aligned16(grad_x);
    const int slots = packed ? kSlotsFor<T, V> : kSlots<T>;
    if (cols > static_cast<int64_t>(kMaxRowThreadsBackward) * slots) {
        softmax_backward_v1_kernel<T><<<static_cast<unsigned int>(rows), kV1Threads, 0, stream>>>(grad_y, y, grad_x, cols);
        return;
    }
    const RowLaunch l = row_launch(rows, cols, slots, stream);
    if (packed) {
        launch_backward<T, V>(l, grad_y, y, grad_x, rows, static_cast<int>(cols));
    } else {
        launch_backward<T, 1>(l, grad_y, y, grad_x, rows, static_cast<int>(cols));
    }
}

// The dtypes binding.cpp dispatches to.
#define SOFTMAX_INSTANTIATE(T)                                                                  \
    template void softmax_forward(const T*, T*, int64_t, int64_t, cudaStream_t);                \
    template void softmax_forward_v1(const T*, T*, int64_t, int64_t, cudaStream_t);             \
    template void softmax_backward(const T*, const T*, T*, int64_t, int64_t, cudaStream_t);
SOFTMAX_INSTANTIATE(float)
SOFTMAX_INSTANTIATE(double)
SOFTMAX_INSTANTIATE(__half)
SOFTMAX_INSTANTIATE(__nv_bfloat16)
