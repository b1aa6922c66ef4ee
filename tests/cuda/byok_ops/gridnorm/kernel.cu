// x / sqrt(sum(x^2) / n + eps) over the whole tensor in one cooperative launch, as public kernels
// write a grid-wide reduction: each block's sum of squares, a grid-wide barrier, then every block adds
// the partials (in block order: the same bits in each) and scales its own elements. The grid is sized
// as cooperative code sizes it: blocks an SM by the occupancy calculator, times the SMs.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace cg = cooperative_groups;

constexpr int kThreads = 128;

template <typename T>
__global__ void gridnorm_kernel(const T* x, T* y, T* partial, int64_t n, T eps) {
    cg::grid_group grid = cg::this_grid();
    __shared__ T sums[kThreads];
    T s = 0;
    for (int64_t i = grid.thread_rank(); i < n; i += static_cast<int64_t>(grid.size())) s += x[i] * x[i];
    sums[threadIdx.x] = s;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
        if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
    grid.sync();
    T total = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) total += partial[b];
    const T r = T(1) / sqrt(total / static_cast<T>(n) + eps);
    for (int64_t i = grid.thread_rank(); i < n; i += static_cast<int64_t>(grid.size())) y[i] = x[i] * r;
}

// The blocks a cooperative grid may have here: all resident at once.
template <typename T>
int gridnorm_blocks() {
    int sms = 0, per_sm = 0, device = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gridnorm_kernel<T>, kThreads, 0);
    return sms * per_sm;
}

template <typename T>
cudaError_t gridnorm(const T* x, T* y, T* partial, int64_t n, double eps, int blocks, cudaStream_t stream) {
    T e = static_cast<T>(eps);
    void* args[] = {(void*)&x, (void*)&y, (void*)&partial, (void*)&n, (void*)&e};
    return cudaLaunchCooperativeKernel((void*)gridnorm_kernel<T>, dim3(blocks), dim3(kThreads), args, 0, stream);
}

template int gridnorm_blocks<float>();
template int gridnorm_blocks<double>();
template cudaError_t gridnorm(const float*, float*, float*, int64_t, double, int, cudaStream_t);
template cudaError_t gridnorm(const double*, double*, double*, int64_t, double, int, cudaStream_t);
