// Thread block clusters on the CPU (tests/cuda/test_cpu_runtime_cluster.py): kernels written as the
// CUDA Programming Guide's cluster examples are, each case printing what it computed or the fault its
// launch threw. Buffers are managed memory, so the correct cases also build with nvcc and run on a GPU
// (benchmarks/results/2026-11-30-h200-clusters: the same output there).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace cg = cooperative_groups;

// Each block of a pair reads the other's shared memory (the guide's distributed shared memory).
__global__ void __cluster_dims__(2, 1, 1) swap_halves(float* out) {
    __shared__ float mine[32];
    cg::cluster_group cluster = cg::this_cluster();
    mine[threadIdx.x] = threadIdx.x + 100.0f * cluster.block_rank() + 1000.0f * blockIdx.x;
    cluster.sync();
    const float* theirs = cluster.map_shared_rank(mine, cluster.block_rank() ^ 1);
    out[blockIdx.x * 32 + threadIdx.x] = theirs[threadIdx.x];
    cluster.sync();  // no block leaves while the other may still read its shared memory
}

// Clusters of 2 x 2 blocks from cudaLaunchKernelEx: what each block is told, and a cluster-wide sum
// gathered by rank 0 from every block's shared memory. Split arrive/wait at the end.
__global__ void cluster_facts(int* facts, float* sums) {
    __shared__ float partial;
    cg::cluster_group cluster = cg::this_cluster();
    cg::grid_group grid = cg::this_grid();
    const int b = blockIdx.x + gridDim.x * blockIdx.y;
    if (threadIdx.x == 0) {
        int* f = facts + b * 8;
        f[0] = cluster.block_rank();
        f[1] = cluster.num_blocks();
        f[2] = cluster.dim_blocks().x * 10 + cluster.dim_blocks().y;
        f[3] = cluster.block_index().x * 10 + cluster.block_index().y;
        f[4] = static_cast<int>(grid.cluster_rank());
        f[5] = static_cast<int>(grid.num_clusters());
        f[6] = cluster.num_threads();
        f[7] = cluster.query_shared_rank(&partial);
        partial = static_cast<float>(b);
    }
    cluster.sync();
    if (cluster.block_rank() == 0 && threadIdx.x == 0) {
        float total = 0.0f;
        for (unsigned r = 0; r < cluster.num_blocks(); ++r) total += *cluster.map_shared_rank(&partial, r);
        sums[grid.cluster_rank()] = total;
    }
    auto token = cluster.barrier_arrive();
    cluster.barrier_wait(std::move(token));
}

// The same exchange in PTX, as CUTLASS-style kernels write it: the rank and size from special
// registers, the split cluster barrier, and mapa on a generic address.
__global__ void __cluster_dims__(4, 1, 1) ptx_ring(float* out) {
    __shared__ float mine;
    unsigned rank, blocks, cluster_x;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(blocks));
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cluster_x));
    if (threadIdx.x == 0) mine = 10.0f * blockIdx.x;
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
    uint64_t next;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(next) : "l"(reinterpret_cast<uint64_t>(&mine)), "r"((rank + 1) % blocks));
    out[blockIdx.x * 32 + threadIdx.x] = *reinterpret_cast<const float*>(next) + 1000.0f * cluster_x + threadIdx.x;
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
    asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}

// The planted bugs.
__global__ void __cluster_dims__(2, 1, 1) read_before_sync(float* out) {
    __shared__ float mine[32];
    mine[threadIdx.x] = 1.0f;
    cg::cluster_group cluster = cg::this_cluster();
    const float* theirs = cluster.map_shared_rank(mine, cluster.block_rank() ^ 1);  // no cluster.sync() first
    out[blockIdx.x * 32 + threadIdx.x] = theirs[threadIdx.x];
    cluster.sync();
}

__global__ void __cluster_dims__(2, 1, 1) rank_one_returns(float* out) {
    cg::cluster_group cluster = cg::this_cluster();
    if (cluster.block_rank() == 1) return;
    cluster.sync();  // waits for a block that has left
    out[blockIdx.x] = 1.0f;
}

// A template's shape (as fast.cu's cluster kernels declare theirs), launched plainly: learnt by a first
// launch that stops before any code of the kernel runs, so every thread counts once.
template <int N>
__global__ void __cluster_dims__(N, 1, 1) templated(float* out, int* calls) {
    atomicAdd(calls, 1);
    cg::this_cluster().sync();
    if (threadIdx.x == 0) out[blockIdx.x] = cg::this_cluster().block_rank() + 10.0f * cg::this_cluster().num_blocks();
}

template <typename T>
struct Managed {
    T* p = nullptr;
    size_t n;
    explicit Managed(size_t count) : n(count) {
        cudaMallocManaged(&p, n * sizeof(T));
        cudaMemset(p, 0, n * sizeof(T));
        cudaDeviceSynchronize();
    }
    ~Managed() { cudaFree(p); }
    T* data() { return p; }
    T* begin() { return p; }
    T* end() { return p + n; }
};

void print(Managed<float>& v) {
    cudaDeviceSynchronize();
    for (float x : v) std::printf("%g ", x);
    std::printf("\n");
}

// cudaLaunchKernelEx in clusters of `cluster`.
template <typename... P, typename... A>
cudaError_t launch_in_clusters(void (*kernel)(P...), dim3 grid, dim3 block, dim3 cluster, A... args) {
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeClusterDimension;
    attribute[0].val.clusterDim.x = cluster.x;
    attribute[0].val.clusterDim.y = cluster.y;
    attribute[0].val.clusterDim.z = cluster.z;
    config.attrs = attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, kernel, args...);
}

cudaError_t launch_facts(dim3 grid, dim3 cluster, int* facts, float* sums) {
    return launch_in_clusters(cluster_facts, grid, dim3(64), cluster, facts, sums);
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    try {
        Managed<float> out(6 * 32);
        if (c == "swap_halves") {
            swap_halves<<<6, 32>>>(out.data());
            print(out);
        } else if (c == "cluster_facts") {
            Managed<int> facts(16 * 8);
            Managed<float> sums(4);
            launch_facts(dim3(4, 4), dim3(2, 2, 1), facts.data(), sums.data());
            cudaDeviceSynchronize();
            for (int f : facts) std::printf("%d ", f);
            print(sums);
        } else if (c == "ragged_grid") {
            Managed<int> facts(15 * 8);
            Managed<float> sums(4);
            launch_facts(dim3(5, 3), dim3(2, 2, 1), facts.data(), sums.data());
        } else if (c == "ptx_ring") {
            Managed<float> ring(8 * 32);
            ptx_ring<<<8, 32>>>(ring.data());
            print(ring);
        } else if (c == "too_large") {
            Managed<int> facts(32 * 8);
            Managed<float> sums(1);
            launch_facts(dim3(32, 1), dim3(32, 1, 1), facts.data(), sums.data());
        } else if (c == "read_before_sync") {
            read_before_sync<<<2, 32>>>(out.data());
        } else if (c == "rank_one_returns") {
            rank_one_returns<<<2, 32>>>(out.data());
        } else if (c == "templated") {
            Managed<int> calls(1);
            Managed<float> ranks(6);
            templated<3><<<6, 32>>>(ranks.data(), calls.data());
            templated<3><<<6, 32>>>(ranks.data(), calls.data());
            cudaDeviceSynchronize();
            std::printf("%d ", calls.data()[0]);
            print(ranks);
        } else if (c == "shape_mismatch") {
            launch_in_clusters(swap_halves, dim3(6), dim3(32), dim3(3, 1, 1), out.data());
        } else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
