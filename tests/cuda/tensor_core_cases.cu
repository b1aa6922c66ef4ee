// Kernels for tests/cuda/test_cpu_tensor_cores.py: tensor cores on the CPU execution, through inline
// PTX (mma.sync, ldmatrix, cvt.rna.tf32.f32) and nvcuda::wmma. `prog CASE` runs one case and prints
// the rounded inputs and the result as rows of numbers ("A ...", "B ...", "C ...", "D ..."), or the
// launch's fault. The fragments here are filled with the PTX ISA's layouts written out again, so a
// layout the runtime gets wrong shows as a wrong product.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

using namespace nvcuda;

// Deterministic inputs with small integers' spread of exponents: k / 7 - 2 for a 31-bit hash.
static float input(int64_t i, int salt) {
    uint32_t h = static_cast<uint32_t>(i * 2654435761u + salt * 97u + 12345u);
    h ^= h >> 13;
    h *= 0x5bd1e995u;
    h ^= h >> 15;
    return static_cast<float>(h % 4096) / 977.0f - 2.0f;
}

#include "case_buffers.h"

template <typename T>
static float as_float(T v) { return static_cast<float>(v); }

template <typename V>
static void print_matrix(const char* name, const V& m) {
    std::printf("%s", name);
    for (const auto& v : m) std::printf(" %.9g", static_cast<double>(as_float(v)));
    std::printf("\n");
}

__device__ uint32_t pack(uint16_t lo, uint16_t hi) { return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16); }
template <typename T>
__device__ uint16_t bits16(T v) {
    uint16_t u;
    std::memcpy(&u, &v, 2);
    return u;
}

// ---- mma.sync m16n8k16 / m16n8k8 (f16, bf16) with f32 accumulators: A row-major 16 x K, B row-major K x 8 ----
template <typename T, int K>
__global__ void mma_16bit(const T* a, const T* b, const float* c, float* d) {
    const int64_t lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    uint32_t ar[K / 4], br[K / 8];
    float cr[4], dr[4];
    for (int64_t r = 0; r < K / 4; ++r) {  // a_{2r}, a_{2r+1}: row g (+8 for odd r), cols 2t, 2t+1 (+8 from r = 2)
        const int64_t row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2);
        ar[r] = pack(bits16(a[row * K + col]), bits16(a[row * K + col + 1]));
    }
    for (int64_t r = 0; r < K / 8; ++r) {  // b_{2r}, b_{2r+1}: rows 2t, 2t+1 (+8 for r = 1), col g
        const int64_t row = 2 * t + 8 * r;
        br[r] = pack(bits16(b[row * 8 + g]), bits16(b[(row + 1) * 8 + g]));
    }
    for (int64_t i = 0; i < 4; ++i) cr[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    if constexpr (K == 16 && std::is_same_v<T, __nv_bfloat16>) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                     "{%8, %9}, {%10, %11, %12, %13};\n"
                     : "=f"(dr[0]), "=f"(dr[1]), "=f"(dr[2]), "=f"(dr[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]),
                       "f"(cr[0]), "f"(cr[1]), "f"(cr[2]), "f"(cr[3]));
    } else if constexpr (K == 16) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                     : "=f"(dr[0]), "=f"(dr[1]), "=f"(dr[2]), "=f"(dr[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]),
                       "f"(cr[0]), "f"(cr[1]), "f"(cr[2]), "f"(cr[3]));
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        for (int i = 0; i < 4; ++i) dr[i] = cr[i];
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
                     : "+f"(dr[0]), "+f"(dr[1]), "+f"(dr[2]), "+f"(dr[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(br[0]));
    } else {
        for (int i = 0; i < 4; ++i) dr[i] = cr[i];
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
                     : "+f"(dr[0]), "+f"(dr[1]), "+f"(dr[2]), "+f"(dr[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(br[0]));
    }
    for (int64_t i = 0; i < 4; ++i) d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = dr[i];
}

// ---- mma.sync m16n8k16 f16 with f16 accumulators ----------------------------------------------------
__global__ void mma_f16_acc(const __half* a, const __half* b, const __half* c, __half* d) {
    const int64_t lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    uint32_t ar[4], br[2], cr[2], dr[2];
    for (int64_t r = 0; r < 4; ++r) {
        const int64_t row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2);
        ar[r] = pack(bits16(a[row * 16 + col]), bits16(a[row * 16 + col + 1]));
    }
    for (int64_t r = 0; r < 2; ++r) {
        const int64_t row = 2 * t + 8 * r;
        br[r] = pack(bits16(b[row * 8 + g]), bits16(b[(row + 1) * 8 + g]));
    }
    for (int64_t r = 0; r < 2; ++r) cr[r] = pack(bits16(c[(g + 8 * r) * 8 + 2 * t]), bits16(c[(g + 8 * r) * 8 + 2 * t + 1]));
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%8, %9};"
                 : "=r"(dr[0]), "=r"(dr[1])
                 : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]), "r"(cr[0]), "r"(cr[1]));
    for (int64_t r = 0; r < 2; ++r) {
        uint16_t lo = dr[r] & 0xffffu, hi = dr[r] >> 16;
        std::memcpy(&d[(g + 8 * r) * 8 + 2 * t], &lo, 2);
        std::memcpy(&d[(g + 8 * r) * 8 + 2 * t + 1], &hi, 2);
    }
}

// ---- mma.sync m16n8k8 and m16n8k4 tf32: the inputs rounded with cvt.rna.tf32.f32 --------------------
template <int K>
__global__ void mma_tf32(const float* a, const float* b, const float* c, float* d, float* a_used, float* b_used) {
    const int64_t lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    uint32_t ar[K / 2], br[K / 4];
    float cr[4], dr[4];
    for (int64_t i = 0; i < K / 2; ++i) {  // k8: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); k4: a0, a1
        const int64_t row = g + 8 * (i % 2), col = t + 4 * (i / 2);
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(ar[i]) : "f"(a[row * K + col]));
        std::memcpy(&a_used[row * K + col], &ar[i], 4);
    }
    for (int64_t i = 0; i < K / 4; ++i) {  // b0 (t, g), b1 (t+4, g)
        const int64_t row = t + 4 * i;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(br[i]) : "f"(b[row * 8 + g]));
        std::memcpy(&b_used[row * 8 + g], &br[i], 4);
    }
    for (int64_t i = 0; i < 4; ++i) cr[i] = c[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2];
    if constexpr (K == 8) {
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
                     : "=f"(dr[0]), "=f"(dr[1]), "=f"(dr[2]), "=f"(dr[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]),
                       "f"(cr[0]), "f"(cr[1]), "f"(cr[2]), "f"(cr[3]));
    } else {
        asm volatile("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                     : "=f"(dr[0]), "=f"(dr[1]), "=f"(dr[2]), "=f"(dr[3])
                     : "r"(ar[0]), "r"(ar[1]), "r"(br[0]), "f"(cr[0]), "f"(cr[1]), "f"(cr[2]), "f"(cr[3]));
    }
    for (int64_t i = 0; i < 4; ++i) d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = dr[i];
}

// ---- ldmatrix: what each lane receives from 4 8x8 matrices of 16-bit values v = 256 j + 8 r + c ---------
template <int Count, bool Trans>
__global__ void ldmatrix_lanes(unsigned* out) {
    __shared__ alignas(16) uint16_t m[4][8][8];
    const int64_t lane = threadIdx.x;
    for (int64_t j = 0; j < 4; ++j) m[j][lane / 8][lane % 8] = static_cast<uint16_t>(256 * j + lane);
    for (int64_t j = 0; j < 4; ++j) m[j][4 + lane / 8][lane % 8] = static_cast<uint16_t>(256 * j + 32 + lane);
    __syncthreads();
    const uint32_t row = static_cast<uint32_t>(__cvta_generic_to_shared(&m[lane / 8 % Count][lane % 8][0]));
    uint32_t r[4] = {0, 0, 0, 0};
    if constexpr (Count == 1 && !Trans) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(row));
    } else if constexpr (Count == 2 && Trans) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(row));
    } else if constexpr (Count == 4 && !Trans) {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(row));
    } else {
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(row));
    }
    for (int64_t j = 0; j < 4; ++j) out[lane * 4 + j] = r[j];
}

// ---- stmatrix: each lane holds what ldmatrix gives of v = 256 j + 8 r + c; the matrices stored back ----
// Written as LeetCUDA writes them: macros that end with the asm (the use writes the ';'), the
// qualifiers in its order as well as the PTX ISA's.
#define STMATRIX_X1(addr, R) asm volatile("stmatrix.sync.aligned.x1.m8n8.shared.b16 [%0], {%1};\n" :: "r"(addr), "r"(R))
#define STMATRIX_X2_T(addr, R0, R1) \
    asm volatile("stmatrix.sync.aligned.x2.trans.m8n8.shared.b16 [%0], {%1, %2};\n" :: "r"(addr), "r"(R0), "r"(R1))
#define STMATRIX_X4(addr, R0, R1, R2, R3) asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" \
                                                       :: "r"(addr), "r"(R0), "r"(R1), "r"(R2), "r"(R3))
#define STMATRIX_X4_T(addr, R0, R1, R2, R3) asm volatile("stmatrix.sync.aligned.x4.trans.m8n8.shared.b16 [%0], {%1, %2, %3, %4};\n" :: "r"(addr), "r"(R0), "r"(R1), "r"(R2), "r"(R3))

template <int Count, bool Trans>
__global__ void stmatrix_lanes(unsigned* out) {
    __shared__ alignas(16) uint16_t m[4][8][8];
    uint16_t* flat = &m[0][0][0];
    const int64_t lane = threadIdx.x;
    for (int64_t i = lane; i < 256; i += 32) flat[i] = 0;
    __syncwarp();
    const uint32_t g = lane / 4, t = lane % 4;
    uint32_t r[4];
    for (uint32_t j = 0; j < 4; ++j) {
        auto v = [&](uint32_t row, uint32_t col) { return 256 * j + 8 * row + col; };
        r[j] = Trans ? (v(2 * t, g) | v(2 * t + 1, g) << 16) : (v(g, 2 * t) | v(g, 2 * t + 1) << 16);
    }
    const uint32_t row = static_cast<uint32_t>(__cvta_generic_to_shared(&m[lane / 8 % Count][lane % 8][0]));
    if constexpr (Count == 1 && !Trans) {
        STMATRIX_X1(row, r[0]);
    } else if constexpr (Count == 2 && Trans) {
        STMATRIX_X2_T(row, r[0], r[1]);
    } else if constexpr (Count == 4 && !Trans) {
        STMATRIX_X4(row, r[0], r[1], r[2], r[3]);
    } else {
        STMATRIX_X4_T(row, r[0], r[1], r[2], r[3]);
    }
    __syncwarp();
    for (int64_t i = lane; i < 256; i += 32) out[i] = flat[i];
}

// ---- a 16 x 8 tile of A B with bf16 A (16 x 16, row-major) and B (16 x 8, row-major) staged in shared
// memory and loaded with ldmatrix (.x4 for A, .x2.trans for B), as a tensor-core GEMM does -----------
__global__ void ldmatrix_gemm(const __nv_bfloat16* a, const __nv_bfloat16* b, float* d) {
    __shared__ alignas(16) __nv_bfloat16 as[16][16];
    __shared__ alignas(16) __nv_bfloat16 bs[16][8];
    const int64_t lane = threadIdx.x;
    for (int64_t i = lane; i < 256; i += 32) as[i / 16][i % 16] = a[i];
    for (int64_t i = lane; i < 128; i += 32) bs[i / 8][i % 8] = b[i];
    __syncwarp();
    uint32_t ar[4], br[2];
    const uint32_t a_row = static_cast<uint32_t>(__cvta_generic_to_shared(&as[lane % 16][8 * (lane / 16)]));
    const uint32_t b_row = static_cast<uint32_t>(__cvta_generic_to_shared(&bs[lane % 16][0]));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(ar[0]), "=r"(ar[1]), "=r"(ar[2]), "=r"(ar[3]) : "r"(a_row));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(br[0]), "=r"(br[1]) : "r"(b_row));
    float acc[4] = {0, 0, 0, 0};
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(ar[0]), "r"(ar[1]), "r"(ar[2]), "r"(ar[3]), "r"(br[0]), "r"(br[1]));
    const int64_t g = lane / 4, t = lane % 4;
    for (int64_t i = 0; i < 4; ++i) d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = acc[i];
}

// Planted: the tile written by the warp's lanes, then ldmatrix with no __syncwarp between.
__global__ void ldmatrix_no_syncwarp(const __nv_bfloat16* a, unsigned* out) {
    __shared__ alignas(16) __nv_bfloat16 tile[16][16];
    const int64_t lane = threadIdx.x;
    for (int64_t i = lane; i < 256; i += 32) tile[i / 16][i % 16] = a[i];  // writes another lane's row
    uint32_t r[4];
    const uint32_t row = static_cast<uint32_t>(__cvta_generic_to_shared(&tile[lane % 16][8 * (lane / 16)]));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"  // no __syncwarp above
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(row));
    for (int64_t j = 0; j < 4; ++j) out[lane * 4 + j] = r[j];
}

// Two floats packed into one register of two 16-bit values, the first in the upper half.
__global__ void pack_pairs(const float* x, unsigned* out) {
    const int64_t i = threadIdx.x;
    uint32_t bf, h;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(bf) : "f"(x[2 * i]), "f"(x[2 * i + 1]));
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(x[2 * i]), "f"(x[2 * i + 1]));
    out[2 * i] = bf;
    out[2 * i + 1] = h;
}

// ---- wmma: D = A B + C for one tile; A row-major, B as LB says (col_major: stored as B^T row-major) ----
template <int M, int N, int K, typename T, typename LB>
__global__ void wmma_tile(const T* a, const T* b, const float* c, float* d) {
    wmma::fragment<wmma::matrix_a, M, N, K, T, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, T, LB> fb;
    wmma::fragment<wmma::accumulator, M, N, K, float> acc;
    wmma::load_matrix_sync(fa, a, K);
    wmma::load_matrix_sync(fb, b, std::is_same_v<LB, wmma::row_major> ? N : K);
    wmma::load_matrix_sync(acc, c, N, wmma::mem_row_major);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(d, acc, N, wmma::mem_row_major);
}

// tf32: the inputs rounded in the fragments with __float_to_tf32, written back so the test knows them.
__global__ void wmma_tf32(const float* a, const float* b, const float* c, float* d, float* a_used, float* b_used) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    for (int64_t i = threadIdx.x; i < 128; i += 32) a_used[i] = wmma::__float_to_tf32(a[i]);
    for (int64_t i = threadIdx.x; i < 128; i += 32) b_used[i] = wmma::__float_to_tf32(b[i]);
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 16);
    for (int i = 0; i < fa.num_elements; ++i) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; ++i) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::load_matrix_sync(acc, c, 16, wmma::mem_col_major);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_col_major);
}

// A 32 x 32 product with K = 64 over 4 warps, each a 16 x 16 tile, accumulating over 4 k steps.
__global__ void wmma_gemm(const __nv_bfloat16* a, const __nv_bfloat16* b, float* d) {
    const int64_t warp = threadIdx.x / 32, tm = warp / 2, tn = warp % 2;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int64_t k = 0; k < 64; k += 16) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
        wmma::load_matrix_sync(fa, a + tm * 16 * 64 + k, 64);
        wmma::load_matrix_sync(fb, b + k * 32 + tn * 16, 32);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(d + tm * 16 * 32 + tn * 16, acc, 32, wmma::mem_row_major);
}

// Which element of A (or B) each lane's x[i] holds: the matrix, row-major, holds each element's own
// index (row * columns + column, exact in __half); out[lane * num_elements + i] = x[i].
template <typename Use, int M, int N, int K>
__global__ void wmma_operand_mapping(const __half* m, float* out) {
    constexpr bool a = std::is_same_v<Use, wmma::matrix_a>;
    wmma::fragment<Use, M, N, K, __half, wmma::row_major> f;
    wmma::load_matrix_sync(f, m, a ? K : N);
    for (int i = 0; i < f.num_elements; ++i) out[threadIdx.x * f.num_elements + i] = __half2float(f.x[i]);
}

// Which (row, col) each lane's acc.x[i] is: x[i] = 100 lane + i, stored row-major.
template <int M, int N, int K>
__global__ void wmma_mapping(float* d) {
    wmma::fragment<wmma::accumulator, M, N, K, float> acc;
    for (int i = 0; i < acc.num_elements; ++i) acc.x[i] = static_cast<float>(100 * (threadIdx.x % 32) + i);
    wmma::store_matrix_sync(d, acc, N, wmma::mem_row_major);
}

// Planted: half the warp reaches mma_sync on one line, the other half on another.
__global__ void wmma_divergent(const __half* a, const __half* b, float* d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    if (threadIdx.x < 16) {
        wmma::mma_sync(acc, fa, fb, acc);
    } else {
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(d, acc, 16, wmma::mem_row_major);
}

// Planted: lanes 24 and up return before the warp's mma.sync.
__global__ void mma_after_return(float* d) {
    if (threadIdx.x >= 24) return;
    uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
    float acc[4] = {0, 0, 0, 0};
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    d[threadIdx.x] = acc[0];
}

// Planted: a load from a pointer that is not 256-bit aligned.
__global__ void wmma_misaligned(const __half* a) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, a + 8, 16);
}

// ---- the host side --------------------------------------------------------------------------------

// A launch's results are read on the host: on a GPU, wait for it (the CPU execution's launches return done).
static void finish() {
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
}

template <typename T>
static Vec<T> inputs(size_t n, int salt) {
    Vec<T> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = T(input(static_cast<int64_t>(i), salt));
    return v;
}

template <typename T, int K>
static void run_mma_16bit() {
    auto a = inputs<T>(16 * K, 1), b = inputs<T>(K * 8, 2);
    auto c = inputs<float>(16 * 8, 3);
    Vec<float> d(16 * 8);
    mma_16bit<T, K><<<1, 32>>>(a.data(), b.data(), c.data(), d.data());
    finish();
    print_matrix("A", a), print_matrix("B", b), print_matrix("C", c), print_matrix("D", d);
}

template <int M, int N, int K, typename T, typename LB>
static void run_wmma_tile() {
    constexpr bool row = std::is_same_v<LB, wmma::row_major>;
    auto a = inputs<T>(M * K, 4), stored = inputs<T>(K * N, 5);
    auto c = inputs<float>(M * N, 6);
    Vec<float> d(M * N);
    wmma_tile<M, N, K, T, LB><<<1, 32>>>(a.data(), stored.data(), c.data(), d.data());
    finish();
    Vec<T> b(K * N);  // B row-major, whichever way it was stored
    for (int k = 0; k < K; ++k)
        for (int n = 0; n < N; ++n) b[k * N + n] = row ? stored[k * N + n] : stored[n * K + k];
    print_matrix("A", a), print_matrix("B", b), print_matrix("C", c), print_matrix("D", d);
}

// A wrong-layout bug: B stored row-major, loaded as col_major (or the other way round).
template <typename T>
static void run_wrong_layout() {
    auto a = inputs<T>(256, 4), b = inputs<T>(256, 5);
    auto c = inputs<float>(256, 6);
    Vec<float> d(256);
    wmma_tile<16, 16, 16, T, wmma::col_major><<<1, 32>>>(a.data(), b.data(), c.data(), d.data());
    finish();
    print_matrix("A", a), print_matrix("B", b), print_matrix("C", c), print_matrix("D", d);
}

template <int M, int N, int K>
static void run_mapping() {
    Vec<float> d(M * N);
    wmma_mapping<M, N, K><<<1, 32>>>(d.data());
    finish();
    print_matrix("D", d);
}

template <typename Use, int M, int N, int K>
static void run_operand_mapping() {
    constexpr bool a = std::is_same_v<Use, wmma::matrix_a>;
    constexpr int rows = a ? M : K, cols = a ? K : N;
    Vec<__half> m(rows * cols);
    for (int i = 0; i < rows * cols; ++i) m[i] = __float2half(static_cast<float>(i));
    wmma::fragment<Use, M, N, K, __half, wmma::row_major> f;
    Vec<float> out(32 * f.num_elements);
    wmma_operand_mapping<Use, M, N, K><<<1, 32>>>(m.data(), out.data());
    finish();
    print_matrix("D", out);
}

// One warp of `kernel` writing `n` words: printed as one row "D ...".
static void run_lanes(void (*kernel)(unsigned*), size_t n) {
    Vec<unsigned> out(n);
    kernel<<<1, 32>>>(out.data());
    finish();
    std::printf("D");
    for (unsigned v : out) std::printf(" %u", v);
    std::printf("\n");
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    try {
        if (c == "mma_bf16_k16") run_mma_16bit<__nv_bfloat16, 16>();
        else if (c == "mma_f16_k16") run_mma_16bit<__half, 16>();
        else if (c == "mma_bf16_k8") run_mma_16bit<__nv_bfloat16, 8>();
        else if (c == "mma_f16_k8") run_mma_16bit<__half, 8>();
        else if (c == "mma_f16_acc") {
            auto a = inputs<__half>(256, 1), b = inputs<__half>(128, 2), cc = inputs<__half>(128, 3);
            Vec<__half> d(128);
            mma_f16_acc<<<1, 32>>>(a.data(), b.data(), cc.data(), d.data());
            finish();
            print_matrix("A", a), print_matrix("B", b), print_matrix("C", cc), print_matrix("D", d);
        } else if (c == "mma_tf32_k8" || c == "mma_tf32_k4") {
            const int k = c == "mma_tf32_k8" ? 8 : 4;
            auto a = inputs<float>(16 * k, 1), b = inputs<float>(k * 8, 2), cc = inputs<float>(128, 3);
            Vec<float> d(128), au(16 * k), bu(k * 8);
            if (k == 8) mma_tf32<8><<<1, 32>>>(a.data(), b.data(), cc.data(), d.data(), au.data(), bu.data());
            else mma_tf32<4><<<1, 32>>>(a.data(), b.data(), cc.data(), d.data(), au.data(), bu.data());
            finish();
            print_matrix("A", au), print_matrix("B", bu), print_matrix("C", cc), print_matrix("D", d);
            print_matrix("X", a);  // the inputs before rounding to tf32
        } else if (c == "ldmatrix_x1") run_lanes(ldmatrix_lanes<1, false>, 128);
        else if (c == "ldmatrix_x2_trans") run_lanes(ldmatrix_lanes<2, true>, 128);
        else if (c == "ldmatrix_x4") run_lanes(ldmatrix_lanes<4, false>, 128);
        else if (c == "ldmatrix_x4_trans") run_lanes(ldmatrix_lanes<4, true>, 128);
        else if (c == "stmatrix_x1") run_lanes(stmatrix_lanes<1, false>, 256);
        else if (c == "stmatrix_x2_trans") run_lanes(stmatrix_lanes<2, true>, 256);
        else if (c == "stmatrix_x4") run_lanes(stmatrix_lanes<4, false>, 256);
        else if (c == "stmatrix_x4_trans") run_lanes(stmatrix_lanes<4, true>, 256);
        else if (c == "ldmatrix_gemm") {
            auto a = inputs<__nv_bfloat16>(256, 7), b = inputs<__nv_bfloat16>(128, 8);
            Vec<float> d(128), zero(128, 0.0f);
            ldmatrix_gemm<<<1, 32>>>(a.data(), b.data(), d.data());
            finish();
            print_matrix("A", a), print_matrix("B", b), print_matrix("C", zero), print_matrix("D", d);
        } else if (c == "wmma_half_16x16x16") run_wmma_tile<16, 16, 16, __half, wmma::col_major>();
        else if (c == "wmma_bf16_16x16x16") run_wmma_tile<16, 16, 16, __nv_bfloat16, wmma::row_major>();
        else if (c == "wmma_half_32x8x16") run_wmma_tile<32, 8, 16, __half, wmma::row_major>();
        else if (c == "wmma_bf16_32x8x16") run_wmma_tile<32, 8, 16, __nv_bfloat16, wmma::col_major>();
        else if (c == "wmma_half_8x32x16") run_wmma_tile<8, 32, 16, __half, wmma::col_major>();
        else if (c == "wmma_bf16_8x32x16") run_wmma_tile<8, 32, 16, __nv_bfloat16, wmma::row_major>();
        else if (c == "wmma_tf32_16x16x8") {
            Vec<float> a(128), b(128), cc(256), d(256), au(128), bu(128);
            for (int i = 0; i < 128; ++i) a[i] = input(i, 1), b[i] = input(i, 2);
            for (int i = 0; i < 256; ++i) cc[i] = input(i, 3);
            wmma_tf32<<<1, 32>>>(a.data(), b.data(), cc.data(), d.data(), au.data(), bu.data());
            finish();
            // C and D are column-major in memory: print them row-major.
            Vec<float> cr(256), dr(256);
            for (int r = 0; r < 16; ++r)
                for (int k = 0; k < 16; ++k) cr[r * 16 + k] = cc[k * 16 + r], dr[r * 16 + k] = d[k * 16 + r];
            print_matrix("A", au), print_matrix("B", bu);
            print_matrix("C", cr), print_matrix("D", dr);
        } else if (c == "wmma_gemm") {
            auto a = inputs<__nv_bfloat16>(32 * 64, 9), b = inputs<__nv_bfloat16>(64 * 32, 10);
            Vec<float> d(32 * 32), zero(32 * 32, 0.0f);
            wmma_gemm<<<1, 128>>>(a.data(), b.data(), d.data());
            finish();
            print_matrix("A", a), print_matrix("B", b), print_matrix("C", zero), print_matrix("D", d);
        } else if (c == "wmma_wrong_layout") run_wrong_layout<__half>();
        else if (c == "wmma_mapping_16x16x16") run_mapping<16, 16, 16>();
        else if (c == "wmma_mapping_32x8x16") run_mapping<32, 8, 16>();
        else if (c == "wmma_mapping_8x32x16") run_mapping<8, 32, 16>();
        else if (c == "wmma_a_mapping_16x16x16") run_operand_mapping<wmma::matrix_a, 16, 16, 16>();
        else if (c == "wmma_b_mapping_16x16x16") run_operand_mapping<wmma::matrix_b, 16, 16, 16>();
        else if (c == "wmma_a_mapping_32x8x16") run_operand_mapping<wmma::matrix_a, 32, 8, 16>();
        else if (c == "wmma_b_mapping_32x8x16") run_operand_mapping<wmma::matrix_b, 32, 8, 16>();
        else if (c == "wmma_a_mapping_8x32x16") run_operand_mapping<wmma::matrix_a, 8, 32, 16>();
        else if (c == "wmma_b_mapping_8x32x16") run_operand_mapping<wmma::matrix_b, 8, 32, 16>();
        else if (c == "wmma_divergent") {
            auto a = inputs<__half>(256, 1), b = inputs<__half>(256, 2);
            Vec<float> d(256);
            wmma_divergent<<<1, 32>>>(a.data(), b.data(), d.data());
            finish();
        } else if (c == "mma_after_return") {
            Vec<float> d(32);
            mma_after_return<<<1, 32>>>(d.data());
            finish();
        } else if (c == "ldmatrix_no_syncwarp") {
            auto a = inputs<__nv_bfloat16>(256, 7);
            Vec<unsigned> out(128);
            ldmatrix_no_syncwarp<<<1, 32>>>(a.data(), out.data());
            finish();
            std::printf("D");
            for (unsigned v : out) std::printf(" %u", v);
            std::printf("\n");
        } else if (c == "pack_pairs") {
            auto x = inputs<float>(64, 11);
            Vec<unsigned> out(64);
            pack_pairs<<<1, 32>>>(x.data(), out.data());
            finish();
            print_matrix("X", x);
            std::printf("D");
            for (unsigned v : out) std::printf(" %u", v);
            std::printf("\n");
        } else if (c == "wmma_misaligned") {
            auto a = inputs<__half>(512, 1);
            wmma_misaligned<<<1, 32>>>(a.data());
            finish();
        } else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
