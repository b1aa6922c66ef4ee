// Times stages/matmul/kernel.cu's float32 kernels (v3, v4, v5: the file itself is #included, so what is
// timed is what binding.cpp launches) beside cuBLAS's SGEMM with TF32 off (CUBLAS_DEFAULT_MATH), in
// one process. Each is checked against cuBLAS on fresh random inputs (relative Frobenius error; c is
// poisoned with NaN first, so an unwritten element shows) before it is timed: cudaEvents around each
// launch, 3 warm-ups, the median of 20. Operands as binding.cpp passes them: forward (A, B row-major),
// grad_a's (B read as b^T) and grad_b's (A read as a^T) strides.
//
// build: nvcc -std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90 -I pipeline/include \
//          benchmarks/matmul_variants/bench.cu -lcublas -o /tmp/f32_bench
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../stages/matmul/kernel.cu"

#define CHECK(x)                                                                                     \
    do {                                                                                             \
        cudaError_t e_ = (x);                                                                        \
        if (e_ != cudaSuccess) {                                                                     \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)
#define CHECK_BLAS(x)                                                                               \
    do {                                                                                            \
        cublasStatus_t s_ = (x);                                                                    \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                          \
            std::fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #x, (int)s_); \
            std::exit(1);                                                                           \
        }                                                                                           \
    } while (0)

__global__ void fill_random(float* x, int64_t count, uint64_t seed) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        h ^= h >> 31; h *= 0xBF58476D1CE4E5B9ull; h ^= h >> 29; h *= 0x94D049BB133111EBull; h ^= h >> 32;
        x[i] = static_cast<float>(h % 2000001) / 1000000.0f - 1.0f;
    }
}

using Launch = void (*)(const float*, int64_t, int64_t, const float*, int64_t, int64_t, float*, int64_t, int64_t,
                        int64_t, cudaStream_t);
struct Variant { const char* name; Launch launch; };
const Variant kVariants[] = {{"v3 blocked (k 8)", &matmul_blocked<float>},
                             {"v4 prefetched (k 16)", &matmul_prefetched<float>},
                             {"v5 shipped (float4 loads, warp tiles)", &matmul_product<float>}};

// A [m, k] as binding.cpp reads it: row-major (forward, grad_a's grad_c) or a^T's strides (grad_b).
// B [k, n]: row-major (forward, grad_b's grad_c) or b^T's strides (grad_a).
struct Layout { bool a_t, b_t; const char* name; };
constexpr Layout kLayouts[] = {{false, false, "fwd (A, B)"}, {false, true, "grad_a (B = b^T)"}, {true, false, "grad_b (A = a^T)"}};

double median_ms(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
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
    return median_ms(t);
}

int main() {
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    CHECK_BLAS(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // no TF32
    struct Size { int64_t m, k, n; bool all_layouts; };
    const Size sizes[] = {{4096, 4096, 4096, true}, {1024, 1024, 1024, false}, {4095, 4093, 4097, false}};
    std::vector<std::string> table;
    for (const Size& s : sizes) {
        float *a, *b, *c, *ref;
        CHECK(cudaMalloc(&a, s.m * s.k * 4));
        CHECK(cudaMalloc(&b, s.k * s.n * 4));
        CHECK(cudaMalloc(&c, s.m * s.n * 4));
        CHECK(cudaMalloc(&ref, s.m * s.n * 4));
        fill_random<<<1024, 256>>>(a, s.m * s.k, 0x1234 + s.m);
        fill_random<<<1024, 256>>>(b, s.k * s.n, 0x5678 + s.n);
        CHECK(cudaGetLastError());
        const double flops = 2.0 * s.m * s.n * s.k;
        for (int li = 0; li < (s.all_layouts ? 3 : 1); ++li) {
            const Layout& l = kLayouts[li];
            // Storage: A row-major [m][k] (a_rs = k, a_cs = 1) or as a^T [k][m] (a_rs = 1, a_cs = m);
            // B row-major [k][n] (b_rs = n, b_cs = 1) or as b^T [n][k] (b_rs = 1, b_cs = k).
            const int64_t a_rs = l.a_t ? 1 : s.k, a_cs = l.a_t ? s.m : 1;
            const int64_t b_rs = l.b_t ? 1 : s.n, b_cs = l.b_t ? s.k : 1;
            const float one = 1.0f, zero = 0.0f;
            // Column-major cuBLAS: c^T = B^T A^T. B stored [k][n] is B^T col-major (op N, ld n); stored
            // [n][k] it is B col-major (op T, ld k). Likewise A.
            auto blas = [&](float* out) {
                CHECK_BLAS(cublasSgemm(h, l.b_t ? CUBLAS_OP_T : CUBLAS_OP_N, l.a_t ? CUBLAS_OP_T : CUBLAS_OP_N, (int)s.n,
                                       (int)s.m, (int)s.k, &one, b, (int)(l.b_t ? s.k : s.n), a, (int)(l.a_t ? s.m : s.k),
                                       &zero, out, (int)s.n));
            };
            blas(ref);
            CHECK(cudaDeviceSynchronize());
            const double blas_ms = time_ms([&] { blas(c); });
            char line[256];
            std::snprintf(line, sizeof line, "%5ldx%5ldx%5ld %-17s %-30s %8.3f ms %6.2f TFLOP/s  100.0%%", s.m, s.k, s.n,
                          l.name, "cuBLAS sgemm (no TF32)", blas_ms, flops / blas_ms / 1e9);
            std::printf("%s\n", line);
            table.push_back(line);
            std::vector<float> x(s.m * s.n), r(s.m * s.n);
            CHECK(cudaMemcpy(r.data(), ref, s.m * s.n * 4, cudaMemcpyDeviceToHost));
            for (const Variant& v : kVariants) {
                CHECK(cudaMemset(c, 0xff, s.m * s.n * 4));
                v.launch(a, a_rs, a_cs, b, b_rs, b_cs, c, s.m, s.k, s.n, 0);
                CHECK(cudaGetLastError());
                CHECK(cudaDeviceSynchronize());
                CHECK(cudaMemcpy(x.data(), c, s.m * s.n * 4, cudaMemcpyDeviceToHost));
                double num = 0, den = 0;
                int64_t bad = 0;
                for (int64_t i = 0; i < s.m * s.n; ++i) {
                    if (!std::isfinite(x[i])) { ++bad; continue; }
                    num += double(x[i] - r[i]) * double(x[i] - r[i]);
                    den += double(r[i]) * r[i];
                }
                const double err = std::sqrt(num / std::max(den, 1e-300));
                const double ms = time_ms([&] { v.launch(a, a_rs, a_cs, b, b_rs, b_cs, c, s.m, s.k, s.n, 0); });
                std::snprintf(line, sizeof line, "%5ldx%5ldx%5ld %-17s %-30s %8.3f ms %6.2f TFLOP/s %6.1f%%  relerr %.2e%s",
                              s.m, s.k, s.n, l.name, v.name, ms, flops / ms / 1e9, 100.0 * blas_ms / ms, err,
                              bad ? (" UNWRITTEN " + std::to_string(bad)).c_str() : (err < 1e-4 ? "" : " WRONG"));
                std::printf("%s\n", line);
                table.push_back(line);
            }
        }
        CHECK(cudaFree(a));
        CHECK(cudaFree(b));
        CHECK(cudaFree(c));
        CHECK(cudaFree(ref));
    }
    std::printf("\n==== summary (median of 20, %% of cuBLAS in the same process) ====\n");
    for (const auto& l : table) std::printf("%s\n", l.c_str());
    return 0;
}
