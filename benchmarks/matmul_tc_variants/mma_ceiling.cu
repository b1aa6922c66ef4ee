// How fast can mma.sync go on this GPU, with nothing else to wait for? Each warp issues mma.sync
// m16n8k16 (bfloat16 in, float32 sums) on register fragments, `Acc` independent accumulators in
// flight, optionally with `Ldsm` ldmatrix.x4 loads from shared memory every 16 mma's (the ratio of a
// warp tile: v3's 64x32 tile loads 6 for its 16, a 64x64 tile 8 for its 32, i.e. 4 for 16).
// No global memory in the loop: the rate is the tensor pipe's and the issue's, the ceiling any GEMM
// built on mma.sync lives under. Blocks of `Warps` warps, `blocks_per_sm` of them an SM.
//   nvcc -std=c++17 -O3 -arch=sm_90 mma_ceiling.cu -o /tmp/mma_ceiling && /tmp/mma_ceiling
#include <cuda_runtime.h>

#include "../rowwise_variants/harness.cuh"  // CHECK

#include <cstdint>
#include <cstdio>
#include <cstdlib>


__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], const void* p) {
    const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(p));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

// 16 mma's a round on Acc accumulators (16 / Acc mma's each), Ldsm ldmatrix.x4 loads feeding them.
template <int Acc, int Ldsm>
__global__ void ceiling_kernel(int rounds, float* out) {
    __shared__ __align__(16) uint16_t tile[64 * 72];  // rows of 72 (padded), as the GEMM stages them
    for (int i = threadIdx.x; i < 64 * 72; i += blockDim.x) tile[i] = static_cast<uint16_t>(i * 37);
    __syncthreads();
    uint32_t a[4], b[4];
    for (int i = 0; i < 4; ++i) {
        a[i] = threadIdx.x * 0x00010001u + i;
        b[i] = threadIdx.x * 0x00030001u + i;
    }
    float acc[Acc][4] = {};
    const int lane = threadIdx.x % 32;
    const uint16_t* row = tile + (lane % 16) * 72 + (lane / 16) * 8;
    for (int r = 0; r < rounds; ++r) {
#pragma unroll
        for (int l = 0; l < Ldsm; ++l) {
            uint32_t f[4];
            ldsm4(f, row + 16 * (l % 4) + 16 * 72 * (l / 4 % 4));
            // fold the loaded fragment into the operands, so the loads are live and the mma's wait on them
            a[l % 4] ^= f[0];
            b[l % 4] ^= f[1];
        }
#pragma unroll
        for (int m = 0; m < 16; ++m) mma(acc[m % Acc], a, b[m % 2 * 2], b[m % 2 * 2 + 1]);
    }
    float s = 0;
#pragma unroll
    for (int i = 0; i < Acc; ++i) s += acc[i][0] + acc[i][1] + acc[i][2] + acc[i][3];
    if (s == 1.2345f) out[threadIdx.x] = s;  // keeps the work, never true in practice
}

template <int Acc, int Ldsm>
void run(const char* what, int warps, int blocks_per_sm, int sms, float* out) {
    const int rounds = 4096;
    const int blocks = sms * blocks_per_sm;
    auto kernel = ceiling_kernel<Acc, Ldsm>;
    kernel<<<blocks, 32 * warps>>>(8, out);  // warm-up
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int rep = 0; rep < 5; ++rep) {
        CHECK(cudaEventRecord(e0));
        kernel<<<blocks, 32 * warps>>>(rounds, out);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        best = ms < best ? ms : best;
    }
    const double flops = 2.0 * 16 * 8 * 16 * 16.0 * rounds * warps * blocks;
    std::printf("%-34s warps/block %2d, blocks/SM %d (%2d warps/SM): %8.3f ms, %6.1f TFLOP/s\n", what, warps,
                blocks_per_sm, warps * blocks_per_sm, best, flops / best / 1e9);
}

int main() {
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    const int sms = prop.multiProcessorCount;
    std::printf("device: %s, %d SMs\n", prop.name, sms);
    float* out;
    CHECK(cudaMalloc(&out, 4096));
    run<8, 0>("mma only, 8 accumulators", 4, 1, sms, out);
    run<8, 0>("mma only, 8 accumulators", 4, 2, sms, out);
    run<8, 0>("mma only, 8 accumulators", 8, 1, sms, out);
    run<8, 0>("mma only, 8 accumulators", 8, 2, sms, out);
    run<8, 0>("mma only, 8 accumulators", 8, 4, sms, out);
    run<16, 0>("mma only, 16 accumulators", 4, 2, sms, out);
    run<16, 0>("mma only, 16 accumulators", 8, 2, sms, out);
    run<4, 0>("mma only, 4 accumulators", 8, 2, sms, out);
    run<2, 0>("mma only, 2 accumulators", 8, 4, sms, out);
    run<16, 6>("16 mma + 6 ldmatrix (64x32 warp)", 8, 2, sms, out);
    run<16, 4>("16 mma + 4 ldmatrix (64x64 warp)", 8, 1, sms, out);
    run<16, 4>("16 mma + 4 ldmatrix (64x64 warp)", 8, 2, sms, out);
    run<16, 3>("16 mma + 3 ldmatrix (128x64 warp)", 8, 2, sms, out);
    CHECK(cudaFree(out));
    return 0;
}
