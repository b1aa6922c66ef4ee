// bias_gelu's forward and backward versions side by side on one GPU at brrr bench's size (8192 x 8192), in
// bfloat16 and float32: each checked against a float64 reference on the host (outputs poisoned
// first), grad_bias compared bit for bit over two runs, then timed (median of 30, L2 flushed)
// against a 1 GiB copy timed in the same process.
//   nvcc -std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90 -I pipeline/include \
//        benchmarks/rowwise_variants/bias_gelu_bench.cu -o /tmp/bg_bench && /tmp/bg_bench
#include "../../stages/bias_gelu/kernel.cu"
#include "harness.cuh"

namespace {

using bench::Row;

template <typename T>
struct Problem {
    int64_t rows, cols;
    T *x, *b, *y, *gy, *gx, *gb;
    double* partial;
    std::vector<double> ref_y, ref_gx, ref_gb;
    double copy;

    Problem(int64_t r, int64_t c, double copy_gbps, unsigned seed) : rows(r), cols(c), copy(copy_gbps) {
        std::mt19937 gen(seed);
        std::normal_distribution<float> normal(0.f, 1.f);
        std::vector<T> hx(r * c), hg(r * c), hb(c);
        for (auto& v : hx) v = bench::from_float<T>(2.f * normal(gen));
        for (auto& v : hg) v = bench::from_float<T>(normal(gen));
        for (auto& v : hb) v = bench::from_float<T>(0.5f * normal(gen));
        x = bench::upload(hx);
        gy = bench::upload(hg);
        b = bench::upload(hb);
        CHECK(cudaMalloc(&y, r * c * sizeof(T)));
        CHECK(cudaMalloc(&gx, r * c * sizeof(T)));
        CHECK(cudaMalloc(&gb, c * sizeof(T)));
        CHECK(cudaMalloc(&partial, bias_gelu_backward_parts(r, c) * c * sizeof(double)));
        const double k = std::sqrt(2.0 / M_PI), kc = 0.044715;
        ref_y.resize(r * c);
        ref_gx.resize(r * c);
        ref_gb.assign(c, 0.0);
        for (int64_t i = 0; i < r; ++i) {
            for (int64_t j = 0; j < c; ++j) {
                const double u = bench::to_double(hx[i * c + j]) + bench::to_double(hb[j]);
                const double z = k * (u + kc * u * u * u);
                const double th = std::tanh(z);
                ref_y[i * c + j] = 0.5 * u * (1 + th);
                const double slope = 0.5 * (1 + th) + 0.5 * u * (1 - th * th) * k * (1 + 3 * kc * u * u);
                const double g = bench::to_double(hg[i * c + j]) * slope;
                ref_gx[i * c + j] = g;
                ref_gb[j] += g;
            }
        }
    }

    double fwd_bytes() const { return (2.0 * rows * cols + cols) * sizeof(T); }
    double bwd_bytes() const { return (3.0 * rows * cols + 2.0 * cols) * sizeof(T); }

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

    Row backward(const std::string& what, const std::function<void()>& fn) {
        bench::poison(gx, rows * cols * sizeof(T));
        bench::poison(gb, cols * sizeof(T));
        fn();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const double err = std::max(bench::rel_err(bench::download(gx, rows * cols), ref_gx),
                                    bench::rel_err(bench::download(gb, cols), ref_gb));
        const auto b1 = bench::download(gb, cols);
        fn();
        CHECK(cudaDeviceSynchronize());
        const auto b2 = bench::download(gb, cols);
        const bool same = std::memcmp(b1.data(), b2.data(), cols * sizeof(T)) == 0;
        const double us = bench::median_us(fn);
        const double gbps = bwd_bytes() / us / 1e3;
        return {what, us, gbps, gbps / copy, err, same};
    }
};

// ---- forward variants (not shipped; for an H200, where v6's bfloat16 forward is 87% of copy) ----------
// The shipped kernel holds both paths, and its scalar one (ragged rows, unaligned tensors) sets its
// registers: 128 in bfloat16, 2 blocks of 256 an SM. These run the vector path alone (8192 columns:
// every thread's vectors are full and aligned), with __launch_bounds__ asking kMinBlocks blocks an SM.
template <typename T, int kMinBlocks>
__global__ void __launch_bounds__(kBlockX * kBlockY, kMinBlocks)
    fwd_vector_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y, int64_t rows,
                      int64_t cols, int64_t rows_per_thread) {
    const Tile t = tile_of<T>(rows, cols, rows_per_thread);
    if (t.width[0] == 0) return;
    forward_tile<true>(x, bias, y, cols, t);
}

// The vector path software-pipelined: kRows rows of loads in flight while the previous kRows are
// computed and stored, so a thread never waits on memory with nothing of its own in flight
// (the shipped forward loads 4 rows, then computes them with no load outstanding).
template <typename T, int kRows>
using RawRows = brrr::Pack<T, kAccess<T>>[kRows][kPacks][kVec<T> / kAccess<T>];

template <typename T, int kRows>
__device__ __forceinline__ void load_rows(const T* __restrict__ x, int64_t cols, const Tile& t, int64_t r0,
                                          RawRows<T, kRows>& out) {
    using V = brrr::Pack<T, kAccess<T>>;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
        if (r0 + i < t.row1) {
#pragma unroll
            for (int j = 0; j < kPacks; ++j) {
#pragma unroll
                for (int a = 0; a < kVec<T> / kAccess<T>; ++a) {
                    out[i][j][a] = reinterpret_cast<const V*>(x + (r0 + i) * cols + t.col0 + j * kStride<T>)[a];
                }
            }
        }
    }
}

// Flat: K 16-byte packs a thread, 256 threads a block, blocks laid over the whole tensor with no
// grid stride (the copy kernel of that shape moved 100% of cudaMemcpy's bytes on the H200, where a
// grid-stride float4 copy moved 92%): each pack's bias pack is read beside it (an L1/L2 hit). The
// math is gelu() on x + bias in A<T>, as forward_tile's: the same bits. Rows a whole number of packs.
template <typename T, int K>
__global__ void __launch_bounds__(256) fwd_flat_kernel(const T* __restrict__ x, const T* __restrict__ bias,
                                                        T* __restrict__ y, int64_t cols, int64_t total) {
    constexpr int W = 16 / sizeof(T);
    using V = brrr::Pack<T, W>;
    const int64_t first = static_cast<int64_t>(blockIdx.x) * 256 * K + threadIdx.x;
    const int row_packs = static_cast<int>(cols / W);
    V xv[K], bv[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int64_t i = first + k * 256;
        if (i < total) {
            xv[k] = reinterpret_cast<const V*>(x)[i];
            bv[k] = reinterpret_cast<const V*>(bias)[i % row_packs];
        }
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int64_t i = first + k * 256;
        if (i < total) {
            V o;
#pragma unroll
            for (int j = 0; j < W; ++j) o.v[j] = brrr::from_acc<T>(gelu<T>(brrr::to_acc(xv[k].v[j]) + brrr::to_acc(bv[k].v[j])));
            reinterpret_cast<V*>(y)[i] = o;
        }
    }
}

template <typename T, int kRows, int kMinBlocks>
__global__ void __launch_bounds__(kBlockX * kBlockY, kMinBlocks)
    fwd_pipelined_kernel(const T* __restrict__ x, const T* __restrict__ bias, T* __restrict__ y, int64_t rows,
                         int64_t cols, int64_t rows_per_thread) {
    const Tile t = tile_of<T>(rows, cols, rows_per_thread);
    if (t.width[0] == 0) return;
    A<T> b[kPacks][kVec<T>];
    load_row(bias, t, true, b);
    RawRows<T, kRows> cur, next;
    load_rows<T, kRows>(x, cols, t, t.row0, cur);
    for (int64_t r0 = t.row0; r0 < t.row1; r0 += kRows) {
        if (r0 + kRows < t.row1) load_rows<T, kRows>(x, cols, t, r0 + kRows, next);
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
            if (r0 + i < t.row1) {
                A<T> u[kPacks][kVec<T>];
#pragma unroll
                for (int j = 0; j < kPacks; ++j) {
#pragma unroll
                    for (int a = 0; a < kVec<T> / kAccess<T>; ++a) {
#pragma unroll
                        for (int e = 0; e < kAccess<T>; ++e) {
                            const int k = a * kAccess<T> + e;
                            u[j][k] = gelu<T>(brrr::to_acc(cur[i][j][a].v[e]) + b[j][k]);
                        }
                    }
                }
                store_row(y + (r0 + i) * cols, t, true, u);
            }
        }
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
#pragma unroll
            for (int j = 0; j < kPacks; ++j) {
#pragma unroll
                for (int a = 0; a < kVec<T> / kAccess<T>; ++a) cur[i][j][a] = next[i][j][a];
            }
        }
    }
}

// A forward variant on the shipped tiling with `rpt` rows a thread (the launcher's is 4).
template <typename T, typename K>
std::function<void()> forward_with(Problem<T>& p, K kernel, int64_t rpt) {
    return [&p, kernel, rpt] {
        const int64_t groups = (p.rows + rpt - 1) / rpt;
        const dim3 grid(brrr::blocks_for(p.cols, kBlockX * kPack<T>), brrr::blocks_for(groups, kBlockY));
        kernel<<<grid, dim3(kBlockX, kBlockY)>>>(p.x, p.b, p.y, p.rows, p.cols, rpt);
    };
}

// The backward launcher's grid with kernel `K` in place of the shipped backward kernel.
template <typename T, typename K>
std::function<void()> with_kernel(Problem<T>& p, K kernel) {
    return [&p, kernel] {
        const Tiling tl = tiling(p.rows, p.cols, kPack<T>);
        const int64_t parts = bias_gelu_backward_parts(p.rows, p.cols);
        const bool aligned = vectors_fit<T>(p.cols);
        kernel<<<tl.grid, tl.block>>>(p.gy, p.x, p.b, p.gx, p.partial, p.rows, p.cols, tl.rows_per_thread, aligned);
        bias_grad_kernel<T><<<brrr::blocks_for(p.cols, kFinalizeColumns), dim3(kFinalizeColumns, kFinalizeGroups)>>>(
            p.partial, p.gb, parts, p.cols);
    };
}

template <typename T>
void run(double copy, std::vector<Row>& rows) {
    Problem<T> p(8192, 8192, copy, 99);
    const std::string n = bench::name<T>();
    rows.push_back(p.forward("fwd (ships) " + n, [&] { bias_gelu_forward<T>(p.x, p.b, p.y, p.rows, p.cols, 0); }));
#define FV(M, R) rows.push_back(p.forward("fwd vector only, " #M " blocks an SM, " #R " rows a thread " + n, \
                                          forward_with(p, fwd_vector_kernel<T, M>, R)))
    FV(1, 4);
    FV(3, 4);
    FV(4, 4);
    FV(2, 8);
#define FP(K, M, R) rows.push_back(p.forward("fwd pipelined " #K "+" #K ", " #M " blocks an SM, " #R " rows " + n, \
                                             forward_with(p, fwd_pipelined_kernel<T, K, M>, R)))
    FP(2, 2, 8);
    FP(2, 2, 16);
    FP(2, 3, 16);
    FP(2, 4, 16);
    FP(4, 2, 16);
    FP(1, 4, 16);
#define FF(K) rows.push_back(p.forward("fwd flat, " #K " packs a thread " + n, [&p] {                          \
        const int64_t total = p.rows * p.cols / (16 / sizeof(T));                                               \
        fwd_flat_kernel<T, K><<<static_cast<unsigned>((total + 256 * K - 1) / (256 * K)), 256>>>(p.x, p.b, p.y,  \
                                                                                               p.cols, total); \
    }))
    FF(1);
    FF(2);
    FF(4);
#undef FF
#undef FV
#undef FP
    if (std::getenv("FORWARD_ONLY")) return;
    rows.push_back(p.backward("bwd (ships: v5) " + n, [&] {
        bias_gelu_backward<T>(p.gy, p.x, p.b, p.gx, p.gb, p.partial, p.rows, p.cols, 0);
    }));
    rows.push_back(p.backward("bwd v3 kernel " + n, with_kernel(p, bias_gelu_backward_kernel<T>)));
    // v4 with at least kMinBlocks blocks of 256 an SM (registers capped at 65536 / (256 kMinBlocks)).
#define V4(M) \
    rows.push_back(p.backward("bwd v4 kernel, " #M " blocks an SM " + n, with_kernel(p, bias_gelu_backward_v4_kernel<T, M>)))
    V4(2);
    V4(3);
    V4(4);
    // v5 (cp.async staging), its dynamic shared memory set as the launcher sets it.
    CHECK(cudaFuncSetAttribute(bias_gelu_backward_v5_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(kStageBytes<T>)));
    rows.push_back(p.backward("bwd v5 kernel (cp.async) " + n, [&p] {
        const Tiling tl = tiling(p.rows, p.cols, kPack<T>);
        const int64_t parts = bias_gelu_backward_parts(p.rows, p.cols);
        bias_gelu_backward_v5_kernel<T><<<tl.grid, tl.block, (kStageBytes<T>)>>>(p.gy, p.x, p.b, p.gx, p.partial, p.rows,
                                                                               p.cols, tl.rows_per_thread, true);
        bias_grad_kernel<T><<<brrr::blocks_for(p.cols, kFinalizeColumns), dim3(kFinalizeColumns, kFinalizeGroups)>>>(
            p.partial, p.gb, parts, p.cols);
    }));
    // v5 with more rows a thread: fewer blocks in y, so fewer partial column sums (parts x cols
    // doubles, written and read again: 16 MiB at 8192 x 8192 with 4 rows a thread, 4% to 8% of the
    // backward's traffic).
    const auto v5_rows = [&](int64_t per_thread) {
        const int64_t groups = (p.rows + per_thread - 1) / per_thread;
        const dim3 grid(brrr::blocks_for(p.cols, kBlockX * kPack<T>), brrr::blocks_for(groups, kBlockY));
        rows.push_back(p.backward("bwd v5, " + std::to_string(per_thread) + " rows a thread " + n, [&p, grid, per_thread] {
            bias_gelu_backward_v5_kernel<T><<<grid, dim3(kBlockX, kBlockY), (kStageBytes<T>)>>>(
                p.gy, p.x, p.b, p.gx, p.partial, p.rows, p.cols, per_thread, true);
            bias_grad_kernel<T><<<brrr::blocks_for(p.cols, kFinalizeColumns), dim3(kFinalizeColumns, kFinalizeGroups)>>>(
                p.partial, p.gb, grid.y, p.cols);
        }));
    };
    v5_rows(8);
    v5_rows(16);
    v5_rows(32);
#undef V4
    for (void* q : {(void*)p.x, (void*)p.b, (void*)p.y, (void*)p.gy, (void*)p.gx, (void*)p.gb, (void*)p.partial}) {
        CHECK(cudaFree(q));
    }
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
    std::printf("bias_gelu 8192 x 8192, %% of a %.0f GB/s copy (bytes: each tensor read or written once)\n", copy);
    bench::print_rows(rows);
    return 0;
}
