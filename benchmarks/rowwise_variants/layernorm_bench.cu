// Layer norm's backward (and forward) versions side by side on one GPU, at brrr bench's size
// (4096 x 8192) in float32 and bfloat16: each checked against a float64 reference on the host
// (outputs poisoned first), its weight and bias gradients compared bit for bit over two runs, then
// timed (median of 30, L2 flushed) against a 1 GiB copy timed in the same process.
//   nvcc -std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90 -I pipeline/include \
//        benchmarks/rowwise_variants/layernorm_bench.cu -o /tmp/ln_bench && /tmp/ln_bench
#include "../../stages/layernorm/kernel.cu"
#include "harness.cuh"

#include <cooperative_groups.h>

// Tried and not shipped (it lost to v2 on an H100: variants.txt), so kept here rather than in the op.
// ---- forward v3 (not shipped): rows staged through shared memory by cp.async, a persistent grid ---------------
// What it changes from v2's block path (Nsight Compute, 4096 x 8192: one row a 256-thread block,
// 50% occupancy, long_scoreboard first: each block's row sums wait on its own row's loads, and
// nothing else of the block is in flight meanwhile): a persistent grid of as many blocks as fit
// takes rows gridDim.x apart, and each thread copies its own packs of the next kStages - 1 rows
// into its own shared slots with cp.async while it works on this one (cp.async.wait_group orders
// them: a thread reads only what it copied). The row itself is normalise_row's, as v2, reading its
// packs from the staged copy instead of from memory: same statistics, same arithmetic, same bits.
template <typename T, int kPacks>
__device__ __forceinline__ void stage_packs(brrr::Pack<T, 16 / sizeof(T)>* stage, const T* __restrict__ row, int packs,
                                            int t, int stride) {
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (p < packs) cp_async16(stage + p, row + static_cast<int64_t>(p) * (16 / sizeof(T)));
    }
}

template <typename T, int kPacks, int kStages>
__global__ void __launch_bounds__(kMaxThreads)
layernorm_forward_v3_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                            T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd, int64_t rows,
                            int64_t cols, stat_t<T> eps) {
    using P = brrr::Pack<T, 16 / sizeof(T)>;
    extern __shared__ __align__(16) unsigned char staged[];
    // One array per row sum: a thread passes the second sum's barrier only once every thread has read
    // the first sum's slots, so the next row may write them (and the same the other way round).
    __shared__ stat_t<T> partial_sum[kMaxThreads / 32];
    __shared__ stat_t<T> partial_squares[kMaxThreads / 32];
    const int packs = static_cast<int>(cols / (16 / sizeof(T)));
    P* stages = reinterpret_cast<P*>(staged);  // [kStages][packs]
    const int t = threadIdx.x;
    const int stride = blockDim.x;
    const int64_t step = gridDim.x;
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
        const int64_t r = blockIdx.x + i * step;
        if (r < rows) stage_packs<T, kPacks>(stages + i * packs, x + r * cols, packs, t, stride);
        cp_async_commit();
    }
    int s = 0;
    for (int64_t row = blockIdx.x; row < rows; row += step) {
        const int64_t ahead = row + (kStages - 1) * step;
        const int s_ahead = s == 0 ? kStages - 1 : s - 1;
        if (ahead < rows) stage_packs<T, kPacks>(stages + s_ahead * packs, x + ahead * cols, packs, t, stride);
        cp_async_commit();
        cp_async_wait<kStages - 1>();
        normalise_row<T, kPacks, true>(reinterpret_cast<const T*>(stages + s * packs), weight, bias, y + row * cols,
                                       mean + row, rstd + row, packs, cols, eps, t, stride, partial_sum, partial_squares);
        s = s + 1 == kStages ? 0 : s + 1;
    }
    cp_async_wait<0>();
}



// ---- forward "weight when" (not shipped): the narrow block path, weight and bias loaded at kWhen --
// The 2026-11-28 "weight early" trial (this kernel at kWhen 0 under the 1024-thread bound, 64
// registers; forward_variants still times it) spilled holding weight and bias beside the row. Here the bound is the shipped narrow one (kMaxT threads,
// kMinBlocks an SM), so the packs fit: kWhen 0 loads them with the row, 1 after the first row sum
// (their latency under the second barrier), 2 after both (normalise_row's order, into registers).
// The arithmetic and its order are normalise_row's (the same bits).
template <typename T, int kPacks, int kMaxT, int kMinBlocks, int kWhen>
__global__ void __launch_bounds__(kMaxT, kMinBlocks)
layernorm_forward_wb_when_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                 T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                 int64_t cols, stat_t<T> eps) {
    using S = stat_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    __shared__ S partial_sum[kMaxT / 32];
    __shared__ S partial_squares[kMaxT / 32];
    const int64_t row = blockIdx.x;
    const int t = threadIdx.x, stride = blockDim.x;
    const P* xr = reinterpret_cast<const P*>(x + row * cols);
    const P* wp = reinterpret_cast<const P*>(weight);
    const P* bp = reinterpret_cast<const P*>(bias);
    P v[kPacks], w[kPacks], b[kPacks];
    const auto load_wb = [&] {
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            w[k] = wp[k * stride + t];
            b[k] = bp[k * stride + t];
        }
    };
#pragma unroll
    for (int k = 0; k < kPacks; ++k) v[k] = xr[k * stride + t];
    if constexpr (kWhen == 0) load_wb();
    const auto holds = [](int) { return true; };
    const S mu = row_sum<true>(held_sum<T, kPacks>(v, holds), partial_sum) / cols;
    if constexpr (kWhen == 1) load_wb();
    const S r = S(1) / sqrt(row_sum<true>(held_squares<T, kPacks>(v, mu, holds), partial_squares) / cols + eps);
    if constexpr (kWhen == 2) load_wb();
    const Affine<T> affine(mu, r);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        brrr::acc_t<T> out[W];
#pragma unroll
        for (int j = 0; j < W; ++j) out[j] = affine(v[k].v[j], w[k].v[j], b[k].v[j]);
        reinterpret_cast<P*>(y + row * cols)[k * stride + t] = round_pack<T, W>(out);
    }
    if (t == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// ---- forward "weight staged" (not shipped): weight and bias copied to shared memory at the start --
// Loading weight and bias with the row helped at equal occupancy (4 x 256 at 3 an SM: 44.7 -> 42.6 us
// bfloat16) but costs the registers that the shipped 8 x 128 at 6 an SM needs. Here they are copied
// by cp.async into shared memory at the block's start (no registers held; their latency under the
// row loads and sums), and kRows rows share a block and one copy, so each row reads 1 / kRows of
// them from L2. Thread t of row slot i (i = threadIdx.x / kT) holds packs t, t + kT, ... of its row.
template <typename T, int kPacks, int kT, int kRows, int kMinBlocks>
__global__ void __launch_bounds__(kT * kRows, kMinBlocks)
layernorm_forward_wb_staged_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                   T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                   int64_t rows, int64_t cols, stat_t<T> eps) {
    using S = stat_t<T>;
    constexpr int W = 16 / sizeof(T);
    constexpr int kPacksRow = kPacks * kT;
    constexpr int kWarpsRow = kT / 32;
    using P = brrr::Pack<T, W>;
    extern __shared__ __align__(16) unsigned char staged_wb[];
    P* ws = reinterpret_cast<P*>(staged_wb);
    P* bs = ws + kPacksRow;
    __shared__ S part_sum[kRows][kWarpsRow];
    __shared__ S part_sq[kRows][kWarpsRow];
    for (int i = threadIdx.x; i < kPacksRow; i += kT * kRows) {
        cp_async16(ws + i, weight + static_cast<int64_t>(i) * W);
        cp_async16(bs + i, bias + static_cast<int64_t>(i) * W);
    }
    cp_async_commit();
    const int slot = threadIdx.x / kT, t = threadIdx.x % kT, warp = t / 32;
    const int64_t row = static_cast<int64_t>(blockIdx.x) * kRows + slot;
    const bool live = row < rows;
    const P* xr = reinterpret_cast<const P*>(x + (live ? row : 0) * cols);
    P v[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) v[k] = xr[k * kT + t];
    const auto holds = [](int) { return true; };
    const auto sum_row = [&](S value, S (*part)[kWarpsRow]) {
        value = brrr::warp_sum(value);
        if (threadIdx.x % 32 == 0) part[slot][warp] = value;
        __syncthreads();
        value = part[slot][0];
        for (int w = 1; w < kWarpsRow; ++w) value += part[slot][w];
        return value;
    };
    const S mu = sum_row(held_sum<T, kPacks>(v, holds), part_sum) / cols;
    cp_async_wait<0>();  // this thread's copies; the next barrier makes every thread's visible
    const S r = S(1) / sqrt(sum_row(held_squares<T, kPacks>(v, mu, holds), part_sq) / cols + eps);
    if (!live) return;
    const Affine<T> affine(mu, r);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const P w = ws[k * kT + t], b = bs[k * kT + t];
        brrr::acc_t<T> out[W];
#pragma unroll
        for (int j = 0; j < W; ++j) out[j] = affine(v[k].v[j], w.v[j], b.v[j]);
        reinterpret_cast<P*>(y + row * cols)[k * kT + t] = round_pack<T, W>(out);
    }
    if (t == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// ---- forward "widened once" (not shipped): v2's block path with the row widened to float on load --
// v2 keeps a 16-bit row as loaded and widens each element three times (sum, squares, output): in
// bfloat16 on an H200 the forward issues an instruction every 1.5 cycles a scheduler (Nsight
// Compute), so instructions, not bytes, set its pace. Here each element is widened once, into 32
// float registers a thread; the arithmetic and its order are normalise_row's (the same bits).
// kFull: every thread holds kPacks packs (no slot tests). kPrefetch: the thread's weight and bias
// packs are prefetched into L1 (prefetch.global.L1: no registers held) right after the row's loads,
// so their loads after the two row sums hit L1 instead of waiting on L2.
template <typename T, int kPacks, bool kFull = false, bool kPrefetch = false>
__global__ void __launch_bounds__(kMaxThreads)
layernorm_forward_widened_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                 T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                 int64_t cols, stat_t<T> eps) {
    using S = stat_t<T>;
    static_assert(kSame<S, brrr::acc_t<T>>, "16-bit types only: their statistics are float");
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    __shared__ S partial_sum[kMaxThreads / 32];
    __shared__ S partial_squares[kMaxThreads / 32];
    const int64_t row = blockIdx.x;
    const int packs = static_cast<int>(cols / W);
    const int t = threadIdx.x, stride = blockDim.x;
    S f[kPacks][W];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (kFull || p < packs) {
            const P v = reinterpret_cast<const P*>(x + row * cols)[p];
#pragma unroll
            for (int j = 0; j < W; ++j) f[k][j] = to_stat(v.v[j]);
        }
    }
    if constexpr (kPrefetch) {
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            const int p = k * stride + t;
            if (kFull || p < packs) {
                asm volatile("prefetch.global.L1 [%0];" ::"l"(reinterpret_cast<const P*>(weight) + p));
                asm volatile("prefetch.global.L1 [%0];" ::"l"(reinterpret_cast<const P*>(bias) + p));
            }
        }
    }
    S total = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        if (kFull || k * stride + t < packs) {
            S s = f[k][0];
#pragma unroll
            for (int j = 1; j < W; ++j) s += f[k][j];
            total += s;
        }
    }
    const S mu = row_sum<true>(total, partial_sum) / cols;
    S squares = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        if (kFull || k * stride + t < packs) {
            S s = 0;
#pragma unroll
            for (int j = 0; j < W; ++j) {
                const S d = f[k][j] - mu;
                s += d * d;
            }
            squares += s;
        }
    }
    const S r = S(1) / sqrt(row_sum<true>(squares, partial_squares) / cols + eps);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (kFull || p < packs) {
            const P w = reinterpret_cast<const P*>(weight)[p];
            const P b = reinterpret_cast<const P*>(bias)[p];
            S out[W];
#pragma unroll
            for (int j = 0; j < W; ++j) out[j] = (f[k][j] - mu) * r * brrr::to_acc(w.v[j]) + brrr::to_acc(b.v[j]);
            reinterpret_cast<P*>(y + row * cols)[p] = round_pack<T, W>(out);
        }
    }
    if (t == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// ---- forward "float sums" (not shipped): float32's statistics summed in float a pack -------------
// The shipped float32 forward keeps its sums in double: each element converted twice (F2F.F64.F32,
// a quarter of the FP64 rate) and added in double, two passes. Here each pack's 4 elements are
// summed in float and only the pack's sum goes to double (4x fewer conversions and double adds).
// kShift: the first pass sums x - c, c the thread's first element (so a row's large common offset
// does not round away in float; the thread's n * c is added back in double); the second pass
// centres with normalise_row's hi + lo split of the double mean. !kShift: plain float sums (what an
// all-float kernel such as torch.compile's does; the bound on what fewer conversions can gain).
template <int kPacks, bool kShift, int kMaxT, int kMinB = 0>
__global__ void __launch_bounds__(kMaxT, kMinB)
layernorm_forward_float_sums_kernel(const float* __restrict__ x, const float* __restrict__ weight,
                                    const float* __restrict__ bias, float* __restrict__ y, double* __restrict__ mean,
                                    double* __restrict__ rstd, int64_t cols, double eps) {
    using P = brrr::Pack<float, 4>;
    __shared__ double partial_sum[kMaxT / 32];
    __shared__ double partial_squares[kMaxT / 32];
    const int64_t row = blockIdx.x;
    const int t = threadIdx.x, stride = blockDim.x;
    P v[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) v[k] = reinterpret_cast<const P*>(x + row * cols)[k * stride + t];
    const float c = kShift ? v[0].v[0] : 0.f;
    double total = kShift ? static_cast<double>(c) * (4 * kPacks) : 0.0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        float s = (v[k].v[0] - c) + (v[k].v[1] - c);
        s += (v[k].v[2] - c) + (v[k].v[3] - c);
        total += s;
    }
    const double mu = row_sum<true>(total, partial_sum) / cols;
    const Affine<float> affine(mu, 1.0);
    double squares = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        float s = 0;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const float d = affine.centred(v[k].v[j]);
            s = fmaf(d, d, s);
        }
        squares += s;
    }
    const double r = 1.0 / sqrt(row_sum<true>(squares, partial_squares) / cols + eps);
    const Affine<float> out_affine(mu, r);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        const P w = reinterpret_cast<const P*>(weight)[p];
        const P b = reinterpret_cast<const P*>(bias)[p];
        float out[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) out[j] = out_affine(v[k].v[j], w.v[j], b.v[j]);
        reinterpret_cast<P*>(y + row * cols)[p] = round_pack<float, 4>(out);
    }
    if (t == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// ---- forward "reread" (not shipped): torch.compile's plan for the row -----------------------------
// Inductor's layer norm forward holds no row in registers: a first pass loads the row for its sums,
// a second loads it again (from L2) for y. Few registers, so more rows in flight an SM than v2's 4.
// Here: the first pass sums x - c and (x - c)^2 in the statistics' type, c the row's first element
// (the shifted-data algorithm: the cancellation of E[x^2] - E[x]^2 is that of values near c, not of
// the row's offset); the second pass loads with __ldcs (its last use: evict first) and stores y with
// __stcs. kUnroll packs a thread in flight an iteration.
// The first pass's loads: 0 plain, 1 with an L1 evict_last priority, 2 with an L2 evict_last cache
// policy (createpolicy), as Triton lowers eviction_policy="evict_last".
// Plain asm, not volatile, since 2026-11-30: the compiler may schedule these loads as Triton's are
// (the 2026-11-29 figures were taken with volatile asm).
template <int kHint>
__device__ __forceinline__ uint4 first_pass_load(const uint4* p) {
    uint4 v;
    if constexpr (kHint == 0) {
        v = *p;
    } else if constexpr (kHint == 1) {
        asm("ld.global.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else {
        uint64_t policy;
        asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
        asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
    }
    return v;
}

// kFloatStats: the block's sums, the mean and rstd in float too, as Inductor's kernel (brrr keeps them
// double for float32 inputs: see kernel.cu's Stat); measured only, never shipped.
template <typename T, int kThreads, int kUnroll, int kMinBlocks, bool kAccSums = false, int kHint = 0,
          bool kFloatStats = false>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
layernorm_forward_reread_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                int64_t cols, stat_t<T> eps) {
    using S = std::conditional_t<kFloatStats, float, stat_t<T>>;
    using A = brrr::acc_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    __shared__ S partial_sum[kThreads / 32];
    __shared__ S partial_squares[kThreads / 32];
    const int64_t row = blockIdx.x;
    const int packs = static_cast<int>(cols / W);
    const uint4* xr = reinterpret_cast<const uint4*>(x + row * cols);
    // kAccSums: each thread sums in acc_t (float), widened once for the block's sums (float32 inputs:
    // no conversion to double an element, which runs at a quarter of the double rate).
    using U = std::conditional_t<kAccSums, A, S>;
    const U c = static_cast<U>(brrr::to_acc(x[row * cols]));
    U s1 = 0, s2 = 0;
    for (int p0 = threadIdx.x; p0 < packs; p0 += kThreads * kUnroll) {
        P v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (p0 + u * kThreads < packs) {
                const uint4 bits = first_pass_load<kHint>(xr + p0 + u * kThreads);
                memcpy(&v[u], &bits, 16);
            }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (p0 + u * kThreads < packs) {
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    const U d = static_cast<U>(brrr::to_acc(v[u].v[j])) - c;
                    s1 += d;
                    s2 += d * d;
                }
            }
        }
    }
    const S m1 = row_sum<true>(static_cast<S>(s1), partial_sum) / cols;
    const S var = row_sum<true>(static_cast<S>(s2), partial_squares) / cols - m1 * m1;
    const S mu = static_cast<S>(c) + m1;
    const S r = S(1) / sqrt((var > S(0) ? var : S(0)) + eps);
    const Affine<T> affine(mu, r);
    uint4* yr = reinterpret_cast<uint4*>(y + row * cols);
    for (int p0 = threadIdx.x; p0 < packs; p0 += kThreads * kUnroll) {
        P v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (p0 + u * kThreads < packs) {
                const uint4 bits = __ldcs(xr + p0 + u * kThreads);
                memcpy(&v[u], &bits, 16);
            }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int p = p0 + u * kThreads;
            if (p < packs) {
                const P w = reinterpret_cast<const P*>(weight)[p];
                const P b = reinterpret_cast<const P*>(bias)[p];
                A out[W];
#pragma unroll
                for (int j = 0; j < W; ++j) out[j] = affine(v[u].v[j], w.v[j], b.v[j]);
                const P o = round_pack<T, W>(out);
                uint4 bits;
                memcpy(&bits, &o, 16);
                __stcs(yr + p, bits);
            }
        }
    }
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// ---- forward "cluster" (not shipped): a row split over a cluster of kCtas blocks ----------------------
// The copies of the forward's bytes (COPIES=1, 2026-11-29) ran fastest as many small blocks that each
// copy a 4 KB slice and leave (bfloat16 back to back 91.4% of copy, cudaMemcpy's speed) and slowest as
// blocks of 32 KB (85.9%); a row kernel's block is its row, 16 KB (bfloat16) or 32 KB (float32). Here
// the row is split over a cluster (Hopper): block `rank` of the cluster holds packs rank * kThreads +
// threadIdx.x + k * kCtas * kThreads, each warp's sums go to its slot in its block's shared memory, and
// after the cluster's barrier every warp reads all kCtas x warps slots through distributed shared
// memory (lane l the slots l, l + 32, ...) and adds them by warp_sum: the same bits in every warp of
// every block. No block may leave while another still reads its slots: the last barrier is split
// (arrive after the reads, wait after the stores). Rows of exactly kPacks x kCtas x kThreads packs.
template <typename T, int kCtas, int kThreads, int kPacks>
__global__ void __cluster_dims__(kCtas, 1, 1) __launch_bounds__(kThreads)
layernorm_forward_cluster_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                 T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                 int64_t cols, stat_t<T> eps) {
    namespace cg = cooperative_groups;
    using S = stat_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    constexpr int kWarpsHere = kThreads / 32;
    constexpr int kSlots = kCtas * kWarpsHere;
    constexpr int kStride = kCtas * kThreads;
    __shared__ S part_sum[kWarpsHere];
    __shared__ S part_squares[kWarpsHere];
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = static_cast<int>(cluster.block_rank());
    const int64_t row = blockIdx.x / kCtas;
    const int t = rank * kThreads + static_cast<int>(threadIdx.x);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const P* xr = reinterpret_cast<const P*>(x + row * cols);
    P v[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) v[k] = xr[k * kStride + t];
    const auto gather = [&](S* part) {
        S s = 0;
        for (int i = lane; i < kSlots; i += 32) s += *cluster.map_shared_rank(part + i % kWarpsHere, i / kWarpsHere);
        return brrr::warp_sum(s);
    };
    const auto all = [](int) { return true; };
    const S total = brrr::warp_sum(held_sum<T, kPacks>(v, all));
    if (lane == 0) part_sum[warp] = total;
    cluster.sync();
    const S mu = gather(part_sum) / cols;
    const S squares = brrr::warp_sum(held_squares<T, kPacks>(v, mu, all));
    if (lane == 0) part_squares[warp] = squares;
    cluster.sync();
    const S r = S(1) / sqrt(gather(part_squares) / cols + eps);
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
    const Affine<T> affine(mu, r);
    P* yr = reinterpret_cast<P*>(y + row * cols);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * kStride + t;
        const P w = reinterpret_cast<const P*>(weight)[p];
        const P b = reinterpret_cast<const P*>(bias)[p];
        brrr::acc_t<T> out[W];
#pragma unroll
        for (int j = 0; j < W; ++j) out[j] = affine(v[k].v[j], w.v[j], b.v[j]);
        yr[p] = round_pack<T, W>(out);
    }
    if (t == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// ---- forward "Triton's plan" (not shipped): torch.compile's float32 kernel, as its SASS reads ---------
// Inductor's kernel at 4096 x 8192 float32 (its SASS, 2026-11-29-h200-layernorm-reread-b2b): 512 threads
// at 32 registers, 4 blocks an SM, a thread's four 16-byte loads of x issued before any sum (L2
// evict_last), float sums, then x read again with weight and bias. The reread kernel above keeps its
// second pass unrolled (x, weight and bias of 4 packs in flight: 48 registers) and spilled at 32.
// Here the row's width is fixed (kPacks packs a thread, the row exactly), the first pass unrolled,
// the second one pack at a time. A thread sums its values in float about their own float mean c
// (e1 = sum of x - c, e2 = sum of (x - c)^2), widened once: the row's sum is n c + e1 and its
// centred squares e2 + d (2 e1 + n d), d = c - mu, in kCombine's type (double: brrr's statistics;
// float: Inductor's).
// kHints: the loads as Inductor's SASS spells them (LDG.E.EL for the first pass, weight and bias,
// LDG.E.EF for the second: L1 eviction priorities, ld.global.L1::evict_last / evict_first), where
// false gives the first pass an L2 evict_last policy and the second ld.global.cs.
__device__ __forceinline__ uint4 load_l1_evict_first(const uint4* p) {
    uint4 v;
    asm("ld.global.L1::evict_first.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// Triton's own lowering of eviction_policy (its PTX, 2026-11-30): both levels at once, an L1 priority
// and an L2 cache policy of the same name.
template <bool kEvictLast>
__device__ __forceinline__ uint4 triton_load(const void* p) {
    uint4 v;
    uint64_t policy;
    if constexpr (kEvictLast) {
        asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
        asm("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
    } else {
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
        asm("ld.global.L1::evict_first.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
    }
    return v;
}

// kHints: 0 the L2 evict_last policy on the first pass; 1 L1 priorities alone (LDG.E.EL / .EF); 2 both,
// as Triton emits them.
template <typename T, int kThreads, int kPacks, int kMinBlocks, bool kDoubleCombine, int kHints = 0>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
layernorm_forward_triton_plan_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                     T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                     int64_t cols, stat_t<T> eps) {
    using A = brrr::acc_t<T>;
    using S = std::conditional_t<kDoubleCombine, stat_t<T>, A>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    __shared__ S partial_sum[kThreads / 32];
    __shared__ S partial_squares[kThreads / 32];
    const int64_t row = blockIdx.x;
    const int t = threadIdx.x;
    const uint4* xr = reinterpret_cast<const uint4*>(x + row * cols);
    P v[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const uint4 bits = kHints == 2 ? triton_load<true>(xr + k * kThreads + t)
                                        : first_pass_load<kHints == 1 ? 1 : 2>(xr + k * kThreads + t);
        memcpy(&v[k], &bits, 16);
    }
    A total = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        A s = brrr::to_acc(v[k].v[0]);
#pragma unroll
        for (int j = 1; j < W; ++j) s += brrr::to_acc(v[k].v[j]);
        total += s;
    }
    constexpr int n = kPacks * W;
    const A c = total / A(n);
    A e1 = 0, e2 = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
#pragma unroll
        for (int j = 0; j < W; ++j) {
            const A e = brrr::to_acc(v[k].v[j]) - c;
            e1 += e;
            e2 = fmaf(e, e, e2);
        }
    }
    const S mu = row_sum<true>(S(n) * S(c) + S(e1), partial_sum) / S(cols);
    const S d = S(c) - mu;
    const S r = S(1) / sqrt(row_sum<true>(S(e2) + d * (S(2) * S(e1) + S(n) * d), partial_squares) / S(cols) + S(eps));
    const Affine<T> affine(static_cast<stat_t<T>>(mu), static_cast<stat_t<T>>(r));
    P* yr = reinterpret_cast<P*>(y + row * cols);
#pragma unroll 1
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * kThreads + t;
        const uint4 bits = kHints == 2 ? triton_load<false>(xr + p) : kHints ? load_l1_evict_first(xr + p) : __ldcs(xr + p);
        P xv, w, b;
        memcpy(&xv, &bits, 16);
        if constexpr (kHints == 2) {
            const uint4 wb = triton_load<true>(reinterpret_cast<const uint4*>(weight) + p);
            const uint4 bb = triton_load<true>(reinterpret_cast<const uint4*>(bias) + p);
            memcpy(&w, &wb, 16);
            memcpy(&b, &bb, 16);
        } else if constexpr (kHints == 1) {
            const uint4 wb = first_pass_load<1>(reinterpret_cast<const uint4*>(weight) + p);
            const uint4 bb = first_pass_load<1>(reinterpret_cast<const uint4*>(bias) + p);
            memcpy(&w, &wb, 16);
            memcpy(&b, &bb, 16);
        } else {
            w = reinterpret_cast<const P*>(weight)[p];
            b = reinterpret_cast<const P*>(bias)[p];
        }
        A out[W];
#pragma unroll
        for (int j = 0; j < W; ++j) out[j] = affine(xv.v[j], w.v[j], b.v[j]);
        yr[p] = round_pack<T, W>(out);
    }
    if (t == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// ---- forward "hinted" (not shipped): v2 with cache-eviction hints on its loads ---------------------
// torch.compile's float32 kernel rebuilt without its eviction hints runs 1.8 us slower back to back
// (benchmarks/triton_bisect.py, 2026-11-30), and slower than v2: the hints are its lead. The CUDA C
// replica of that kernel had them as `asm volatile` loads, which the compiler may not move; here the
// loads are plain asm (free to schedule). v2's shape and arithmetic (the same bits), with x loaded
// under kX (0 plain, 1 L1::evict_first, 2 L1::no_allocate, 3 L1::evict_last) and weight and bias
// under kWb (0 plain, 3 L1::evict_last: kept in L1 across a block's rows).
template <int kHint>
__device__ __forceinline__ uint4 hinted_load(const void* p) {
    uint4 v;
    if constexpr (kHint == 0) {
        v = *static_cast<const uint4*>(p);
    } else if constexpr (kHint == 1) {
        asm("ld.global.L1::evict_first.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else if constexpr (kHint == 2) {
        asm("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else if constexpr (kHint == 3) {
        asm("ld.global.L1::evict_last.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else {
        // 4: an L2 evict_last policy alone; 5: with L1::evict_last, as Triton lowers eviction_policy="evict_last"
        // (its PTX, 2026-11-30); 6: the L2 policy with L1::no_allocate.
        uint64_t policy;
        asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
        if constexpr (kHint == 4) {
            asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
        } else if constexpr (kHint == 5) {
            asm("ld.global.L1::evict_last.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
        } else {
            asm("ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
        }
    }
    return v;
}

// kAllow: where it allows the next kernel's early launch (brrr::allow_dependents): 0 never, 1 at its
// start (as the shipped forward), 2 after its row sums.
template <typename T, int kPacks, int kX, int kWb, int kMaxT, int kMinB, int kAllow = 0>
__global__ void __launch_bounds__(kMaxT, kMinB)
layernorm_forward_hinted_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                int64_t cols, stat_t<T> eps) {
    if constexpr (kAllow == 1) brrr::allow_dependents();
    using S = stat_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    __shared__ S partial_sum[kMaxT / 32];
    __shared__ S partial_squares[kMaxT / 32];
    const int64_t row = blockIdx.x;
    const int t = threadIdx.x, stride = blockDim.x;
    const P* xr = reinterpret_cast<const P*>(x + row * cols);
    const auto all = [](int) { return true; };
    P v[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const uint4 bits = hinted_load<kX>(xr + k * stride + t);
        memcpy(&v[k], &bits, 16);
    }
    const S mu = row_sum<true>(held_sum<T, kPacks>(v, all), partial_sum) / cols;
    const S r = S(1) / sqrt(row_sum<true>(held_squares<T, kPacks>(v, mu, all), partial_squares) / cols + eps);
    if constexpr (kAllow == 2) brrr::allow_dependents();
    const Affine<T> affine(mu, r);
    P* yr = reinterpret_cast<P*>(y + row * cols);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        const uint4 wbits = hinted_load<kWb>(reinterpret_cast<const P*>(weight) + p);
        const uint4 bbits = hinted_load<kWb>(reinterpret_cast<const P*>(bias) + p);
        P w, b;
        memcpy(&w, &wbits, 16);
        memcpy(&b, &bbits, 16);
        brrr::acc_t<T> out[W];
#pragma unroll
        for (int j = 0; j < W; ++j) out[j] = affine(v[k].v[j], w.v[j], b.v[j]);
        yr[p] = round_pack<T, W>(out);
    }
    if (t == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// ---- forward "bulk" (not shipped): a persistent grid whose rows the TMA brings into shared memory -------
// What it changes from v2's block path (long_scoreboard first, each block holding its own 16 KB row
// through two barriers, 4-6 rows an SM in flight; a copy of 16 KB blocks reaches 86.8% of the 1 GiB
// copy): one block an SM, one producer thread issuing a bulk copy (cp.async.bulk, one instruction a
// row) of the next kStages rows into shared memory, each completing a transaction barrier (full[s]);
// kGroups consumer groups of kThreads threads take alternate rows, read their packs out of the stage,
// release it at once (empty[s]) so the next row's copy starts while they sum, and write y from
// registers. Weight and bias (kHold) are held in registers for all of a block's rows. kCopy: the
// consumers store x unchanged (the shape's ceiling, no sums).
namespace bulk {
__device__ __forceinline__ uint32_t at(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(at(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void arrive_expect(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(at(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(at(bar)) : "memory");
}
__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
    asm volatile("{\n.reg .pred ready;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
                 "@ready bra DONE;\nbra WAIT;\nDONE:\n}\n" ::"r"(at(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void load(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(at(dst)),
                 "l"(src), "r"(bytes), "r"(at(bar))
                 : "memory");
}
// The sum over group g's kThreads threads (warps g * kThreads / 32 ...), one named barrier (1 + g).
template <int kThreads, typename S>
__device__ __forceinline__ S group_sum(S value, S* partial, int g) {
    value = brrr::warp_sum(value);
    const int t = threadIdx.x % kThreads;
    if (t % 32 == 0) partial[t / 32] = value;
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + g), "n"(kThreads) : "memory");
    value = partial[0];
#pragma unroll
    for (int w = 1; w < kThreads / 32; ++w) value += partial[w];
    return value;
}
}  // namespace bulk

template <typename T, int kPacks, int kThreads, int kGroups, int kStages, bool kHold, bool kCopy>
__global__ void __launch_bounds__(kThreads * kGroups + 32, 1)
layernorm_forward_bulk_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                              T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                              int64_t rows, int64_t cols, stat_t<T> eps) {
    using S = stat_t<T>;
    constexpr int W = 16 / sizeof(T);
    constexpr int kPacksRow = kPacks * kThreads;  // the launcher checks cols == kPacksRow * W
    using P = brrr::Pack<T, W>;
    extern __shared__ __align__(128) unsigned char shared[];
    __shared__ uint64_t full[kStages], empty[kStages];
    __shared__ S partial_sum[kGroups][kThreads / 32], partial_squares[kGroups][kThreads / 32];
    P* stages = reinterpret_cast<P*>(shared);
    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            bulk::init(&full[s], 1);
            bulk::init(&empty[s], kThreads);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int64_t step = gridDim.x;
    const int64_t mine = (rows - blockIdx.x + step - 1) / step;
    if (threadIdx.x >= kThreads * kGroups) {
        if (threadIdx.x == kThreads * kGroups) {
            constexpr uint32_t kBytes = kPacksRow * 16;
            for (int64_t i = 0; i < mine; ++i) {
                const int s = static_cast<int>(i % kStages);
                if (i >= kStages) bulk::wait(&empty[s], static_cast<uint32_t>((i / kStages + 1) & 1));
                bulk::arrive_expect(&full[s], kBytes);
                bulk::load(stages + s * kPacksRow, x + (blockIdx.x + i * step) * cols, kBytes, &full[s]);
            }
        }
        return;
    }
    const int g = threadIdx.x / kThreads, t = threadIdx.x % kThreads;
    P w[kHold ? kPacks : 1], b[kHold ? kPacks : 1];
    if constexpr (kHold && !kCopy) {
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            w[k] = reinterpret_cast<const P*>(weight)[k * kThreads + t];
            b[k] = reinterpret_cast<const P*>(bias)[k * kThreads + t];
        }
    }
    const auto holds = [](int) { return true; };
    for (int64_t i = g; i < mine; i += kGroups) {
        const int s = static_cast<int>(i % kStages);
        bulk::wait(&full[s], static_cast<uint32_t>((i / kStages) & 1));
        P v[kPacks];
#pragma unroll
        for (int k = 0; k < kPacks; ++k) v[k] = stages[s * kPacksRow + k * kThreads + t];
        bulk::arrive(&empty[s]);
        const int64_t row = blockIdx.x + i * step;
        P* yr = reinterpret_cast<P*>(y + row * cols);
        if constexpr (kCopy) {
#pragma unroll
            for (int k = 0; k < kPacks; ++k) yr[k * kThreads + t] = v[k];
            continue;
        }
        const S mu = bulk::group_sum<kThreads>(held_sum<T, kPacks>(v, holds), partial_sum[g], g) / cols;
        const S r = S(1) / sqrt(bulk::group_sum<kThreads>(held_squares<T, kPacks>(v, mu, holds), partial_squares[g], g) /
                                    cols + eps);
        const Affine<T> affine(mu, r);
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            const int p = k * kThreads + t;
            P wk, bk;
            if constexpr (kHold) {
                wk = w[k];
                bk = b[k];
            } else {
                wk = reinterpret_cast<const P*>(weight)[p];
                bk = reinterpret_cast<const P*>(bias)[p];
            }
            brrr::acc_t<T> out[W];
#pragma unroll
            for (int j = 0; j < W; ++j) out[j] = affine(v[k].v[j], wk.v[j], bk.v[j]);
            yr[p] = round_pack<T, W>(out);
        }
        if (t == 0) {
            mean[row] = mu;
            rstd[row] = r;
        }
    }
}

// ---- backward v3 (shipped until v4): kernel.cu's header says what it changed from v2; v4 (kernel.cu)
// says what it changes from this. The v4 flags measured one at a time (kFull, kept products, the
// lanes' butterfly, float groups of rows) are in benchmarks/results/2026-11-29-h200-layernorm-v4.
template <typename T, int kPacks, int kStages, int kMaxT>
__global__ void __launch_bounds__(kMaxT, 1)
layernorm_backward_v3_kernel(const T* __restrict__ grad_y, const T* __restrict__ x, const T* __restrict__ weight,
                             const stat_t<T>* __restrict__ mean, const stat_t<T>* __restrict__ rstd,
                             T* __restrict__ grad_x, part_t<T>* __restrict__ partial, int64_t rows, int64_t cols) {
    using S = stat_t<T>;
    using A = brrr::acc_t<T>;
    using Q = part_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    extern __shared__ __align__(16) unsigned char staged[];
    __shared__ S partial_g[2][kRowsMaxThreads / 32];
    __shared__ S partial_gx[2][kRowsMaxThreads / 32];
    const int packs = static_cast<int>(cols / W);
    P* stages = reinterpret_cast<P*>(staged);  // [kStages][grad_y | x][packs]
    const int t = threadIdx.x;
    const int stride = blockDim.x;
    const int warps = blockDim.x / 32;
    const int64_t step = gridDim.x;
    // Fill the pipeline: rows blockIdx.x + i * step into stage i, one commit group each (empty past
    // the last row, so that wait_group's count means the same every iteration).
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
        const int64_t r = blockIdx.x + i * step;
        if (r < rows) stage_row<T, kPacks>(stages + i * 2 * packs, grad_y, x, r, cols, packs, t, stride);
        cp_async_commit();
    }
    // Up to 2 packs a thread, weight stays in registers and the next row's mean and rstd are loaded a
    // row ahead; at 4, weight is read each row (from L1) and mean and rstd where used: holding them
    // spilled at the 128 registers a 512-thread block allows.
    constexpr bool kHoldWeight = kPacks <= 2;
    P w[kPacks];
    Q sum_w[kPacks][W], sum_b[kPacks][W];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (kHoldWeight && p < packs) w[k] = reinterpret_cast<const P*>(weight)[p];
#pragma unroll
        for (int j = 0; j < W; ++j) {
            sum_w[k][j] = Q(0);
            sum_b[k][j] = Q(0);
        }
    }
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
        if (kHoldWeight && next < rows) {
            mu_next = mean[next];
            rs_next = rstd[next];
        }
        if constexpr (!kHoldWeight) {
            mu = mean[row];
            rs = rstd[row];
        }
        // All but the kStages - 1 newest groups have landed: this row's among them.
        cp_async_wait<kStages - 1>();
        P g[kPacks], v[kPacks];
        const P* here = stages + s * 2 * packs;
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            const int p = k * stride + t;
            if (kHoldWeight && p < packs) {
                g[k] = here[p];
                v[k] = here[packs + p];
            }
        }
        const Affine<T> affine(mu, rs);
        // Pack k of grad_y, x and weight: held from the row sums to grad_x, or (4 packs) read again.
        const auto load = [&](int k, int p) {
            if constexpr (!kHoldWeight) {
                g[k] = here[p];
                v[k] = here[packs + p];
                w[k] = reinterpret_cast<const P*>(weight)[p];
            }
        };
        A sum_wg = 0;
        A sum_wgx = 0;
#pragma unroll
        for (int k = 0; k < kPacks; ++k) {
            if (k * stride + t < packs) {
                load(k, k * stride + t);
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
                load(k, p);
                A out[W];
#pragma unroll
                for (int j = 0; j < W; ++j) {
                    const A gy = brrr::to_acc(g[k].v[j]);
                    const A xhat = affine.centred(v[k].v[j]) * affine.r;
                    out[j] = affine.r * (gy * brrr::to_acc(w[k].v[j]) - mean_g - xhat * mean_gx);
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
        const int p = k * stride + t;
        if (p < packs) {
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

// The reduction with 4 neighbouring columns a thread (one 16- or 32-byte load a part): a quarter of
// the threads and load instructions. Each column's adds are the loop kernel's, in its order: the
// same bits. Needs cols % 4 == 0 (no group of 4 straddles grad_weight's and grad_bias's columns).
constexpr int kReduceVec = 4;
template <typename T>
__global__ void layernorm_backward_reduce_vec_kernel(const part_t<T>* __restrict__ partial, T* __restrict__ grad_weight,
                                                     T* __restrict__ grad_bias, int64_t parts, int64_t cols) {
    using S = stat_t<T>;
    using V = brrr::Pack<part_t<T>, kReduceVec>;
    __shared__ V groups[kReduceGroups][kReduceColumns];
    const int64_t c = (static_cast<int64_t>(blockIdx.x) * kReduceColumns + threadIdx.x) * kReduceVec;
    const bool bias_column = c >= cols;
    const int64_t column = bias_column ? c - cols : c;
    const part_t<T>* source = partial + (bias_column ? parts * cols : 0) + column;
    V total{};
    if (c < 2 * cols) {
#pragma unroll 4
        for (int64_t b = threadIdx.y; b < parts; b += kReduceGroups) {
            const V v = *reinterpret_cast<const V*>(source + b * cols);
#pragma unroll
            for (int j = 0; j < kReduceVec; ++j) total.v[j] += v.v[j];
        }
    }
    groups[threadIdx.y][threadIdx.x] = total;
    __syncthreads();
    if (threadIdx.y == 0 && c < 2 * cols) {
        for (int k = 1; k < kReduceGroups; ++k) {
#pragma unroll
            for (int j = 0; j < kReduceVec; ++j) total.v[j] += groups[k][threadIdx.x].v[j];
        }
        T* out = (bias_column ? grad_bias : grad_weight) + column;
#pragma unroll
        for (int j = 0; j < kReduceVec; ++j) out[j] = from_stat<T>(static_cast<S>(total.v[j]));
    }
}

namespace {

using bench::Row;

template <typename T>
struct Problem {
    using S = stat_t<T>;
    int64_t rows, cols;
    T *x, *w, *b, *y, *gy, *gx, *gw, *gb;
    S *mean, *rstd;
    std::vector<double> ref_y, ref_gx, ref_gw, ref_gb;
    double copy;

    Problem(int64_t r, int64_t c, double copy_gbps, unsigned seed) : rows(r), cols(c), copy(copy_gbps) {
        std::mt19937 gen(seed);
        std::normal_distribution<float> normal(0.f, 1.f);
        std::vector<T> hx(r * c), hg(r * c), hw(c), hb(c);
        for (int64_t i = 0; i < r; ++i) {
            const float offset = 0.5f * normal(gen), scale = 1.f + 0.5f * std::fabs(normal(gen));
            for (int64_t j = 0; j < c; ++j) hx[i * c + j] = bench::from_float<T>(offset + scale * normal(gen));
        }
        for (auto& v : hg) v = bench::from_float<T>(normal(gen));
        for (int64_t j = 0; j < c; ++j) {
            hw[j] = bench::from_float<T>(1.f + 0.2f * normal(gen));
            hb[j] = bench::from_float<T>(0.2f * normal(gen));
        }
        x = bench::upload(hx);
        gy = bench::upload(hg);
        w = bench::upload(hw);
        b = bench::upload(hb);
        CHECK(cudaMalloc(&y, r * c * sizeof(T)));
        CHECK(cudaMalloc(&gx, r * c * sizeof(T)));
        CHECK(cudaMalloc(&gw, c * sizeof(T)));
        CHECK(cudaMalloc(&gb, c * sizeof(T)));
        CHECK(cudaMalloc(&mean, r * sizeof(S)));
        CHECK(cudaMalloc(&rstd, r * sizeof(S)));
        reference(hx, hg, hw, hb);
    }

    void reference(const std::vector<T>& hx, const std::vector<T>& hg, const std::vector<T>& hw, const std::vector<T>& hb) {
        ref_y.resize(rows * cols);
        ref_gx.resize(rows * cols);
        ref_gw.assign(cols, 0.0);
        ref_gb.assign(cols, 0.0);
        std::vector<double> xhat(cols);
        for (int64_t i = 0; i < rows; ++i) {
            double mu = 0, var = 0;
            for (int64_t j = 0; j < cols; ++j) mu += bench::to_double(hx[i * cols + j]);
            mu /= cols;
            for (int64_t j = 0; j < cols; ++j) {
                const double d = bench::to_double(hx[i * cols + j]) - mu;
                var += d * d;
            }
            const double rs = 1.0 / std::sqrt(var / cols + 1e-5);
            double mg = 0, mgx = 0;
            for (int64_t j = 0; j < cols; ++j) {
                xhat[j] = (bench::to_double(hx[i * cols + j]) - mu) * rs;
                ref_y[i * cols + j] = xhat[j] * bench::to_double(hw[j]) + bench::to_double(hb[j]);
                const double g = bench::to_double(hg[i * cols + j]);
                const double wg = g * bench::to_double(hw[j]);
                mg += wg;
                mgx += wg * xhat[j];
                ref_gw[j] += g * xhat[j];
                ref_gb[j] += g;
            }
            mg /= cols;
            mgx /= cols;
            for (int64_t j = 0; j < cols; ++j) {
                const double wg = bench::to_double(hg[i * cols + j]) * bench::to_double(hw[j]);
                ref_gx[i * cols + j] = rs * (wg - mg - xhat[j] * mgx);
            }
        }
    }

    double fwd_bytes() const { return (2.0 * rows * cols + 2.0 * cols) * sizeof(T) + 2.0 * rows * sizeof(S); }
    double bwd_bytes() const { return (3.0 * rows * cols + 3.0 * cols) * sizeof(T) + 2.0 * rows * sizeof(S); }

    Row forward(const std::string& what, const std::function<void()>& fn) {
        bench::poison(y, rows * cols * sizeof(T));
        fn();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const double err = bench::rel_err(bench::download(y, rows * cols), ref_y);
        const double us = bench::median_us(fn);
        const double gbps = fwd_bytes() / us / 1e3;
        return {what, us, gbps, gbps / copy, err, true};
    }

    // x into y by cudaMemcpy: the forward's traffic with nothing computed (fwd_bytes less the small tensors).
    Row same_copy(const std::string& what) {
        const double us = bench::median_us(
            [&] { CHECK(cudaMemcpyAsync(y, x, rows * cols * sizeof(T), cudaMemcpyDeviceToDevice)); });
        const double gbps = 2.0 * rows * cols * sizeof(T) / us / 1e3;
        return {what, us, gbps, gbps / copy, 0.0, true};
    }

    // x copied to y by an SM kernel: `launch` gets them as float4 and their count.
    Row same_copy_kernel(const std::string& what, const std::function<void(const float4*, float4*, int64_t)>& launch) {
        const int64_t n = rows * cols * static_cast<int64_t>(sizeof(T)) / 16;
        const double us = bench::median_us([&] { launch(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n); });
        const double gbps = 2.0 * rows * cols * sizeof(T) / us / 1e3;
        return {what, us, gbps, gbps / copy, 0.0, true};
    }

    // fn writes gx, gw, gb from the current mean and rstd (a forward ran first).
    Row backward(const std::string& what, const std::function<void()>& fn) {
        bench::poison(gx, rows * cols * sizeof(T));
        bench::poison(gw, cols * sizeof(T));
        bench::poison(gb, cols * sizeof(T));
        fn();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const double err = std::max({bench::rel_err(bench::download(gx, rows * cols), ref_gx),
                                     bench::rel_err(bench::download(gw, cols), ref_gw),
                                     bench::rel_err(bench::download(gb, cols), ref_gb)});
        const auto w1 = bench::download(gw, cols), b1 = bench::download(gb, cols);
        fn();
        CHECK(cudaDeviceSynchronize());
        const auto w2 = bench::download(gw, cols), b2 = bench::download(gb, cols);
        const bool same = std::memcmp(w1.data(), w2.data(), cols * sizeof(T)) == 0 &&
                          std::memcmp(b1.data(), b2.data(), cols * sizeof(T)) == 0;
        const double us = bench::median_us(fn);
        const double gbps = bwd_bytes() / us / 1e3;
        return {what, us, gbps, gbps / copy, err, same};
    }
};

// A persistent backward kernel (v3's or a v4 candidate's signature) launched as kernel.cu's launcher
// launches v3: as many blocks as fit, then the fixed-order reduction of their parts (v3's loop, or
// the 4-column one). Null where the row does not fit the kernel's threads or shared memory.
template <typename T>
using BackwardKernel = void (*)(const T*, const T*, const T*, const stat_t<T>*, const stat_t<T>*, T*, part_t<T>*, int64_t,
                                int64_t);

// The reduction after the kernel: kernel.cu's loop, the 4-column one above, or none (to time the kernel
// alone: grad_weight and grad_bias are left poisoned, so the row's error reads NaN).
// pdl: the loop kernel launched with programmatic stream serialization, as kernel.cu's launch_reduce
// does (it may start launching before the kernel ends, v4 allowing it at its start). Tried on the
// H200 and not kept (2026-11-29-h200-layernorm-pdl): "v5", the grid launched cooperatively and the
// parts added by its own blocks after a grid-wide barrier: bfloat16 65.6 us against v4's 65.9 with the
// reduction kernel and 64.3 with the reduction by PDL; float32 120.2 against 117.5 and 116.5.
enum class Reduce { loop, vec, none, pdl };
constexpr const char* kReduceNames[] = {"", ", reduce vec4", ", no reduce (timing only)", ", reduce by PDL"};

struct Persistent {
    int packs_a_thread, stages, max_threads;
    Reduce reduce;
    bool balanced = false;  // as many blocks as give every block the same number of rows (4096 / 32 = 128)
};

template <typename T>
std::function<void()> persistent(Problem<T>& p, part_t<T>** scratch, BackwardKernel<T> kernel, Persistent how) {
    constexpr int W = 16 / sizeof(T);
    const int64_t packs = p.cols / W;
    const int threads = static_cast<int>((packs + how.packs_a_thread - 1) / how.packs_a_thread + 31) / 32 * 32;
    if (threads > how.max_threads) return nullptr;
    const size_t smem = static_cast<size_t>(how.stages) * 2 * packs * 16;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    int sms = 0, per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    if (per_sm == 0) return nullptr;
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    int64_t parts = std::min<int64_t>(p.rows, static_cast<int64_t>(sms) * per_sm);
    if (how.balanced) parts = (p.rows + (p.rows + parts - 1) / parts - 1) / ((p.rows + parts - 1) / parts);
    CHECK(cudaMalloc(scratch, 2 * parts * p.cols * sizeof(part_t<T>)));
    part_t<T>* s = *scratch;
    std::printf("  %d packs, %d stages: %d threads, %zu B shared, %d blocks an SM, %lld parts, %d registers, %zu B local\n",
                how.packs_a_thread, how.stages, threads, smem, per_sm, static_cast<long long>(parts), attr.numRegs,
                attr.localSizeBytes);
    return [&p, s, parts, threads, smem, kernel, how] {
        kernel<<<static_cast<unsigned>(parts), threads, smem>>>(p.gy, p.x, p.w, p.mean, p.rstd, p.gx, s, p.rows, p.cols);
        const dim3 grid = brrr::blocks_for(2 * p.cols, kReduceColumns), block(kReduceColumns, kReduceGroups);
        if (how.reduce == Reduce::pdl) {
            brrr::launch_early(layernorm_backward_reduce_kernel<T>, grid, block, 0, nullptr, static_cast<const part_t<T>*>(s),
                         p.gw, p.gb, parts, p.cols);
        } else if (how.reduce == Reduce::vec) {
            layernorm_backward_reduce_vec_kernel<T>
                <<<brrr::blocks_for(2 * p.cols, kReduceColumns * kReduceVec), block>>>(s, p.gw, p.gb, parts, p.cols);
        } else if (how.reduce == Reduce::loop) {
            layernorm_backward_reduce_kernel<T><<<grid, block>>>(s, p.gw, p.gb, parts, p.cols);
        }
    };
}

template <typename T>
void try_persistent(Problem<T>& p, std::vector<Row>& rows, std::vector<void*>& owned, const std::string& what,
                    BackwardKernel<T> kernel, Persistent how) {
    part_t<T>* scratch = nullptr;
    std::printf("%s\n", what.c_str());
    const auto fn = persistent<T>(p, &scratch, kernel, how);
    if (!fn) return;
    owned.push_back(scratch);
    rows.push_back(p.backward(what + " " + bench::name<T>() + kReduceNames[static_cast<int>(how.reduce)] +
                                  (how.balanced ? ", balanced grid" : ""),
                              fn));
}

template <typename T, int kPacks, int kStages, int kMaxT>
void try_v3(Problem<T>& p, std::vector<Row>& rows, std::vector<void*>& owned, Reduce reduce = Reduce::loop) {
    try_persistent<T>(p, rows, owned,
                      "bwd v3 packs " + std::to_string(kPacks) + " stages " + std::to_string(kStages) + " max " +
                          std::to_string(kMaxT),
                      layernorm_backward_v3_kernel<T, kPacks, kStages, kMaxT>, {kPacks, kStages, kMaxT, reduce});
}

// kernel.cu's v4 at other shapes (kFull only where packs == kPacks x threads).
template <typename T, int kPacks, int kStages, int kMaxT, bool kFull>
void try_v4(Problem<T>& p, std::vector<Row>& rows, std::vector<void*>& owned, Reduce reduce = Reduce::loop,
            bool balanced = false) {
    constexpr int W = 16 / sizeof(T);
    const int64_t packs = p.cols / W;
    const int64_t threads = ((packs + kPacks - 1) / kPacks + 31) / 32 * 32;
    if (kFull && packs != kPacks * threads) return;
    try_persistent<T>(p, rows, owned,
                      "bwd v4 packs " + std::to_string(kPacks) + " stages " + std::to_string(kStages) + " max " +
                          std::to_string(kMaxT) + (kFull ? " full" : ""),
                      layernorm_backward_v4_kernel<T, kPacks, kStages, kMaxT, kFull>,
                      {kPacks, kStages, kMaxT, reduce, balanced});
}

// Forward v3: a persistent grid of as many blocks as fit.
template <typename T, int kPacks, int kStages>
void try_fv3(Problem<T>& p, std::vector<Row>& rows) {
    constexpr int W = 16 / sizeof(T);
    const int64_t packs = p.cols / W;
    const int threads = static_cast<int>((packs + kPacks - 1) / kPacks + 31) / 32 * 32;
    if (threads > kMaxThreads) return;
    const size_t smem = static_cast<size_t>(kStages) * packs * 16;
    const auto kernel = layernorm_forward_v3_kernel<T, kPacks, kStages>;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    int sms = 0, per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    if (per_sm == 0) return;
    const int64_t grid = std::min<int64_t>(p.rows, static_cast<int64_t>(sms) * per_sm);
    rows.push_back(p.forward(std::string("fwd v3 ") + bench::name<T>() + " packs " + std::to_string(kPacks) + " stages " +
                                 std::to_string(kStages) + ", " + std::to_string(threads) + " thr x " +
                                 std::to_string(per_sm) + "/SM",
                             [&p, grid, threads, smem, kernel] {
                                 kernel<<<static_cast<unsigned>(grid), threads, smem>>>(p.x, p.w, p.b, p.y, p.mean, p.rstd,
                                                                                     p.rows, p.cols, stat_t<T>(1e-5));
                             }));
}

// A forward kernel of one row a block (the bench's signature), its registers, spills and blocks an SM
// in the row's label, timed at `threads` a block and `smem` bytes of dynamic shared memory.
template <typename T, typename K>
void time_row_kernel(Problem<T>& p, std::vector<Row>& rows, const std::string& what, K kernel, int threads, size_t smem) {
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    rows.push_back(p.forward(what + ": " + std::to_string(attr.numRegs) + " regs, " + std::to_string(attr.localSizeBytes) +
                                 " B local, " + std::to_string(per_sm) + "/SM " + bench::name<T>(),
                             [&p, kernel, threads, smem] {
                                 kernel<<<static_cast<unsigned>(p.rows), threads, smem>>>(p.x, p.w, p.b, p.y, p.mean,
                                                                                         p.rstd, p.cols, stat_t<T>(1e-5));
                             }));
}

// The forward's versions beside the shipped one (QUICK=1: not the persistent forward v3s).
template <typename T>
void forward_variants(Problem<T>& p, std::vector<Row>& rows) {
    // The forward's block kernel at other packs a thread (threads = packs / that, rounded up to warps).
    constexpr int W = 16 / sizeof(T);
    const int64_t packs = p.cols / W;
    const auto reread_as = [&](auto threads_, auto unroll_, auto min_blocks_, auto acc_sums_, auto hint_,
                               auto float_stats_) {
        constexpr int kT = decltype(threads_)::value, kU = decltype(unroll_)::value, kB = decltype(min_blocks_)::value;
        constexpr bool kF = decltype(acc_sums_)::value;
        constexpr int kH = decltype(hint_)::value;
        constexpr bool kFS = decltype(float_stats_)::value;
        time_row_kernel(p, rows, std::string("fwd reread") + (kFS ? " float stats" : kF ? " float sums" : "") +
                                     (kH == 1 ? " L1 last" : kH == 2 ? " L2 last" : "") + ", " + std::to_string(kT) +
                                     " threads, unroll " + std::to_string(kU) + ", min " + std::to_string(kB) + " blocks",
                        layernorm_forward_reread_kernel<T, kT, kU, kB, kF, kH, kFS>, kT, 0);
    };
    const auto reread = [&](auto threads_, auto unroll_, auto min_blocks_, auto acc_sums_, auto hint_) {
        reread_as(threads_, unroll_, min_blocks_, acc_sums_, hint_, std::false_type{});
    };
    using std::integral_constant;
    using F = std::false_type;
    using Y = std::true_type;
    using H1 = integral_constant<int, 1>;
    using H2 = integral_constant<int, 2>;
    reread(integral_constant<int, 256>{}, integral_constant<int, 8>{}, integral_constant<int, 0>{}, Y{},
           integral_constant<int, 0>{});
    reread(integral_constant<int, 256>{}, integral_constant<int, 8>{}, integral_constant<int, 0>{}, Y{}, H1{});
    reread(integral_constant<int, 256>{}, integral_constant<int, 8>{}, integral_constant<int, 0>{}, Y{}, H2{});
    reread(integral_constant<int, 256>{}, integral_constant<int, 4>{}, integral_constant<int, 0>{}, Y{}, H2{});
    reread(integral_constant<int, 512>{}, integral_constant<int, 4>{}, integral_constant<int, 0>{}, Y{}, H2{});
    reread(integral_constant<int, 1024>{}, integral_constant<int, 2>{}, integral_constant<int, 0>{}, Y{}, H2{});
    reread(integral_constant<int, 128>{}, integral_constant<int, 8>{}, integral_constant<int, 6>{}, Y{}, H2{});
    // Inductor's own shape (its kernel, dumped on the H200: 512 threads, one 16-byte load a thread an
    // iteration, 32 registers, 4 blocks an SM): the rows above held 4-8 packs a thread, 2 blocks an SM at 512.
    reread(integral_constant<int, 512>{}, integral_constant<int, 1>{}, integral_constant<int, 4>{}, Y{}, H2{});
    reread(integral_constant<int, 512>{}, integral_constant<int, 2>{}, integral_constant<int, 4>{}, Y{}, H2{});
    reread(integral_constant<int, 256>{}, integral_constant<int, 1>{}, integral_constant<int, 8>{}, Y{}, H2{});
    reread(integral_constant<int, 256>{}, integral_constant<int, 2>{}, integral_constant<int, 8>{}, Y{}, H2{});
    reread(integral_constant<int, 1024>{}, integral_constant<int, 1>{}, integral_constant<int, 2>{}, Y{}, H2{});
    reread(integral_constant<int, 512>{}, integral_constant<int, 1>{}, integral_constant<int, 4>{}, F{}, H2{});
    // Inductor's kernel as ptxas left it (its SASS, dumped on the H200): the loop unrolled, all four of a
    // thread's 16-byte loads issued before any sum, at 32 registers, everything in float.
    reread(integral_constant<int, 512>{}, integral_constant<int, 4>{}, integral_constant<int, 4>{}, Y{}, H2{});
    reread(integral_constant<int, 512>{}, integral_constant<int, 4>{}, integral_constant<int, 3>{}, Y{}, H2{});
    reread_as(integral_constant<int, 512>{}, integral_constant<int, 4>{}, integral_constant<int, 4>{}, Y{}, H2{}, Y{});
    reread_as(integral_constant<int, 512>{}, integral_constant<int, 4>{}, integral_constant<int, 0>{}, Y{}, H2{}, Y{});
    if (std::getenv("REREAD")) return;
    if (packs <= kMaxThreads) {
        rows.push_back(p.forward(std::string("fwd block kernel, 1 pack a thread ") + bench::name<T>(), [&] {
            launch_block<T, 1>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, packs, 1e-5, 0);
        }));
    }
    rows.push_back(p.forward(std::string("fwd block kernel, 2 packs a thread ") + bench::name<T>(), [&] {
        launch_block<T, 2>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, packs, 1e-5, 0);
    }));
    rows.push_back(p.forward(std::string("fwd block kernel, 4 packs a thread ") + bench::name<T>(), [&] {
        launch_block<T, 4>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, packs, 1e-5, 0);
    }));
    if constexpr (sizeof(T) == 4) {
        rows.push_back(p.forward(std::string("fwd block kernel, 8 packs a thread ") + bench::name<T>(), [&] {
            launch_block<T, 8>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, packs, 1e-5, 0);
        }));
    }
    if constexpr (sizeof(T) == 4) {
        // float sums: packs a thread x threads = the row's packs exactly
        const auto float_sums = [&](auto packs_a_thread, auto shift, auto min_blocks) {
            constexpr int K = decltype(packs_a_thread)::value;
            constexpr bool kS = decltype(shift)::value;
            constexpr int kB = decltype(min_blocks)::value;
            constexpr int kT = 2048 / K;  // the bench's 8192 floats are 2048 packs
            if (packs != 2048) return;
            const int threads = kT;
            rows.push_back(p.forward(std::string("fwd float sums") + (kS ? " shifted, " : ", ") + std::to_string(K) +
                                         " packs a thread, min " + std::to_string(kB) + " blocks " + bench::name<T>(),
                                     [&p, threads] {
                                         layernorm_forward_float_sums_kernel<K, kS, kT, kB><<<static_cast<unsigned>(p.rows), threads>>>(
                                             p.x, p.w, p.b, p.y, p.mean, p.rstd, p.cols, 1e-5);
                                     }));
        };
        using I0 = std::integral_constant<int, 0>;
        float_sums(std::integral_constant<int, 8>{}, std::true_type{}, I0{});
        float_sums(std::integral_constant<int, 8>{}, std::true_type{}, std::integral_constant<int, 4>{});
        float_sums(std::integral_constant<int, 8>{}, std::false_type{}, I0{});
        float_sums(std::integral_constant<int, 8>{}, std::false_type{}, std::integral_constant<int, 4>{});
        float_sums(std::integral_constant<int, 4>{}, std::true_type{}, I0{});
        float_sums(std::integral_constant<int, 4>{}, std::true_type{}, std::integral_constant<int, 2>{});
        float_sums(std::integral_constant<int, 16>{}, std::true_type{}, I0{});
        if (std::getenv("FLOAT_SUMS")) return;
    }
    const auto wb_early = [&](auto packs_a_thread) {
        constexpr int K = decltype(packs_a_thread)::value;
        const int threads = static_cast<int>((packs + K - 1) / K + 31) / 32 * 32;
        if (threads > kMaxThreads || static_cast<int64_t>(threads) * K != packs) return;  // it holds whole rows
        rows.push_back(p.forward(std::string("fwd weight early, ") + std::to_string(K) + " packs a thread " +
                                     bench::name<T>(),
                                 [&p, threads] {
                                     // "weight when" 0 under the 1024-thread bound: the 2026-11-28 trial
                                     layernorm_forward_wb_when_kernel<T, K, kMaxThreads, 0, 0>
                                         <<<static_cast<unsigned>(p.rows), threads>>>(
                                         p.x, p.w, p.b, p.y, p.mean, p.rstd, p.cols, stat_t<T>(1e-5));
                                 }));
    };
    if constexpr (sizeof(T) == 2) {
        const auto widened = [&](auto packs_a_thread) {
            constexpr int K = decltype(packs_a_thread)::value;
            const int threads = static_cast<int>((packs + K - 1) / K + 31) / 32 * 32;
            rows.push_back(p.forward(std::string("fwd widened once, ") + std::to_string(K) + " packs a thread " +
                                         bench::name<T>(),
                                     [&p, threads] {
                                         layernorm_forward_widened_kernel<T, K><<<static_cast<unsigned>(p.rows), threads>>>(
                                             p.x, p.w, p.b, p.y, p.mean, p.rstd, p.cols, stat_t<T>(1e-5));
                                     }));
        };
        widened(std::integral_constant<int, 2>{});
        widened(std::integral_constant<int, 4>{});
        if (packs == 4 * 256) {
            const auto flags = [&](auto full, auto prefetch, const char* what) {
                rows.push_back(p.forward(std::string("fwd widened once, 4 packs, ") + what + " " + bench::name<T>(), [&p] {
                    layernorm_forward_widened_kernel<T, 4, decltype(full)::value, decltype(prefetch)::value>
                        <<<static_cast<unsigned>(p.rows), 256>>>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.cols,
                                                                 stat_t<T>(1e-5));
                }));
            };
            flags(std::true_type{}, std::false_type{}, "full");
            flags(std::false_type{}, std::true_type{}, "prefetch w, b");
            flags(std::true_type{}, std::true_type{}, "full, prefetch w, b");
        }
    }
    wb_early(std::integral_constant<int, 2>{});
    wb_early(std::integral_constant<int, 4>{});
    if constexpr (sizeof(T) == 4) wb_early(std::integral_constant<int, 8>{});
    if (std::getenv("QUICK")) return;
    try_fv3<T, 2, 2>(p, rows);
    try_fv3<T, 2, 3>(p, rows);
    try_fv3<T, 4, 2>(p, rows);
    try_fv3<T, 4, 3>(p, rows);
    if constexpr (sizeof(T) == 4) {
        try_fv3<T, 8, 2>(p, rows);
        try_fv3<T, 8, 3>(p, rows);
    }
}

// The forward with its row staged in shared memory: each thread's packs land there by cp.async, so
// no register holds a load in flight, and the statistics and y read them back (three passes over
// shared memory, none over DRAM). A block then needs few registers, and the rows in flight an SM are
// bounded by shared memory (32 KB a float32 row of 8192) instead: v2 holds its row in registers, 4
// rows an SM in float32 (64 registers) and 6 in bfloat16. Each thread reads back only the packs it
// copied itself, so its own wait_group suffices: no barrier before the first pass.
template <typename T, int kPacks, int kThreads, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
layernorm_forward_staged_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                int64_t cols, stat_t<T> eps) {
    using S = stat_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    extern __shared__ __align__(16) unsigned char staged_row[];
    P* row_packs = reinterpret_cast<P*>(staged_row);
    __shared__ S partial_sum[kThreads / 32];
    __shared__ S partial_squares[kThreads / 32];
    const int64_t row = blockIdx.x;
    const int t = threadIdx.x;
    const T* xr = x + row * cols;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) cp_async16(row_packs + k * kThreads + t, xr + static_cast<int64_t>(k * kThreads + t) * W);
    cp_async_commit();
    cp_async_wait<0>();
    S total = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const P v = row_packs[k * kThreads + t];
        S s = to_stat(v.v[0]);
#pragma unroll
        for (int j = 1; j < W; ++j) s += to_stat(v.v[j]);
        total += s;
    }
    const S mu = row_sum<true>(total, partial_sum) / cols;
    S squares = 0;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const P v = row_packs[k * kThreads + t];
        S s = 0;
#pragma unroll
        for (int j = 0; j < W; ++j) {
            const S d = to_stat(v.v[j]) - mu;
            s += d * d;
        }
        squares += s;
    }
    const S r = S(1) / sqrt(row_sum<true>(squares, partial_squares) / cols + eps);
    const Affine<T> affine(mu, r);
    T* yr = y + row * cols;
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int q = k * kThreads + t;
        const P v = row_packs[q];
        const P w = reinterpret_cast<const P*>(weight)[q];
        const P b = reinterpret_cast<const P*>(bias)[q];
        brrr::acc_t<T> out[W];
#pragma unroll
        for (int j = 0; j < W; ++j) out[j] = affine(v.v[j], w.v[j], b.v[j]);
        reinterpret_cast<P*>(yr)[q] = round_pack<T, W>(out);
    }
    if (t == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

template <typename T, int kPacks, int kThreads, int kMinBlocks>
void try_staged(Problem<T>& p, std::vector<Row>& rows) {
    constexpr int W = 16 / sizeof(T);
    if (p.cols / W != static_cast<int64_t>(kPacks) * kThreads) return;
    const auto kernel = layernorm_forward_staged_kernel<T, kPacks, kThreads, kMinBlocks>;
    const size_t smem = static_cast<size_t>(p.cols) * sizeof(T);
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    time_row_kernel(p, rows, "fwd staged, " + std::to_string(kPacks) + " packs x " + std::to_string(kThreads) +
                                 " threads, min " + std::to_string(kMinBlocks) + " blocks", kernel, kThreads, smem);
}

template <typename T>
void staged_variants(Problem<T>& p, std::vector<Row>& rows) {
    rows.push_back(p.same_copy(std::string("copy of the forward's bytes (cudaMemcpy) ") + bench::name<T>()));
    if constexpr (sizeof(T) == 2) {
        try_staged<T, 8, 128, 0>(p, rows);
        try_staged<T, 8, 128, 8>(p, rows);
        try_staged<T, 8, 128, 12>(p, rows);
        try_staged<T, 4, 256, 6>(p, rows);
        try_staged<T, 2, 512, 3>(p, rows);
    } else {
        try_staged<T, 8, 256, 0>(p, rows);
        try_staged<T, 8, 256, 6>(p, rows);
        try_staged<T, 16, 128, 6>(p, rows);
        try_staged<T, 16, 128, 12>(p, rows);
        try_staged<T, 4, 512, 3>(p, rows);
    }
}

// kernel.cu's block kernel under launch bounds of its own block size (kMaxT threads, at least kMinBlocks
// blocks an SM) at the bench's width: packs x threads = the row's packs, each instance launched only
// where its threads hold the row exactly (kFull). Under the 1024-thread bound every instance had at
// most 64 registers, where bfloat16 rows of 8 packs a thread spilled; bfloat16's 8 x 128 at 6 blocks
// an SM ships (kernel.cu's kNarrow*).
template <typename T, int kPacks, int kMaxT, int kMinBlocks>
void try_bounded(Problem<T>& p, std::vector<Row>& rows) {
    constexpr int W = 16 / sizeof(T);
    if (p.cols / W != static_cast<int64_t>(kPacks) * kMaxT) return;
    time_row_kernel(p, rows, "fwd bounded, " + std::to_string(kPacks) + " packs x " + std::to_string(kMaxT) +
                                 " threads, min " + std::to_string(kMinBlocks) + " blocks",
                    layernorm_forward_block_kernel<T, kPacks, true, kMaxT, kMinBlocks>, kMaxT, 0);
}

template <typename T>
void bounded_variants(Problem<T>& p, std::vector<Row>& rows) {
    using S = stat_t<T>;
    rows.push_back(p.forward(std::string("fwd (ships: v2) ") + bench::name<T>(), [&] {
        layernorm_forward<T, S>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, 1e-5, 0);
    }));
    if constexpr (sizeof(T) == 2) {
        try_bounded<T, 4, 256, 1>(p, rows);
        try_bounded<T, 4, 256, 6>(p, rows);
        try_bounded<T, 8, 128, 1>(p, rows);
        try_bounded<T, 8, 128, 6>(p, rows);
        try_bounded<T, 8, 128, 8>(p, rows);
        try_bounded<T, 16, 64, 1>(p, rows);
        try_bounded<T, 16, 64, 8>(p, rows);
        try_bounded<T, 16, 64, 12>(p, rows);
    } else {
        try_bounded<T, 8, 256, 1>(p, rows);
        try_bounded<T, 8, 256, 3>(p, rows);
        try_bounded<T, 16, 128, 1>(p, rows);
        try_bounded<T, 16, 128, 4>(p, rows);
        try_bounded<T, 16, 128, 5>(p, rows);
        try_bounded<T, 32, 64, 1>(p, rows);
        try_bounded<T, 32, 64, 6>(p, rows);
    }
}

// What an SM kernel reaches copying the forward's bytes (x to y), beside cudaMemcpy's copy engine:
// a grid-stride float4 loop at 4, 8 and 16 blocks of 256 an SM, and blocks that each copy their own
// slice of 1-8 float4 a thread and leave, as a row kernel's blocks do.
template <typename T>
void copy_variants(Problem<T>& p, std::vector<Row>& rows) {
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const std::string dtype = bench::name<T>();
    for (const int per_sm : {4, 8, 16}) {
        rows.push_back(p.same_copy_kernel("copy, grid-stride float4, " + std::to_string(per_sm) + " x 256 an SM " + dtype,
                                          [&](const float4* s, float4* d, int64_t n) {
                                              bench::copy_kernel<<<sms * per_sm, 256>>>(s, d, n);
                                          }));
    }
    const auto slices = [&](auto unroll_) {
        constexpr int kU = decltype(unroll_)::value;
        rows.push_back(p.same_copy_kernel("copy, slices of " + std::to_string(kU) + " float4 x 256 threads " + dtype,
                                          [&](const float4* s, float4* d, int64_t n) {
                                              const int64_t per_block = 256 * kU;
                                              bench::copy_slices_kernel<kU><<<static_cast<unsigned>((n + per_block - 1) / per_block), 256>>>(s, d, n);
                                          }));
    };
    slices(std::integral_constant<int, 1>{});
    slices(std::integral_constant<int, 2>{});
    slices(std::integral_constant<int, 4>{});
    slices(std::integral_constant<int, 8>{});
}

template <typename T, int kCtas, int kThreads, int kPacks>
void try_cluster(Problem<T>& p, std::vector<Row>& rows) {
    constexpr int W = 16 / sizeof(T);
    if (p.cols / W != static_cast<int64_t>(kPacks) * kCtas * kThreads) return;
    const auto kernel = layernorm_forward_cluster_kernel<T, kCtas, kThreads, kPacks>;
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    rows.push_back(p.forward("fwd cluster of " + std::to_string(kCtas) + " x " + std::to_string(kThreads) + " threads x " +
                                 std::to_string(kPacks) + " packs: " + std::to_string(attr.numRegs) + " regs " +
                                 bench::name<T>(),
                             [&p, kernel] {
                                 kernel<<<static_cast<unsigned>(p.rows * kCtas), kThreads>>>(p.x, p.w, p.b, p.y, p.mean,
                                                                                          p.rstd, p.cols, stat_t<T>(1e-5));
                             }));
}

template <typename T>
void cluster_variants(Problem<T>& p, std::vector<Row>& rows) {
    rows.push_back(p.same_copy_kernel(std::string("copy, slices of 1 float4 x 256 threads ") + bench::name<T>(),
                                      [](const float4* s, float4* d, int64_t n) {
                                          bench::copy_slices_kernel<1><<<static_cast<unsigned>((n + 255) / 256), 256>>>(s, d, n);
                                      }));
    try_cluster<T, 2, 256, 2>(p, rows);  // bfloat16
    try_cluster<T, 4, 256, 1>(p, rows);
    try_cluster<T, 4, 128, 2>(p, rows);
    try_cluster<T, 8, 128, 1>(p, rows);
    try_cluster<T, 2, 512, 1>(p, rows);
    try_cluster<T, 2, 256, 4>(p, rows);  // float32
    try_cluster<T, 4, 256, 2>(p, rows);
    try_cluster<T, 8, 256, 1>(p, rows);
    try_cluster<T, 8, 128, 2>(p, rows);
    try_cluster<T, 4, 512, 1>(p, rows);
    try_cluster<T, 4, 128, 4>(p, rows);
}

template <typename T, int kThreads, int kPacks, int kMinBlocks, bool kDouble, int kHints = 0>
void try_triton_plan(Problem<T>& p, std::vector<Row>& rows) {
    constexpr int W = 16 / sizeof(T);
    if (p.cols / W != static_cast<int64_t>(kPacks) * kThreads) return;
    const char* hints[] = {", ", " with its L1 hints, ", " with its L1 and L2 hints, "};
    time_row_kernel(p, rows, std::string("fwd Triton's plan") + hints[kHints] +
                                 (kDouble ? "double" : "float") + " combine, " + std::to_string(kPacks) + " packs x " +
                                 std::to_string(kThreads) + " threads, min " + std::to_string(kMinBlocks) + " blocks",
                    layernorm_forward_triton_plan_kernel<T, kThreads, kPacks, kMinBlocks, kDouble, kHints>, kThreads, 0);
}

template <typename T>
void triton_plan_variants(Problem<T>& p, std::vector<Row>& rows) {
    try_triton_plan<T, 512, 4, 4, true>(p, rows);  // float32's 2048 packs
    try_triton_plan<T, 512, 4, 4, false>(p, rows);
    try_triton_plan<T, 512, 4, 4, true, 1>(p, rows);
    try_triton_plan<T, 512, 4, 4, false, 1>(p, rows);
    try_triton_plan<T, 512, 4, 3, true>(p, rows);
    try_triton_plan<T, 256, 8, 4, true>(p, rows);
    try_triton_plan<T, 1024, 2, 2, true>(p, rows);
    try_triton_plan<T, 512, 2, 4, true>(p, rows);  // bfloat16's 1024 packs
    try_triton_plan<T, 512, 2, 4, false>(p, rows);
    try_triton_plan<T, 256, 4, 6, true, 1>(p, rows);
    try_triton_plan<T, 256, 4, 8, true>(p, rows);
    try_triton_plan<T, 256, 4, 6, true>(p, rows);
    try_triton_plan<T, 128, 8, 8, true>(p, rows);
}

template <typename T, int kPacks, int kThreads, int kGroups, int kStages, bool kHold, bool kCopy = false>
void try_bulk(Problem<T>& p, std::vector<Row>& rows) {
    constexpr int W = 16 / sizeof(T);
    if (p.cols != static_cast<int64_t>(kPacks) * kThreads * W) return;
    const auto kernel = layernorm_forward_bulk_kernel<T, kPacks, kThreads, kGroups, kStages, kHold, kCopy>;
    const size_t smem = static_cast<size_t>(kStages) * p.cols * sizeof(T);
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) != cudaSuccess) {
        cudaGetLastError();
        return;
    }
    const int threads = kThreads * kGroups + 32;
    int sms = 0, per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    if (per_sm == 0) return;
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(p.rows, static_cast<int64_t>(sms) * per_sm));
    const std::string what = std::string(kCopy ? "copy bulk, " : "fwd bulk, ") + std::to_string(kPacks) + " packs x " +
                             std::to_string(kThreads) + " x " + std::to_string(kGroups) + " groups, " +
                             std::to_string(kStages) + " stages" + (kHold ? ", w b held" : "") + ": " +
                             std::to_string(attr.numRegs) + " regs, " + std::to_string(attr.localSizeBytes) + " B local, " +
                             std::to_string(per_sm) + "/SM " + bench::name<T>();
    const auto fn = [&p, kernel, grid, threads, smem] {
        kernel<<<grid, threads, smem>>>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, stat_t<T>(1e-5));
    };
    if (kCopy) {
        rows.push_back(p.same_copy_kernel(what, [&fn](const float4*, float4*, int64_t) { fn(); }));
    } else {
        rows.push_back(p.forward(what, fn));
    }
}

template <typename T>
void bulk_variants(Problem<T>& p, std::vector<Row>& rows) {
    rows.push_back(p.same_copy_kernel(std::string("copy, slices of 1 float4 x 256 threads ") + bench::name<T>(),
                                      [](const float4* s, float4* d, int64_t n) {
                                          bench::copy_slices_kernel<1><<<static_cast<unsigned>((n + 255) / 256), 256>>>(s, d, n);
                                      }));
    if constexpr (sizeof(T) == 2) {  // 1024 packs a row
        try_bulk<T, 8, 128, 2, 8, true, 1>(p, rows);
        try_bulk<T, 8, 128, 4, 12, false, 1>(p, rows);
        try_bulk<T, 8, 128, 1, 8, true>(p, rows);
        try_bulk<T, 8, 128, 2, 8, true>(p, rows);
        try_bulk<T, 8, 128, 2, 12, true>(p, rows);
        try_bulk<T, 8, 128, 4, 12, false>(p, rows);
        try_bulk<T, 4, 256, 2, 12, true>(p, rows);
        try_bulk<T, 4, 256, 3, 12, false>(p, rows);
        try_bulk<T, 8, 128, 6, 12, false>(p, rows);
    } else {  // 2048 packs a row
        try_bulk<T, 8, 256, 2, 6, true, 1>(p, rows);
        try_bulk<T, 8, 256, 1, 6, true>(p, rows);
        try_bulk<T, 8, 256, 2, 6, true>(p, rows);
        try_bulk<T, 8, 256, 2, 6, false>(p, rows);
        try_bulk<T, 16, 128, 4, 6, false>(p, rows);
        try_bulk<T, 4, 512, 2, 6, false>(p, rows);
        try_bulk<T, 8, 256, 3, 6, false>(p, rows);
    }
}

template <typename T, int kX, int kWb, int kAllow = 0>
void try_hinted(Problem<T>& p, std::vector<Row>& rows) {
    constexpr int W = 16 / sizeof(T);
    // v2's shapes at the bench size: float32 256 threads x 8 packs (bound 1024), bfloat16 128 x 8 (6 an SM).
    constexpr int kPacks = 8, kThreads = sizeof(T) == 4 ? 256 : 128;
    constexpr int kMaxT = sizeof(T) == 4 ? 1024 : 128, kMinB = sizeof(T) == 4 ? 0 : 6;
    if (p.cols / W != static_cast<int64_t>(kPacks) * kThreads) return;
    const char* names[] = {"plain", "L1::evict_first", "L1::no_allocate", "L1::evict_last", "L2 evict_last",
                           "L1+L2 evict_last", "L1::no_allocate + L2 evict_last"};
    const char* allow[] = {"", ", allow_dependents at the start", ", allow_dependents after the sums"};
    time_row_kernel(p, rows, std::string("fwd v2 hinted, x ") + names[kX] + ", weight and bias " + names[kWb] + allow[kAllow],
                    layernorm_forward_hinted_kernel<T, kPacks, kX, kWb, kMaxT, kMinB, kAllow>, kThreads, 0);
}

template <typename T>
void hinted_variants(Problem<T>& p, std::vector<Row>& rows) {
    if (std::getenv("ALLOW")) {  // where the forward allows the next launch (the shipped: at its start)
        try_hinted<T, 0, 5, 0>(p, rows);
        try_hinted<T, 0, 5, 1>(p, rows);
        try_hinted<T, 0, 5, 2>(p, rows);
        try_hinted<T, 0, 0, 0>(p, rows);
        try_hinted<T, 0, 0, 1>(p, rows);
        return;
    }
    if (std::getenv("TRITON_HINTS")) {  // the replica of Triton's kernel with the hints as Triton emits them
        try_triton_plan<T, 512, 4, 4, false, 2>(p, rows);
        try_triton_plan<T, 512, 4, 4, true, 2>(p, rows);
        try_triton_plan<T, 512, 4, 4, false, 0>(p, rows);
        try_triton_plan<T, 512, 2, 4, false, 2>(p, rows);
        try_triton_plan<T, 256, 4, 6, true, 2>(p, rows);
        try_triton_plan<T, 256, 4, 6, false, 2>(p, rows);
        try_hinted<T, 0, 5>(p, rows);
        return;
    }
    try_hinted<T, 0, 0>(p, rows);
    if (!std::getenv("L2_HINTS")) {
        try_hinted<T, 0, 3>(p, rows);
        try_hinted<T, 1, 0>(p, rows);
        try_hinted<T, 1, 3>(p, rows);
        try_hinted<T, 2, 0>(p, rows);
        try_hinted<T, 2, 3>(p, rows);
        try_hinted<T, 3, 3>(p, rows);
        triton_plan_variants(p, rows);
        return;
    }
    try_hinted<T, 4, 0>(p, rows);
    try_hinted<T, 5, 0>(p, rows);
    try_hinted<T, 5, 5>(p, rows);
    try_hinted<T, 6, 0>(p, rows);
    try_hinted<T, 6, 5>(p, rows);
    try_hinted<T, 0, 5>(p, rows);
    try_hinted<T, 4, 4>(p, rows);
}

// kernel.cu's narrow block path with weight and bias loaded at each kWhen, beside the shipped kernel
// (WB_WHEN=1). Only where the threads hold the row exactly.
template <typename T, int kPacks, int kMaxT, int kMinBlocks, int kWhen>
void try_wb_when(Problem<T>& p, std::vector<Row>& rows) {
    constexpr int W = 16 / sizeof(T);
    if (p.cols / W != static_cast<int64_t>(kPacks) * kMaxT) return;
    time_row_kernel(p, rows, "fwd weight when " + std::to_string(kWhen) + ", " + std::to_string(kPacks) + " packs x " +
                                 std::to_string(kMaxT) + " threads, min " + std::to_string(kMinBlocks) + " blocks",
                    layernorm_forward_wb_when_kernel<T, kPacks, kMaxT, kMinBlocks, kWhen>, kMaxT, 0);
}

template <typename T, int kPacks, int kT, int kRows, int kMinBlocks>
void try_wb_staged(Problem<T>& p, std::vector<Row>& rows) {
    constexpr int W = 16 / sizeof(T);
    if (p.cols / W != static_cast<int64_t>(kPacks) * kT) return;
    const auto kernel = layernorm_forward_wb_staged_kernel<T, kPacks, kT, kRows, kMinBlocks>;
    const size_t smem = 2 * static_cast<size_t>(p.cols) * sizeof(T);
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    cudaFuncAttributes attr;
    CHECK(cudaFuncGetAttributes(&attr, kernel));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kT * kRows, smem));
    const unsigned grid = static_cast<unsigned>((p.rows + kRows - 1) / kRows);
    rows.push_back(p.forward("fwd weight staged, " + std::to_string(kRows) + " rows of " + std::to_string(kPacks) +
                                 " packs x " + std::to_string(kT) + " threads: " + std::to_string(attr.numRegs) +
                                 " regs, " + std::to_string(attr.localSizeBytes) + " B local, " +
                                 std::to_string(per_sm) + "/SM " + bench::name<T>(),
                             [&p, kernel, grid, smem] {
                                 kernel<<<grid, kT * kRows, smem>>>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols,
                                                                   stat_t<T>(1e-5));
                             }));
}

template <typename T>
void wb_when_variants(Problem<T>& p, std::vector<Row>& rows) {
    if constexpr (sizeof(T) == 2) {
        try_bounded<T, 8, 128, 6>(p, rows);  // what ships, through the same launch as the variants
        // 8 packs a thread do not hold weight and bias as well: 52-776 bytes spilled at 4-6 blocks an SM.
        try_bounded<T, 4, 256, 3>(p, rows);
        try_wb_when<T, 4, 256, 3, 0>(p, rows);
        try_wb_when<T, 4, 256, 3, 1>(p, rows);
        try_wb_when<T, 4, 256, 2, 0>(p, rows);
        try_wb_staged<T, 8, 128, 1, 6>(p, rows);
        try_wb_staged<T, 8, 128, 2, 3>(p, rows);
        try_wb_staged<T, 8, 128, 4, 1>(p, rows);
        try_wb_staged<T, 4, 256, 2, 2>(p, rows);
        try_bounded<T, 8, 128, 6>(p, rows);  // again, last: the spread of one variant within the run
    } else {
        try_bounded<T, 8, 256, 1>(p, rows);
        try_wb_when<T, 8, 256, 1, 1>(p, rows);
        try_wb_when<T, 8, 256, 1, 0>(p, rows);
        try_wb_when<T, 8, 256, 2, 0>(p, rows);
        try_wb_staged<T, 8, 256, 1, 2>(p, rows);
        try_wb_staged<T, 8, 256, 2, 1>(p, rows);
        try_bounded<T, 8, 256, 1>(p, rows);
    }
}

template <typename T>
void run(double copy, std::vector<Row>& rows) {
    using S = stat_t<T>;
    Problem<T> p(4096, 8192, copy, 1234);
    rows.push_back(p.forward(std::string("fwd (ships: v2) ") + bench::name<T>(), [&] {
        layernorm_forward<T, S>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, 1e-5, 0);
    }));
    if (std::getenv("STAGED")) {  // the staged forwards (and the copy) beside the shipped one, nothing else
        staged_variants(p, rows);
        return;
    }
    rows.push_back(p.same_copy(std::string("copy of the forward's bytes (cudaMemcpy) ") + bench::name<T>()));
    // One set of forward variants beside the shipped forward and the copy, by the environment, and nothing else.
    const std::pair<const char*, void (*)(Problem<T>&, std::vector<Row>&)> only[] = {
        {"TRITON_PLAN", triton_plan_variants<T>}, {"CLUSTER", cluster_variants<T>}, {"COPIES", copy_variants<T>},
        {"BOUNDED", bounded_variants<T>}, {"BULK", bulk_variants<T>}, {"HINTED", hinted_variants<T>},
        {"WB_WHEN", wb_when_variants<T>}};
    for (const auto& [name, variants] : only) {
        if (std::getenv(name)) {
            variants(p, rows);
            return;
        }
    }
    if (!std::getenv("BWD_ONLY")) forward_variants(p, rows);
    if (std::getenv("FWD_ONLY")) return;
    // The backward reads the shipped forward's mean and rstd.
    layernorm_forward<T, S>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, 1e-5, 0);
    std::vector<void*> owned;
    const int64_t n = layernorm_backward_scratch<T>(p.rows, p.cols);
    S* scratch;
    CHECK(cudaMalloc(&scratch, n * sizeof(S)));
    owned.push_back(scratch);
    rows.push_back(p.backward(std::string("bwd (ships: v4) ") + bench::name<T>(), [&] {
        layernorm_backward<T, S>(p.gy, p.x, p.w, p.mean, p.rstd, p.gx, p.gw, p.gb, scratch, p.rows, p.cols, 0);
    }));
    {
        // The reduction alone, over the parts the shipped backward just wrote (L2 flushed first, so
        // its reads come from memory: a bound, the pipeline's come from L2).
        const int64_t parts = n / (2 * p.cols);
        const dim3 grid = brrr::blocks_for(2 * p.cols, kReduceColumns), block(kReduceColumns, kReduceGroups);
        const double loop_us = bench::median_us(
            [&] { layernorm_backward_reduce_kernel<T><<<grid, block>>>(scratch, p.gw, p.gb, parts, p.cols); });
        const double vec_us = bench::median_us([&] {
            layernorm_backward_reduce_vec_kernel<T>
                <<<brrr::blocks_for(2 * p.cols, kReduceColumns * kReduceVec), block>>>(scratch, p.gw, p.gb, parts, p.cols);
        });
        std::printf("reduce of %lld parts alone, %s: loop %.1f us, vec4 %.1f us\n", static_cast<long long>(parts),
                    bench::name<T>(), loop_us, vec_us);
    }
    // v2 as its launcher ran it (layernorm_backward before v3): the fused kernel, then the reduction.
    const FusedShape f2 = fused_shape<T>(p.cols);
    if (f2.packs_per_thread == 2) {
        const int64_t parts2 = fused_parts<T, 2>(p.rows, p.cols, f2.threads, f2.smem);
        S* scratch2;
        CHECK(cudaMalloc(&scratch2, 2 * parts2 * p.cols * sizeof(S)));
        owned.push_back(scratch2);
        rows.push_back(p.backward(std::string("bwd v2 ") + bench::name<T>(), [&p, f2, parts2, scratch2] {
            layernorm_backward_fused_kernel<T, 2><<<static_cast<unsigned>(parts2), f2.threads, f2.smem>>>(
                p.gy, p.x, p.w, p.mean, p.rstd, p.gx, scratch2, p.rows, p.cols);
            layernorm_backward_reduce_kernel<T><<<brrr::blocks_for(2 * p.cols, kReduceColumns),
                                                  dim3(kReduceColumns, kReduceGroups)>>>(scratch2, p.gw, p.gb, parts2,
                                                                                         p.cols);
        }));
    }
    if constexpr (sizeof(T) == 2) {
        try_v3<T, 2, 2, 512>(p, rows, owned);
        try_v4<T, 2, 2, 512, true>(p, rows, owned);
        try_v4<T, 2, 2, 512, true>(p, rows, owned, Reduce::none);
        try_v4<T, 2, 2, 512, true>(p, rows, owned, Reduce::pdl);
        try_v4<T, 2, 2, 512, true>(p, rows, owned, Reduce::pdl, true);
        try_v4<T, 2, 2, 512, true>(p, rows, owned, Reduce::none, true);
        try_v4<T, 2, 2, 512, false>(p, rows, owned);
        try_v4<T, 1, 2, 1024, true>(p, rows, owned);
    } else {
        try_v3<T, 4, 2, 512>(p, rows, owned);
        try_v4<T, 4, 2, 512, true>(p, rows, owned);
        try_v4<T, 4, 2, 512, true>(p, rows, owned, Reduce::none);
        try_v4<T, 4, 2, 512, true>(p, rows, owned, Reduce::pdl);
        try_v4<T, 4, 2, 512, true>(p, rows, owned, Reduce::pdl, true);
        try_v4<T, 4, 2, 512, true>(p, rows, owned, Reduce::none, true);
        try_v4<T, 4, 2, 512, false>(p, rows, owned);
        try_v4<T, 2, 2, 1024, true>(p, rows, owned);
    }
    for (void* q : owned) CHECK(cudaFree(q));
}

}  // namespace

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const double copy = bench::copy_gbps();
    std::vector<Row> rows;
    run<__nv_bfloat16>(copy, rows);
    run<float>(copy, rows);
    std::printf("layernorm 4096 x 8192, %% of a %.0f GB/s copy (bytes: each tensor read or written once)\n", copy);
    bench::print_rows(rows);
    return 0;
}
