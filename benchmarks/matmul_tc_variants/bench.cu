// Times stages/matmul_tc/kernel.cu's v2, v3, v4 and v5 tilings beside cuBLAS (bf16 in, f32 accumulation,
// bf16 out) in one process: the shipped kernel code itself is #included, so what is timed is what
// binding.cpp launches. Each variant is checked against cuBLAS on fresh random inputs (relative
// Frobenius error, and every element written: c is poisoned with NaN first) before it is timed.
// Timing: cudaEvents around each launch, 3 warm-ups, the median of 20.
//
// build: nvcc -std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90a -I pipeline/include \
//          benchmarks/matmul_tc_variants/bench.cu -lcublas -o /tmp/tc_bench
// run:   /tmp/tc_bench            (all sizes, all variants)
//        /tmp/tc_bench ncu        (the shipped v4 once at 4096^3, for Nsight Compute)
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../stages/matmul_tc/kernel.cu"

#define CHECK(x)                                                                                     \
    do {                                                                                             \
        cudaError_t e_ = (x);                                                                        \
        if (e_ != cudaSuccess) {                                                                     \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)
#define CHECK_BLAS(x)                                                                           \
    do {                                                                                        \
        cublasStatus_t s_ = (x);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                      \
            std::fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s_); \
            std::exit(1);                                                                       \
        }                                                                                       \
    } while (0)

__global__ void fill_random(__nv_bfloat16* x, int64_t count, uint64_t seed) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        h ^= h >> 31; h *= 0xBF58476D1CE4E5B9ull; h ^= h >> 29; h *= 0x94D049BB133111EBull; h ^= h >> 32;
        x[i] = __float2bfloat16_rn(static_cast<float>(h % 2000001) / 1000000.0f - 1.0f);
    }
}

// Layout: AK = A stored row-major [m][k] (else as A^T [k][m]); BK = B stored as B^T [n][k] (else [k][n]).
struct Layout { bool ak, bk; const char* name; };
constexpr Layout kLayouts[] = {{true, false, "fwd  (A:K, B:MN)"}, {true, true, "grad_a (K, K)"}, {false, false, "grad_b (MN, MN)"}};

using Launch = bool (*)(const __nv_bfloat16*, int64_t, const __nv_bfloat16*, int64_t, __nv_bfloat16*, int64_t, int64_t,
                        int64_t, cudaStream_t);
struct Variant { const char* name; Launch launch[3]; };

template <bool AK, bool BK>
bool v2_launch(const __nv_bfloat16* a, int64_t lda, const __nv_bfloat16* b, int64_t ldb, __nv_bfloat16* c, int64_t m,
               int64_t k, int64_t n, cudaStream_t s) {
    matmul_tc_mma<AK, BK>(a, lda, b, ldb, c, m, k, n, s);
    return true;
}

#define V3(NAME, ...)                                                                                  \
    Variant{NAME,                                                                                      \
            {&matmul_tc_pipelined_with<Tiling<__VA_ARGS__>, true, false>,                              \
             &matmul_tc_pipelined_with<Tiling<__VA_ARGS__>, true, true>,                               \
             &matmul_tc_pipelined_with<Tiling<__VA_ARGS__>, false, false>}}

#define V4(NAME, ...)                                                                                  \
    Variant{NAME,                                                                                      \
            {&matmul_tc_wgmma_with<WgTiling<__VA_ARGS__>, true, false>,                                \
             &matmul_tc_wgmma_with<WgTiling<__VA_ARGS__>, true, true>,                                 \
             &matmul_tc_wgmma_with<WgTiling<__VA_ARGS__>, false, false>}}

const Variant kVariants[] = {
    {"v2 128x128x32 4w 2st", {&v2_launch<true, false>, &v2_launch<true, true>, &v2_launch<false, false>}},
    {"v3 shipped (TcTiling)", {&matmul_tc_pipelined<true, false>, &matmul_tc_pipelined<true, true>,
                               &matmul_tc_pipelined<false, false>}},
    //   BM, BN, BK, WarpsM, WarpsN, Stages, GroupM, MinBlocks
    V3("128x256x64 8w 3st g8", 128, 256, 64, 2, 4, 3, 8, 1),
    V3("256x128x64 8w 3st g8", 256, 128, 64, 4, 2, 3, 8, 1),
    V3("128x256x32 8w 4st g8", 128, 256, 32, 2, 4, 4, 8, 1),
    V3("128x128x32 8w(64x32) 4st 2b", 128, 128, 32, 2, 4, 4, 8, 2),
    V3("128x128x64 8w(64x32) 3st g1 2b", 128, 128, 64, 2, 4, 3, 1, 2),
    V3("128x128x64 4w(64x64) 3st 2b", 128, 128, 64, 2, 2, 3, 8, 2),
    {"v4 shipped (WgmmaTiling)", {&matmul_tc_wgmma<true, false>, &matmul_tc_wgmma<true, true>,
                                  &matmul_tc_wgmma<false, false>}},
    //   BN, Stages, GroupM (BM 128, BK 64, two warpgroups)
    V4("v4 128x256 3st g8", 256, 3, 8),
    V4("v4 128x256 4st g16", 256, 4, 16),
    V4("v4 128x128 4st g8", 128, 4, 8),
    V4("v4 128x128 6st g8", 128, 6, 8),
    {"v5 TMA (TmaMatmulTiling)", {&matmul_tc_tma<true, false>, &matmul_tc_tma<true, true>, &matmul_tc_tma<false, false>}},
    {"v5 TMA 128x128 6st",
     {&matmul_tc_tma_with<TmaTiling<128, 6, 8>, true, false>, &matmul_tc_tma_with<TmaTiling<128, 6, 8>, true, true>,
      &matmul_tc_tma_with<TmaTiling<128, 6, 8>, false, false>}},
};

struct Problem {
    int64_t m, k, n;
    __nv_bfloat16 *a, *b, *c, *ref;
};

// cuBLAS is column-major: c row-major [m][n] is c^T column-major, c^T = B^T A^T.
void cublas_product(cublasHandle_t h, const Layout& l, const Problem& p, __nv_bfloat16* out) {
    const float one = 1.0f, zero = 0.0f;
    // B as stored: [k][n] row-major = B^T col-major (n x k, ld n) -> op N; [n][k] row-major = B col-major (k x n, ld k) -> op T.
    // A as stored: [m][k] row-major = A^T col-major (k x m, ld k) -> op N; [k][m] row-major = A col-major (m x k, ld m) -> op T.
    CHECK_BLAS(cublasGemmEx(h, l.bk ? CUBLAS_OP_T : CUBLAS_OP_N, l.ak ? CUBLAS_OP_N : CUBLAS_OP_T, (int)p.n, (int)p.m,
                            (int)p.k, &one, p.b, CUDA_R_16BF, (int)(l.bk ? p.k : p.n), p.a, CUDA_R_16BF,
                            (int)(l.ak ? p.k : p.m), &zero, out, CUDA_R_16BF, (int)p.n, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
}

double median_ms(const std::vector<float>& v) {
    std::vector<float> s = v;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
}

template <class F>
double time_ms(F run) {
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; ++i) run();
    CHECK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < 20; ++i) {
        CHECK(cudaEventRecord(e0));
        run();
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
    }
    CHECK(cudaGetLastError());
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
    return median_ms(t);
}

// ||x - ref|| / ||ref|| over c, and how many elements of x are not finite (never written: NaN poison).
std::pair<double, int64_t> compare(const Problem& p) {
    const int64_t count = p.m * p.n;
    std::vector<uint16_t> x(count), r(count);
    CHECK(cudaMemcpy(x.data(), p.c, count * 2, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(r.data(), p.ref, count * 2, cudaMemcpyDeviceToHost));
    double num = 0, den = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < count; ++i) {
        uint32_t xb = uint32_t(x[i]) << 16, rb = uint32_t(r[i]) << 16;
        float xf, rf;
        std::memcpy(&xf, &xb, 4);
        std::memcpy(&rf, &rb, 4);
        if (!std::isfinite(xf)) { ++bad; continue; }
        num += double(xf - rf) * double(xf - rf);
        den += double(rf) * rf;
    }
    return {std::sqrt(num / std::max(den, 1e-300)), bad};
}

int main(int argc, char** argv) {
    const bool ncu = argc > 1 && std::string(argv[1]) == "ncu";
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
    struct Size { int64_t m, k, n; bool all_layouts; };
    std::vector<Size> sizes = {{4096, 4096, 4096, true}, {1024, 1024, 1024, false}, {4095, 4093, 4097, false},
                               {8192, 8192, 8192, false}};
    if (ncu) sizes = {{4096, 4096, 4096, false}};
    std::vector<std::string> table;
    for (const Size& s : sizes) {
        Problem p{s.m, s.k, s.n};
        CHECK(cudaMalloc(&p.a, s.m * s.k * 2));
        CHECK(cudaMalloc(&p.b, s.k * s.n * 2));
        CHECK(cudaMalloc(&p.c, s.m * s.n * 2));
        CHECK(cudaMalloc(&p.ref, s.m * s.n * 2));
        fill_random<<<1024, 256>>>(p.a, s.m * s.k, 0x1234 + s.m);
        fill_random<<<1024, 256>>>(p.b, s.k * s.n, 0x5678 + s.n);
        CHECK(cudaGetLastError());
        const double flops = 2.0 * s.m * s.n * s.k;
        if (ncu) {
            matmul_tc_wgmma<true, false>(p.a, s.k, p.b, s.n, p.c, s.m, s.k, s.n, 0);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
            std::printf("ncu launch done\n");
            return 0;
        }
        for (int li = 0; li < (s.all_layouts ? 3 : 1); ++li) {
            const Layout& l = kLayouts[li];
            cublas_product(h, l, p, p.ref);
            CHECK(cudaDeviceSynchronize());
            const double blas = time_ms([&] { cublas_product(h, l, p, p.c); });
            char line[256];
            std::snprintf(line, sizeof line, "%5ldx%5ldx%5ld %-16s %-30s %8.3f ms %6.1f TFLOP/s  100.0%%", s.m, s.k,
                          s.n, l.name, "cuBLAS", blas, flops / blas / 1e9);
            std::printf("%s\n", line);
            table.push_back(line);
            for (const Variant& v : kVariants) {
                if (s.m == 8192 && std::string(v.name).rfind("v2", 0) != 0 && std::string(v.name).find("shipped") == std::string::npos &&
                    std::string(v.name).find("TmaMatmulTiling") == std::string::npos)
                    continue;  // 8192^3: the shipped kernel and v2 only
                CHECK(cudaMemset(p.c, 0xff, s.m * s.n * 2));  // NaN poison: an unwritten element shows
                const int64_t lda = l.ak ? s.k : s.m, ldb = l.bk ? s.k : s.n;
                if (!v.launch[li](p.a, lda, p.b, ldb, p.c, s.m, s.k, s.n, 0)) { std::printf("refused\n"); continue; }
                CHECK(cudaGetLastError());
                CHECK(cudaDeviceSynchronize());
                auto [err, bad] = compare(p);
                const double ms = time_ms([&] { v.launch[li](p.a, lda, p.b, ldb, p.c, s.m, s.k, s.n, 0); });
                std::snprintf(line, sizeof line, "%5ldx%5ldx%5ld %-16s %-30s %8.3f ms %6.1f TFLOP/s %6.1f%%  relerr %.2e%s",
                              s.m, s.k, s.n, l.name, v.name, ms, flops / ms / 1e9, 100.0 * blas / ms, err,
                              bad ? (" UNWRITTEN " + std::to_string(bad)).c_str() : (err < 1e-2 ? "" : " WRONG"));
                std::printf("%s\n", line);
                table.push_back(line);
            }
        }
        CHECK(cudaFree(p.a));
        CHECK(cudaFree(p.b));
        CHECK(cudaFree(p.c));
        CHECK(cudaFree(p.ref));
    }
    std::printf("\n==== summary (median of 20, %% of cuBLAS in the same process) ====\n");
    for (const auto& l : table) std::printf("%s\n", l.c_str());
    return 0;
}
