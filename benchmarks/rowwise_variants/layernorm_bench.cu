// Layer norm's backward (and forward) versions side by side on one GPU, at brrr bench's size
// (4096 x 8192) in float32 and bfloat16: each checked against a float64 reference on the host
// (outputs poisoned first), its weight and bias gradients compared bit for bit over two runs, then
// timed (median of 30, L2 flushed) against a 1 GiB copy timed in the same process.
//   nvcc -std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90 -I pipeline/include \
//        benchmarks/rowwise_variants/layernorm_bench.cu -o /tmp/ln_bench && /tmp/ln_bench
#include "../../stages/layernorm/kernel.cu"
#include "harness.cuh"

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



// ---- forward "weight early" (not shipped): v2's block path with weight and bias loaded beside x --
// v2's normalise_row loads weight and bias (L2 hits) only after both row sums, so their latency comes
// after the reductions, once a row. Here they are loaded with the row, before the sums; the arithmetic
// and its order are normalise_row's (the same bits).
template <typename T, int kPacks>
__global__ void __launch_bounds__(kMaxThreads)
layernorm_forward_wb_early_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                                  T* __restrict__ y, stat_t<T>* __restrict__ mean, stat_t<T>* __restrict__ rstd,
                                  int64_t cols, stat_t<T> eps) {
    using S = stat_t<T>;
    constexpr int W = 16 / sizeof(T);
    using P = brrr::Pack<T, W>;
    __shared__ S partial_sum[kMaxThreads / 32];
    __shared__ S partial_squares[kMaxThreads / 32];
    const int64_t row = blockIdx.x;
    const int packs = static_cast<int>(cols / W);
    const int t = threadIdx.x, stride = blockDim.x;
    const T* xr = x + row * cols;
    P v[kPacks], w[kPacks], b[kPacks];
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (p < packs) {
            v[k] = reinterpret_cast<const P*>(xr)[p];
            w[k] = reinterpret_cast<const P*>(weight)[p];
            b[k] = reinterpret_cast<const P*>(bias)[p];
        }
    }
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
    const S mu = row_sum<true>(total, partial_sum) / cols;
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
    const S r = S(1) / sqrt(row_sum<true>(squares, partial_squares) / cols + eps);
    const Affine<T> affine(mu, r);
#pragma unroll
    for (int k = 0; k < kPacks; ++k) {
        const int p = k * stride + t;
        if (p < packs) {
            brrr::acc_t<T> out[W];
#pragma unroll
            for (int j = 0; j < W; ++j) out[j] = affine(v[k].v[j], w[k].v[j], b[k].v[j]);
            reinterpret_cast<P*>(y + row * cols)[p] = round_pack<T, W>(out);
        }
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

// v3 launched as kernel.cu's launcher will: a persistent grid of as many blocks as fit, then the
// fixed-order reduction of their parts.
template <typename T, int kPacks, int kStages, int kMaxT>
std::function<void()> v3(Problem<T>& p, part_t<T>** scratch) {
    constexpr int W = 16 / sizeof(T);
    const int64_t packs = p.cols / W;
    const int threads = static_cast<int>((packs + kPacks - 1) / kPacks + 31) / 32 * 32;
    if (threads > kMaxT) return nullptr;
    const size_t smem = static_cast<size_t>(kStages) * 2 * packs * 16;
    const auto kernel = layernorm_backward_v3_kernel<T, kPacks, kStages, kMaxT>;
    if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)) != cudaSuccess) {
        cudaGetLastError();
        return nullptr;
    }
    int sms = 0, per_sm = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    if (per_sm == 0) return nullptr;
    const int64_t parts = std::min<int64_t>(p.rows, static_cast<int64_t>(sms) * per_sm);
    CHECK(cudaMalloc(scratch, 2 * parts * p.cols * sizeof(part_t<T>)));
    part_t<T>* s = *scratch;
    std::printf("  v3<%d packs, %d stages, max %d>: %d threads, %zu B shared, %d blocks an SM, %lld parts\n", kPacks,
                kStages, kMaxT, threads, smem, per_sm, static_cast<long long>(parts));
    return [&p, s, parts, threads, smem, kernel] {
        kernel<<<static_cast<unsigned>(parts), threads, smem>>>(p.gy, p.x, p.w, p.mean, p.rstd, p.gx, s, p.rows, p.cols);
        layernorm_backward_reduce_kernel<T><<<brrr::blocks_for(2 * p.cols, kReduceColumns),
                                              dim3(kReduceColumns, kReduceGroups)>>>(s, p.gw, p.gb, parts, p.cols);
    };
}

template <typename T, int kPacks, int kStages, int kMaxT>
void try_v3(Problem<T>& p, std::vector<Row>& rows, std::vector<void*>& owned) {
    part_t<T>* scratch = nullptr;
    const auto fn = v3<T, kPacks, kStages, kMaxT>(p, &scratch);
    if (!fn) return;
    owned.push_back(scratch);
    rows.push_back(p.backward(std::string("bwd v3 ") + bench::name<T>() + " packs " + std::to_string(kPacks) +
                                  " stages " + std::to_string(kStages) + " max " + std::to_string(kMaxT),
                              fn));
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

template <typename T>
void run(double copy, std::vector<Row>& rows) {
    using S = stat_t<T>;
    Problem<T> p(4096, 8192, copy, 1234);
    rows.push_back(p.forward(std::string("fwd (ships: v2) ") + bench::name<T>(), [&] {
        layernorm_forward<T, S>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, 1e-5, 0);
    }));
    // The forward's block kernel at other packs a thread (threads = packs / that, rounded up to warps).
    constexpr int W = 16 / sizeof(T);
    const int64_t packs = p.cols / W;
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
    const auto wb_early = [&](auto packs_a_thread) {
        constexpr int K = decltype(packs_a_thread)::value;
        const int threads = static_cast<int>((packs + K - 1) / K + 31) / 32 * 32;
        if (threads > kMaxThreads) return;
        rows.push_back(p.forward(std::string("fwd weight early, ") + std::to_string(K) + " packs a thread " +
                                     bench::name<T>(),
                                 [&p, threads] {
                                     layernorm_forward_wb_early_kernel<T, K><<<static_cast<unsigned>(p.rows), threads>>>(
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
    if (std::getenv("QUICK")) goto backward;
    try_fv3<T, 2, 2>(p, rows);
    try_fv3<T, 2, 3>(p, rows);
    try_fv3<T, 4, 2>(p, rows);
    try_fv3<T, 4, 3>(p, rows);
    if constexpr (sizeof(T) == 4) {
        try_fv3<T, 8, 2>(p, rows);
        try_fv3<T, 8, 3>(p, rows);
    }
backward:
    // The backward reads the shipped forward's mean and rstd.
    layernorm_forward<T, S>(p.x, p.w, p.b, p.y, p.mean, p.rstd, p.rows, p.cols, 1e-5, 0);
    std::vector<void*> owned;
    const int64_t n = layernorm_backward_scratch<T>(p.rows, p.cols);
    S* scratch;
    CHECK(cudaMalloc(&scratch, n * sizeof(S)));
    owned.push_back(scratch);
    rows.push_back(p.backward(std::string("bwd (ships: v3) ") + bench::name<T>(), [&] {
        layernorm_backward<T, S>(p.gy, p.x, p.w, p.mean, p.rstd, p.gx, p.gw, p.gb, scratch, p.rows, p.cols, 0);
    }));
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
        try_v3<T, 1, 2, 1024>(p, rows, owned);
        try_v3<T, 1, 3, 1024>(p, rows, owned);
        try_v3<T, 2, 2, 512>(p, rows, owned);
        try_v3<T, 2, 3, 512>(p, rows, owned);
        try_v3<T, 2, 4, 512>(p, rows, owned);
        try_v3<T, 4, 2, 256>(p, rows, owned);
        try_v3<T, 4, 3, 256>(p, rows, owned);
    } else {
        try_v3<T, 2, 2, 1024>(p, rows, owned);
        try_v3<T, 2, 3, 1024>(p, rows, owned);
        try_v3<T, 4, 2, 512>(p, rows, owned);
        try_v3<T, 4, 3, 512>(p, rows, owned);
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
