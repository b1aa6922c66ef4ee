// Softmax's forward and backward variants side by side on one GPU, at brrr bench's size (4096 x
// 8192) in bfloat16 and float32: each checked against a float64 host reference (outputs poisoned
// first) and run twice for the same bits, then timed (median of 30, L2 flushed) against a 1 GiB copy
// timed in the same process. Copy kernels of other shapes come first: they say what an ordinary
// load/store kernel can reach at all.
//   nvcc -std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90 -I pipeline/include \
//        benchmarks/rowwise_variants/softmax_bench.cu -o /tmp/sm_bench && /tmp/sm_bench
//
// Why these variants (Nsight Compute on the H200, 2026-11-28-h200-16bit/ncu.txt): the bfloat16
// forward issues an instruction every 1.3 cycles on each scheduler (9.8 cycles a warp, 7.5 warps),
// so it is issue-bound, not memory-bound: ~13.5 instructions an element (widen, max; widen, sub,
// mul, ex2, add; widen, sub, mul, ex2, mul, round). "lean" takes the max on the raw bfloat16 pairs
// (HMNMX2, exact) and folds the subtraction into the exp's scaling (one FFMA): ~9. "keep" holds the
// exps in registers instead of computing them twice: ~6. "online" reduces (max, sum) pairs in one
// round, so a row waits at one barrier instead of two. The backward is latency-bound
// (long_scoreboard first, 29% of issue slots): variants change threads a row, blocks an SM, and
// a persistent grid that loads the next row while it reduces this one.
#include "../../stages/softmax/kernel.cu"
#include "harness.cuh"

namespace {

using bench::Row;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float ex2(float v) {
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    return r;
}

// Element j of a raw 16-byte pack as float.
template <typename T>
__device__ __forceinline__ float elem(const uint4& r, int j) {
    const uint32_t* w = reinterpret_cast<const uint32_t*>(&r);
    if constexpr (sizeof(T) == 2) {
        return __uint_as_float(j % 2 == 0 ? w[j / 2] << 16 : w[j / 2] & 0xffff0000u);
    } else {
        return __uint_as_float(w[j]);
    }
}

template <typename T>
__device__ __forceinline__ uint4 pack(const float (&a)[16 / sizeof(T)]) {
    uint4 out;
    uint32_t* w = reinterpret_cast<uint32_t*>(&out);
    if constexpr (sizeof(T) == 2) {
#pragma unroll
        for (int j = 0; j < 8; j += 2) {
            const __nv_bfloat162 two = __floats2bfloat162_rn(a[j], a[j + 1]);
            w[j / 2] = *reinterpret_cast<const uint32_t*>(&two);
        }
    } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) w[j] = __float_as_uint(a[j]);
    }
    return out;
}

// The max of a raw pack: bfloat16 pairs by HMNMX2 (exact), then the two halves.
template <typename T>
__device__ __forceinline__ float pack_max(const uint4* r, int n) {
    if constexpr (sizeof(T) == 2) {
        __nv_bfloat162 m = *reinterpret_cast<const __nv_bfloat162*>(&r[0].x);
#pragma unroll
        for (int k = 0; k < n; ++k) {
            const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(&r[k]);
#pragma unroll
            for (int q = 0; q < 4; ++q) m = __hmax2(m, p[q]);
        }
        return fmaxf(__low2float(m), __high2float(m));
    } else {
        float m = -INFINITY;
#pragma unroll
        for (int k = 0; k < n; ++k)
#pragma unroll
            for (int j = 0; j < 4; ++j) m = fmaxf(m, elem<T>(r[k], j));
        return m;
    }
}

// exp(v - m): bfloat16 by ex2 of one FFMA (m_l2 = m * log2 e); float by the accurate exp, or by ex2
// of the difference when kFast.
template <typename T, bool kFast>
__device__ __forceinline__ float exp_rel(float v, float m, float m_l2) {
    if constexpr (sizeof(T) == 2) return ex2(fmaf(v, kLog2e, -m_l2));
    else if constexpr (kFast) return ex2((v - m) * kLog2e);
    else return expf(v - m);
}

// A warp's (max, sum of exp(x - max)) pairs folded by a butterfly, every lane left with the warp's pair.
template <typename T, bool kFast>
__device__ __forceinline__ void warp_online(float& wm, float& ws) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
        const float om = __shfl_xor_sync(0xffffffffu, wm, o), os = __shfl_xor_sync(0xffffffffu, ws, o);
        const float nm = fmaxf(wm, om);
        ws = ws * exp_rel<T, kFast>(wm, nm, nm * kLog2e) + os * exp_rel<T, kFast>(om, nm, nm * kLog2e);
        wm = nm;
    }
}

template <int kWarps>
__device__ __forceinline__ float block_fold(float v, float* part, bool is_max) {
    if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;
    __syncthreads();
    float r = part[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) r = is_max ? fmaxf(r, part[w]) : r + part[w];
    return r;
}

// Forward: one row a block of TPR threads, P packs a thread (cols == TPR * P * W).
template <typename T, int TPR, int P, int kMin, bool kOnline, bool kKeep, bool kFast>
__global__ void __launch_bounds__(TPR, kMin) fwd_kernel(const T* __restrict__ x, T* __restrict__ y, int cols) {
    constexpr int W = 16 / sizeof(T);
    constexpr int kWarps = TPR / 32;
    __shared__ float part_a[kWarps], part_b[kWarps];
    const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
    const uint4* in = reinterpret_cast<const uint4*>(x + base) + threadIdx.x;
    uint4 r[P];
#pragma unroll
    for (int k = 0; k < P; ++k) r[k] = in[k * TPR];
    float m = pack_max<T>(r, P);
    float kept[kKeep ? P : 1][W];
    float scale;  // what exp(x - m_local) is multiplied by at the store
    // The sum of exp(x - m) over the thread's elements, each kept for the store when kKeep.
    const auto sum_exps = [&](float m) {
        const float ml2 = m * kLog2e;
        float s = 0;
#pragma unroll
        for (int k = 0; k < P; ++k)
#pragma unroll
            for (int j = 0; j < W; ++j) {
                const float e = exp_rel<T, kFast>(elem<T>(r[k], j), m, ml2);
                if constexpr (kKeep) kept[k][j] = e;
                s += e;
            }
        return s;
    };
    float m_row;
    if constexpr (kOnline) {
        float s = sum_exps(m);
        // (max, sum) pairs: warp butterfly, then one shared round folded in a fixed order.
        float wm = m, ws = s;
        warp_online<T, kFast>(wm, ws);
        if (threadIdx.x % 32 == 0) {
            part_a[threadIdx.x / 32] = wm;
            part_b[threadIdx.x / 32] = ws;
        }
        __syncthreads();
        float M = part_a[0];
#pragma unroll
        for (int w = 1; w < kWarps; ++w) M = fmaxf(M, part_a[w]);
        float S = 0;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) S += part_b[w] * exp_rel<T, kFast>(part_a[w], M, M * kLog2e);
        m_row = M;
        scale = kKeep ? exp_rel<T, kFast>(m, M, M * kLog2e) / S : 1.f / S;
    } else {
        m = block_fold<kWarps>(brrr::warp_max(m), part_a, true);
        float s = sum_exps(m);
        s = block_fold<kWarps>(brrr::warp_sum(s), part_b, false);
        m_row = m;
        scale = 1.f / s;
    }
    const float ml2 = m_row * kLog2e;
    uint4* out = reinterpret_cast<uint4*>(y + base) + threadIdx.x;
#pragma unroll
    for (int k = 0; k < P; ++k) {
        float o[W];
#pragma unroll
        for (int j = 0; j < W; ++j) {
            if constexpr (kKeep) o[j] = kept[k][j] * scale;
            else o[j] = exp_rel<T, kFast>(elem<T>(r[k], j), m_row, ml2) * scale;
        }
        out[k * TPR] = pack<T>(o);
    }
}

// Staged forward: a persistent grid, each block taking rows gridDim.x apart, each row's packs copied
// into shared memory by cp.async kStages - 1 rows ahead of the one worked on, so the block always has
// loads in flight, also while its threads wait at the row's barriers (the register kernel has none
// then). A thread reads back only the slots it copied itself, so cp.async.wait_group alone orders
// them; the reductions' shared slots alternate between rows, so one row's reads never meet the
// next one's writes. Online (max, sum) pairs: one barrier a row.
__device__ __forceinline__ void cp16(void* to, const void* from) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(to))),
                 "l"(from));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

template <typename T, int TPR, int P, int kStages, int kMin>
__global__ void __launch_bounds__(TPR, kMin) fwd_staged_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows,
                                                               int cols) {
    constexpr int W = 16 / sizeof(T);
    constexpr int kWarps = TPR / 32;
    extern __shared__ uint4 stage[];  // [kStages][P][TPR]
    __shared__ float part_m[2][kWarps], part_s[2][kWarps];
    const auto issue = [&](int64_t row, int s) {
        if (row < rows) {
            const uint4* in = reinterpret_cast<const uint4*>(x + row * cols) + threadIdx.x;
#pragma unroll
            for (int k = 0; k < P; ++k) cp16(&stage[(s * P + k) * TPR + threadIdx.x], in + k * TPR);
        }
        cp_commit();  // an empty group past the last row keeps the count of groups the same
    };
    int64_t row = blockIdx.x;
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) issue(row + s * static_cast<int64_t>(gridDim.x), s);
    for (int it = 0; row < rows; ++it, row += gridDim.x) {
        issue(row + (kStages - 1) * static_cast<int64_t>(gridDim.x), (it + kStages - 1) % kStages);
        cp_wait<kStages - 1>();
        uint4 r[P];
#pragma unroll
        for (int k = 0; k < P; ++k) r[k] = stage[((it % kStages) * P + k) * TPR + threadIdx.x];
        const float m = pack_max<T>(r, P);
        const float ml2 = m * kLog2e;
        float kept[P][W];
        float s = 0;
#pragma unroll
        for (int k = 0; k < P; ++k)
#pragma unroll
            for (int j = 0; j < W; ++j) {
                kept[k][j] = exp_rel<T, false>(elem<T>(r[k], j), m, ml2);
                s += kept[k][j];
            }
        float wm = m, ws = s;
        warp_online<T, false>(wm, ws);
        if (threadIdx.x % 32 == 0) {
            part_m[it & 1][threadIdx.x / 32] = wm;
            part_s[it & 1][threadIdx.x / 32] = ws;
        }
        __syncthreads();
        float M = part_m[it & 1][0];
#pragma unroll
        for (int w = 1; w < kWarps; ++w) M = fmaxf(M, part_m[it & 1][w]);
        float S = 0;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) S += part_s[it & 1][w] * exp_rel<T, false>(part_m[it & 1][w], M, M * kLog2e);
        const float scale = exp_rel<T, false>(m, M, M * kLog2e) / S;
        uint4* out = reinterpret_cast<uint4*>(y + row * cols) + threadIdx.x;
#pragma unroll
        for (int k = 0; k < P; ++k) {
            float o[W];
#pragma unroll
            for (int j = 0; j < W; ++j) o[j] = kept[k][j] * scale;
            out[k * TPR] = pack<T>(o);
        }
    }
    cp_wait<0>();
}

// Backward: grad_x = y * (g - sum(g * y)), one row a block (kPersist: a grid of G blocks takes rows
// G apart and loads the next row's packs before reducing this one).
template <typename T, int TPR, int P, int kMin, bool kPersist, bool kStream>
__global__ void __launch_bounds__(TPR, kMin)
    bwd_kernel(const T* __restrict__ gy, const T* __restrict__ y, T* __restrict__ gx, int64_t rows, int cols) {
    constexpr int W = 16 / sizeof(T);
    constexpr int kWarps = TPR / 32;
    __shared__ float part[2][kWarps];
    int64_t row = blockIdx.x;
    const auto load = [&](int64_t rw, uint4 (&g)[P], uint4 (&v)[P]) {
        const uint4* gi = reinterpret_cast<const uint4*>(gy + rw * cols) + threadIdx.x;
        const uint4* yi = reinterpret_cast<const uint4*>(y + rw * cols) + threadIdx.x;
#pragma unroll
        for (int k = 0; k < P; ++k) {
            if constexpr (kStream) {
                g[k] = __ldcs(gi + k * TPR);
                v[k] = __ldcs(yi + k * TPR);
            } else {
                g[k] = gi[k * TPR];
                v[k] = yi[k * TPR];
            }
        }
    };
    uint4 g[P], v[P];
    load(row, g, v);
    for (int it = 0;; ++it) {
        const int64_t next = row + gridDim.x;
        uint4 ng[P], nv[P];
        if (kPersist && next < rows) load(next, ng, nv);
        float dot = 0;
#pragma unroll
        for (int k = 0; k < P; ++k)
#pragma unroll
            for (int j = 0; j < W; ++j) dot = fmaf(elem<T>(g[k], j), elem<T>(v[k], j), dot);
        dot = block_fold<kWarps>(brrr::warp_sum(dot), part[it & 1], false);
        uint4* out = reinterpret_cast<uint4*>(gx + row * cols) + threadIdx.x;
#pragma unroll
        for (int k = 0; k < P; ++k) {
            float o[W];
#pragma unroll
            for (int j = 0; j < W; ++j) o[j] = elem<T>(v[k], j) * (elem<T>(g[k], j) - dot);
            if constexpr (kStream) __stcs(out + k * TPR, pack<T>(o));
            else out[k * TPR] = pack<T>(o);
        }
        if (!kPersist || next >= rows) return;
        row = next;
#pragma unroll
        for (int k = 0; k < P; ++k) {
            g[k] = ng[k];
            v[k] = nv[k];
        }
    }
}

// Copy kernels: U 16-byte loads a thread issued before its U stores, blocks of 256 over the whole
// buffer (no grid stride); kStream marks them evict-first.
template <int U, bool kStream>
__global__ void __launch_bounds__(256) copy_unrolled(const uint4* __restrict__ s, uint4* __restrict__ d, int64_t n) {
    const int64_t first = static_cast<int64_t>(blockIdx.x) * 256 * U + threadIdx.x;
    uint4 r[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
        const int64_t i = first + k * 256;
        if (i < n) r[k] = kStream ? __ldcs(s + i) : s[i];
    }
#pragma unroll
    for (int k = 0; k < U; ++k) {
        const int64_t i = first + k * 256;
        if (i < n) {
            if (kStream) __stcs(d + i, r[k]);
            else d[i] = r[k];
        }
    }
}

template <typename T>
struct Problem {
    int64_t rows, cols;
    T *x, *y, *gy, *gx;
    std::vector<double> ref_y, ref_gx;
    double copy;

    Problem(int64_t r, int64_t c, double copy_gbps, unsigned seed) : rows(r), cols(c), copy(copy_gbps) {
        std::mt19937 gen(seed);
        std::normal_distribution<float> normal(0.f, 1.f);
        std::vector<T> hx(r * c), hg(r * c);
        for (int64_t i = 0; i < r; ++i) {
            const float offset = 4.f * normal(gen), scale = 1.f + 2.f * std::fabs(normal(gen));
            for (int64_t j = 0; j < c; ++j) hx[i * c + j] = bench::from_float<T>(offset + scale * normal(gen));
        }
        for (auto& v : hg) v = bench::from_float<T>(normal(gen));
        x = bench::upload(hx);
        gy = bench::upload(hg);
        CHECK(cudaMalloc(&y, r * c * sizeof(T)));
        CHECK(cudaMalloc(&gx, r * c * sizeof(T)));
        ref_y.resize(r * c);
        ref_gx.resize(r * c);
        // The backward's reference takes y as the shipped forward stores it (what autograd hands it).
        softmax_forward<T>(x, y, r, c, 0);
        const std::vector<T> hy = bench::download(y, r * c);
        for (int64_t i = 0; i < r; ++i) {
            double m = -INFINITY, s = 0, dot = 0;
            for (int64_t j = 0; j < c; ++j) m = std::max(m, bench::to_double(hx[i * c + j]));
            for (int64_t j = 0; j < c; ++j) s += std::exp(bench::to_double(hx[i * c + j]) - m);
            for (int64_t j = 0; j < c; ++j) {
                ref_y[i * c + j] = std::exp(bench::to_double(hx[i * c + j]) - m) / s;
                dot += bench::to_double(hg[i * c + j]) * bench::to_double(hy[i * c + j]);
            }
            for (int64_t j = 0; j < c; ++j) {
                ref_gx[i * c + j] = bench::to_double(hy[i * c + j]) * (bench::to_double(hg[i * c + j]) - dot);
            }
        }
    }

    Row time(const std::string& what, T* out, const std::vector<double>& ref, double bytes,
             const std::function<void()>& fn) {
        bench::poison(out, rows * cols * sizeof(T));
        fn();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const auto a = bench::download(out, rows * cols);
        const double err = bench::rel_err(a, ref);
        fn();
        CHECK(cudaDeviceSynchronize());
        const auto b = bench::download(out, rows * cols);
        const bool same = std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
        const double us = bench::median_us(fn);
        const double gbps = bytes / us / 1e3;
        return {what + " " + bench::name<T>(), us, gbps, gbps / copy, err, same};
    }
    Row forward(const std::string& what, const std::function<void()>& fn) {
        return time(what, y, ref_y, 2.0 * rows * cols * sizeof(T), fn);
    }
    Row backward(const std::string& what, const std::function<void()>& fn) {
        // y must be the shipped forward's again (a variant may have written other bits).
        softmax_forward<T>(x, y, rows, cols, 0);
        return time(what, gx, ref_gx, 3.0 * rows * cols * sizeof(T), fn);
    }
};

template <typename T, int TPR, int P, int kMin, bool kOnline, bool kKeep, bool kFast = false>
void fwd(Problem<T>& p, std::vector<Row>& rows, const char* what) {
    if (p.cols != static_cast<int64_t>(TPR) * P * (16 / sizeof(T))) return;
    rows.push_back(p.forward(std::string(what) + ", " + std::to_string(TPR) + " x " + std::to_string(P) + " packs, min " +
                                 std::to_string(kMin) + "/SM",
                             [&p] {
                                 fwd_kernel<T, TPR, P, kMin, kOnline, kKeep, kFast>
                                     <<<static_cast<unsigned>(p.rows), TPR>>>(p.x, p.y, static_cast<int>(p.cols));
                             }));
}

template <typename T, int TPR, int P, int kStages, int kMin>
void fwd_staged(Problem<T>& p, std::vector<Row>& rows, int per_sm_cap = 0) {
    if (p.cols != static_cast<int64_t>(TPR) * P * (16 / sizeof(T))) return;
    const auto kern = fwd_staged_kernel<T, TPR, P, kStages, kMin>;
    const int smem = kStages * P * TPR * 16;
    CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0, sms = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kern, TPR, smem));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    if (per_sm_cap > 0) per_sm = std::min(per_sm, per_sm_cap);
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(p.rows, static_cast<int64_t>(sms) * per_sm));
    rows.push_back(p.forward("fwd staged " + std::to_string(kStages) + " rows, " + std::to_string(TPR) + " x " +
                                 std::to_string(P) + " packs, " + std::to_string(per_sm) + "/SM",
                             [&p, grid, smem, kern] {
                                 kern<<<grid, TPR, smem>>>(p.x, p.y, p.rows, static_cast<int>(p.cols));
                             }));
}

template <typename T, int TPR, int P, int kMin, bool kPersist, bool kStream>
void bwd(Problem<T>& p, std::vector<Row>& rows, const char* what) {
    if (p.cols != static_cast<int64_t>(TPR) * P * (16 / sizeof(T))) return;
    int per_sm = 0, sms = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bwd_kernel<T, TPR, P, kMin, kPersist, kStream>, TPR, 0));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const unsigned grid = kPersist ? static_cast<unsigned>(std::min<int64_t>(p.rows, sms * per_sm))
                                   : static_cast<unsigned>(p.rows);
    rows.push_back(p.backward(std::string(what) + ", " + std::to_string(TPR) + " x " + std::to_string(P) + " packs, " +
                                  std::to_string(per_sm) + "/SM",
                              [&p, grid] {
                                  bwd_kernel<T, TPR, P, kMin, kPersist, kStream>
                                      <<<grid, TPR>>>(p.gy, p.y, p.gx, p.rows, static_cast<int>(p.cols));
                              }));
}

template <typename T>
void run(double copy, std::vector<Row>& rows) {
    Problem<T> p(4096, 8192, copy, 1234);
    rows.push_back(p.forward("fwd (ships)", [&] { softmax_forward<T>(p.x, p.y, p.rows, p.cols, 0); }));
    constexpr bool kF = sizeof(T) == 4;  // float32's P doubles for the same threads
    constexpr int P256 = kF ? 8 : 4;
    if (std::getenv("STAGED")) {
        fwd<T, 256, P256, 1, true, true>(p, rows, "fwd online keep");
        fwd_staged<T, 256, P256, 2, 1>(p, rows);
        fwd_staged<T, 256, P256, 3, 1>(p, rows);
        fwd_staged<T, 256, P256, 4, 1>(p, rows);
        fwd_staged<T, 256, P256, 3, 1>(p, rows, 2);
        fwd_staged<T, 128, P256 * 2, 2, 1>(p, rows);
        fwd_staged<T, 128, P256 * 2, 3, 1>(p, rows);
        fwd_staged<T, 128, P256 * 2, 3, 4>(p, rows);
        fwd_staged<T, 512, P256 / 2, 2, 1>(p, rows);
        fwd_staged<T, 512, P256 / 2, 3, 1>(p, rows);
        fwd_staged<T, 1024, P256 / 4, 2, 1>(p, rows);
        return;
    }
    fwd<T, 256, P256, 1, false, false>(p, rows, "fwd lean");
    fwd<T, 256, P256, 1, false, true>(p, rows, "fwd lean keep");
    fwd<T, 256, P256, 1, true, false>(p, rows, "fwd online");
    fwd<T, 256, P256, 1, true, true>(p, rows, "fwd online keep");
    fwd<T, 256, P256, 4, true, true>(p, rows, "fwd online keep");
    fwd<T, 512, P256 / 2, 1, true, true>(p, rows, "fwd online keep");
    fwd<T, 512, P256 / 2, 2, true, true>(p, rows, "fwd online keep");
    fwd<T, 1024, P256 / 4, 1, true, true>(p, rows, "fwd online keep");
    fwd<T, 128, P256 * 2, 1, true, false>(p, rows, "fwd online");
    // 128 threads a row bounded to 6 (or 4) blocks an SM, more rows in flight than 256 threads at 4
    // (layernorm's bfloat16 forward gained 2.3% so: 2026-11-29-h200-layernorm-v4, variants-bounded.txt).
    fwd<T, 128, P256 * 2, 6, true, false>(p, rows, "fwd online");
    fwd<T, 128, P256 * 2, 6, true, true>(p, rows, "fwd online keep");
    fwd<T, 128, P256 * 2, 6, false, true>(p, rows, "fwd lean keep");
    fwd<T, 128, P256 * 2, 4, true, true>(p, rows, "fwd online keep");
    fwd<T, 512, P256 / 2, 2, true, false>(p, rows, "fwd online");
    fwd<T, 256, P256, 5, true, false>(p, rows, "fwd online");
    if constexpr (kF) {
        fwd<T, 256, P256, 1, true, true, true>(p, rows, "fwd online keep ex2");
        fwd<T, 512, P256 / 2, 1, true, true, true>(p, rows, "fwd online keep ex2");
    }
    rows.push_back(p.backward("bwd (ships)", [&] { softmax_backward<T>(p.gy, p.y, p.gx, p.rows, p.cols, 0); }));
    bwd<T, 256, P256, 1, false, false>(p, rows, "bwd");
    bwd<T, 256, P256, 1, false, true>(p, rows, "bwd streaming");
    bwd<T, 512, P256 / 2, 1, false, false>(p, rows, "bwd");
    bwd<T, 1024, P256 / 4, 1, false, false>(p, rows, "bwd");
    bwd<T, 128, P256 * 2, 1, false, false>(p, rows, "bwd");
    bwd<T, 128, P256 * 2, 6, false, false>(p, rows, "bwd");
    bwd<T, 512, P256 / 2, 1, true, false>(p, rows, "bwd persistent, next row early");
    bwd<T, 1024, P256 / 4, 1, true, false>(p, rows, "bwd persistent, next row early");
    bwd<T, 256, P256, 1, true, false>(p, rows, "bwd persistent, next row early");
}

void copies(double copy) {
    const int64_t n = (1ll << 30) / 16;
    uint4 *s, *d;
    CHECK(cudaMalloc(&s, n * 16));
    CHECK(cudaMalloc(&d, n * 16));
    CHECK(cudaMemset(s, 0x3c, n * 16));
    const auto one = [&](const char* what, const std::function<void()>& fn) {
        const double us = bench::median_us(fn, 10);
        const double gbps = 2.0 * n * 16 / us / 1e3;
        std::printf("copy 1 GiB, %-40s %8.1f us %6.0f GB/s %6.1f%%\n", what, us, gbps, 100 * gbps / copy);
    };
    const auto blocks = [&](int u) { return static_cast<unsigned>((n + 256ll * u - 1) / (256ll * u)); };
    one("1 pack a thread", [&] { copy_unrolled<1, false><<<blocks(1), 256>>>(s, d, n); });
    one("4 packs a thread", [&] { copy_unrolled<4, false><<<blocks(4), 256>>>(s, d, n); });
    one("8 packs a thread", [&] { copy_unrolled<8, false><<<blocks(8), 256>>>(s, d, n); });
    one("4 packs a thread, evict-first", [&] { copy_unrolled<4, true><<<blocks(4), 256>>>(s, d, n); });
    one("8 packs a thread, evict-first", [&] { copy_unrolled<8, true><<<blocks(8), 256>>>(s, d, n); });
    CHECK(cudaFree(s));
    CHECK(cudaFree(d));
}

// Copies of the sizes the row ops move (a bfloat16 4096 x 8192 tensor is 64 MiB read and 64 MiB
// written): what a load/store kernel reaches at that size, where a launch, the grid's ramp and its
// last wave weigh more than in the 1 GiB copy the % column divides by.
void copy_sizes(double copy) {
    for (const int64_t mib : {16, 32, 64, 128, 256, 1024}) {
        const int64_t n = mib * (1ll << 20) / 16;
        uint4 *s, *d;
        CHECK(cudaMalloc(&s, n * 16));
        CHECK(cudaMalloc(&d, n * 16));
        CHECK(cudaMemset(s, 0x3c, n * 16));
        const unsigned blocks = static_cast<unsigned>((n + 255) / 256);
        const double k_us = bench::median_us([&] { copy_unrolled<1, false><<<blocks, 256>>>(s, d, n); }, 30);
        const double m_us = bench::median_us([&] { CHECK(cudaMemcpyAsync(d, s, n * 16, cudaMemcpyDeviceToDevice)); }, 30);
        const auto pct = [&](double us) { return 100.0 * 2.0 * n * 16 / us / 1e3 / copy; };
        std::printf("copy %5lld MiB: 1-pack kernel %8.1f us %6.1f%%, cudaMemcpy %8.1f us %6.1f%%\n",
                    static_cast<long long>(mib), k_us, pct(k_us), m_us, pct(m_us));
        CHECK(cudaFree(s));
        CHECK(cudaFree(d));
    }
}

}  // namespace

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s, %d SMs\n", prop.name, prop.multiProcessorCount);
    const double copy = bench::copy_gbps();
    copies(copy);
    copy_sizes(copy);
    if (std::getenv("SIZES_ONLY")) return 0;
    std::vector<Row> rows;
    run<__nv_bfloat16>(copy, rows);
    run<float>(copy, rows);
    std::printf("softmax 4096 x 8192, %% of a %.0f GB/s copy (bytes: each tensor read or written once)\n", copy);
    bench::print_rows(rows);
    return 0;
}
