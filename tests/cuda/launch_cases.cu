// The runtime's launch calls beside <<<>>> on the CPU (tests/cuda/test_cpu_runtime_launch.py):
// cudaLaunchKernel and cudaLaunchCooperativeKernel with an argument array (the kernel cast to void*
// as public code writes it), cudaLaunchKernelEx with attributes, and the grid-wide barrier of a
// cooperative launch; brrr_kernel.cuh's launch facts, asked once. Each case prints what it computed or
// the fault its launch threw.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

#include "brrr_kernel.cuh"

namespace cg = cooperative_groups;

// Two rounds through the grid barrier: each block's sum of every block's value, then of every
// block's first total. Any block reading before every block has written sees a NaN or a stale value.
__global__ void grid_sums(const float* x, float* partial, float* totals, int n) {
    cg::grid_group grid = cg::this_grid();
    __shared__ float sum;
    if (threadIdx.x == 0) sum = 0.0f;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) atomicAdd(&sum, x[blockIdx.x * n + i]);
    __syncthreads();
    if (threadIdx.x == 0) partial[blockIdx.x] = sum;
    grid.sync();  // every block's partial written
    float total = 0.0f;
    for (unsigned b = 0; b < gridDim.x; ++b) total += partial[b];
    grid.sync();  // every block has read `partial`: it may be written again
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
    cg::sync(grid);
    if (threadIdx.x == 0) {
        float again = 0.0f;
        for (unsigned b = 0; b < gridDim.x; ++b) again += partial[b];
        totals[blockIdx.x] = again;
    }
}

__global__ void validity(int* out) {
    if (threadIdx.x == 0) out[blockIdx.x] = cg::this_grid().is_valid() ? 1 : 0;
}

// Planted: block 1 returns before the barrier the others wait at.
__global__ void grid_skipped(int* out) {
    if (blockIdx.x == 1) return;
    cg::this_grid().sync();  // block 1 never comes
    out[blockIdx.x] = 1;
}

// Planted: block 2 traps while the others wait at the barrier for it.
__global__ void grid_fault(int* out) {
    if (blockIdx.x == 2 && threadIdx.x == 0) __trap();
    cg::this_grid().sync();  // the others wait here
    out[blockIdx.x] = 1;
}

__global__ void scaled(const float* x, float* y, float a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}

// Template kernels launched by their bare name, as public code does (RWKV's kernel_forward): the
// arguments deduce F, a non-type parameter takes its default, and a pack takes what remains.
template <typename F, int kScale = 2>
__global__ void __launch_bounds__(64) deduced(const F* __restrict__ x, F* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = kScale * x[i];
}

// The first template argument given, the second deduced.
template <int kScale, typename F>
__global__ void scaled_by(const F* x, F* y, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = kScale * x[i];
}

template <typename... Ts>
__global__ void deduced_pack(double* out, Ts... values) {
    if (threadIdx.x == 0) out[blockIdx.x] = (0.0 + ... + static_cast<double>(values));
}

static void print(const std::vector<float>& v) {
    for (float f : v) std::printf("%g ", f);
    std::printf("\n");
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    try {
        const int blocks = 6, n = 40;
        std::vector<float> x(blocks * n), partial(blocks, -1.0f), totals(blocks, -1.0f);
        for (int i = 0; i < blocks * n; ++i) x[i] = static_cast<float>(i % 7);
        const float* xp = x.data();
        float *pp = partial.data(), *tp = totals.data();
        int count = n;
        void* args[] = {&xp, &pp, &tp, &count};
        if (c == "cooperative") {
            const cudaError_t e = cudaLaunchCooperativeKernel((void*)grid_sums, dim3(blocks), dim3(64), args, 0, nullptr);
            std::printf("%d ", static_cast<int>(e));
            print(totals);
        } else if (c == "cooperative_ex") {
            cudaLaunchAttribute attrs[2];
            attrs[0].id = cudaLaunchAttributeCooperative;
            attrs[0].val.cooperative = 1;
            attrs[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attrs[1].val.programmaticStreamSerializationAllowed = 1;
            cudaLaunchConfig_t config{};
            config.gridDim = dim3(blocks);
            config.blockDim = dim3(64);
            config.attrs = attrs;
            config.numAttrs = 2;
            const cudaError_t e = cudaLaunchKernelEx(&config, grid_sums, xp, pp, tp, count);
            std::printf("%d ", static_cast<int>(e));
            print(totals);
        } else if (c == "not_cooperative") {
            grid_sums<<<blocks, 64>>>(xp, pp, tp, count);
        } else if (c == "validity") {
            std::vector<int> out(2, -1);
            int* op = out.data();
            void* a[] = {&op};
            cudaLaunchCooperativeKernel(validity, dim3(1), dim3(32), a);
            validity<<<1, 32>>>(op + 1);
            std::printf("%d %d\n", out[0], out[1]);
        } else if (c == "launch_facts") {
            // brrr's cached answers against the runtime's own, each asked twice (the second from the cache).
            int per_sm = 0, sms = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sums, 256, 1024);
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
            for (int i = 0; i < 2; ++i) {
                std::printf("%d %d %d %d ", brrr::device_attribute(cudaDevAttrMultiProcessorCount), sms,
                            brrr::blocks_per_sm(grid_sums, 256, 1024), per_sm);
            }
            std::printf("\n");
        } else if (c == "too_large") {
            int per_sm = 0, sms = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sums, 1024, 0);
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
            const cudaError_t e = cudaLaunchCooperativeKernel(grid_sums, dim3(per_sm * sms + 1), dim3(1024), args);
            std::printf("%d %s %g\n", static_cast<int>(e), cudaGetErrorString(e), totals[0]);
        } else if (c == "skipped") {
            std::vector<int> out(4);
            int* op = out.data();
            void* a[] = {&op};
            cudaLaunchCooperativeKernel(grid_skipped, dim3(4), dim3(32), a);
        } else if (c == "fault") {
            std::vector<int> out(4);
            int* op = out.data();
            void* a[] = {&op};
            cudaLaunchCooperativeKernel(grid_fault, dim3(4), dim3(32), a);
        } else if (c == "deduced") {
            std::vector<float> y(100, -1.0f);
            std::vector<double> xd(100, 1.5), yd(100, -1.0), sums(2, -1.0);
            deduced<<<4, 32>>>(xp, y.data(), 100);
            deduced<<<4, 32>>>(xd.data(), yd.data(),
                               100);  // the arguments on a line of their own: line numbers kept
            deduced_pack<<<2, 32>>>(sums.data(), 1, 2.5f, 3.0);
            std::vector<double> y3(100, -1.0);
            scaled_by<3><<<4, 32>>>(xd.data(), y3.data(), 100);
            std::printf("%g %g %g %g %g %g\n", y[8], y[99], yd[0], yd[99], sums[1], y3[50]);
        } else if (c == "launch_kernel") {
            std::vector<float> y(100, -1.0f);
            float* yp = y.data();
            float scale = 3.0f;
            int m = 100;
            void* a[] = {&xp, &yp, &scale, &m};
            const cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(scaled), dim3(4), dim3(32), a, 0, nullptr);
            std::printf("%d %g %g %g\n", static_cast<int>(e), y[0], y[8], y[99]);
        } else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
