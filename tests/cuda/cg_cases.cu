// Cooperative groups on the CPU (tests/cuda/test_cpu_runtime_cg.py): kernels written as public
// CUDA code writes them, each printing what it computed or the fault its launch threw.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

namespace cg = cooperative_groups;

// Everything a tile of N threads tells and moves, 16 numbers per thread.
template <int N>
__global__ void tile_ops(long long* out) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<N> tile = cg::tiled_partition<N>(block);
    const int r = static_cast<int>(tile.thread_rank());
    const int v = 100 * static_cast<int>(block.thread_rank());
    long long* o = out + static_cast<int64_t>(block.thread_rank()) * 16;
    o[0] = r;
    o[1] = tile.meta_group_rank();
    o[2] = tile.meta_group_size();
    o[3] = tile.num_threads() * 1000 + tile.size();
    o[4] = tile.shfl(v, (r * 5 + 3) % N);
    o[5] = tile.shfl_down(v, 3);
    o[6] = tile.shfl_up(v, 3);
    o[7] = tile.shfl_xor(v, 5 % N);
    o[8] = tile.ballot(r % 3 == 0);
    o[9] = tile.any(r == 2) + 2 * tile.all(r < N);
    o[10] = tile.match_any(r % 4);
    int pred = -1;
    o[11] = tile.match_all(block.thread_rank() / 64, pred);
    o[12] = pred;
    tile.sync();
    o[13] = tile.shfl(static_cast<double>(v) + 0.5, 0) * 2;
    o[14] = block.size();
    o[15] = block.thread_index().x + 10 * block.thread_index().y + 100 * block.group_index().x;
}

// A block reduction as llm.c's kernels write it: warp sums with cg::reduce, then shared memory.
__global__ void block_sum(const float* x, float* sums, float* maxes, int64_t n) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    __shared__ float partial[32];
    __shared__ float partial_max[32];
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const float v = i < n ? x[i] : 0.0f;
    const float warp_sum = cg::reduce(warp, v, cg::plus<float>{});
    const float warp_max = cg::reduce(warp, i < n ? v : -1e30f, cg::greater<float>{});
    if (warp.thread_rank() == 0) {
        partial[warp.meta_group_rank()] = warp_sum;
        partial_max[warp.meta_group_rank()] = warp_max;
    }
    cg::sync(block);
    if (warp.meta_group_rank() == 0) {
        const float s = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.0f;
        const float m = warp.thread_rank() < warp.meta_group_size() ? partial_max[warp.thread_rank()] : -1e30f;
        const float total = cg::reduce(warp, s, cg::plus<float>{});
        const float most = cg::reduce(warp, m, cg::greater<float>{});
        if (warp.thread_rank() == 0) {
            sums[blockIdx.x] = total;
            maxes[blockIdx.x] = most;
        }
    }
}

struct MaxSum {  // an online softmax's running (max, sum of exp(x - max))
    float m, s;
};
struct Wide {  // more than the 16 bytes one warp call moves
    double a, b, c;
    int k;
};

// The other operators, on integers, a user's struct and a struct wider than 16 bytes.
__global__ void reduce_ops(long long* out, double* wide) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<8> tile = cg::tiled_partition<8>(block);
    const unsigned t = block.thread_rank();
    const int v = static_cast<int>((t * 37u + 11u) % 29u) - 14;
    long long* o = out + static_cast<int64_t>(t) * 8;
    o[0] = cg::reduce(tile, v, cg::plus<int>());
    o[1] = cg::reduce(tile, v, cg::less<int>());
    o[2] = cg::reduce(tile, v, cg::greater<int>());
    o[3] = cg::reduce(tile, 0xff00u | (1u << (t % 8)) | (t << 16), cg::bit_and<unsigned>());
    o[4] = cg::reduce(tile, 1u << (t % 13), cg::bit_or<unsigned>());
    o[5] = cg::reduce(tile, t * 2654435761u, cg::bit_xor<unsigned>());
    const MaxSum mine{static_cast<float>(v), 1.0f};
    const MaxSum all = cg::reduce(tile, mine, [](MaxSum a, MaxSum b) {
        const float m = a.m > b.m ? a.m : b.m;
        return MaxSum{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
    });
    o[6] = static_cast<long long>(all.m);
    o[7] = static_cast<long long>(all.s * 1000000.0f);
    const Wide w{t + 0.25, 2.0 * t, -1.0 * t, static_cast<int>(t)};
    const Wide sum = cg::reduce(cg::tiled_partition<32>(block), w, [](Wide a, Wide b) {
        return Wide{a.a + b.a, a.b + b.b, a.c + b.c, a.k + b.k};
    });
    wide[t * 4 + 0] = sum.a;
    wide[t * 4 + 1] = sum.b;
    wide[t * 4 + 2] = sum.c;
    wide[t * 4 + 3] = sum.k;
}

// The lanes that take a branch, as one group.
__global__ void coalesced(long long* out) {
    const int lane = threadIdx.x % 32;
    long long* o = out + static_cast<int64_t>(threadIdx.x) * 6;
    if (lane % 3 == 0) {
        cg::coalesced_group active = cg::coalesced_threads();
        const int r = static_cast<int>(active.thread_rank());
        o[0] = active.num_threads() * 100 + r;
        o[1] = active.shfl(lane, 0);
        o[2] = active.shfl_down(lane, 1);
        o[3] = active.shfl_up(lane, 2);
        o[4] = active.ballot(r % 2 == 1);
        o[5] = cg::reduce(active, lane, cg::plus<int>());
    } else {
        for (int k = 0; k < 6; ++k) o[k] = -1;
    }
}

// Tiles of tiles, and a tile whose size is known only at run time.
__global__ void nested(long long* out, int tile_size) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<8> eighth = cg::tiled_partition<8>(warp);
    cg::thread_group dynamic = cg::tiled_partition(block, tile_size);
    long long* o = out + static_cast<int64_t>(block.thread_rank()) * 5;
    o[0] = eighth.thread_rank();
    o[1] = eighth.meta_group_rank();
    o[2] = eighth.meta_group_size();
    o[3] = dynamic.thread_rank() * 100 + dynamic.num_threads();
    dynamic.sync();
    cg::thread_group as_group = eighth;
    as_group.sync();
    o[4] = eighth.shfl_xor(static_cast<int>(block.thread_rank()), 1);
}

// Planted bugs, each a fault naming its line.
__global__ void partial_tile(float* out) {
    cg::thread_block block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    out[block.thread_rank()] = cg::reduce(warp, 1.0f, cg::plus<float>());
}

__global__ void bad_dynamic_size(float* out) {
    cg::thread_group tile = cg::tiled_partition(cg::this_thread_block(), 24);
    out[threadIdx.x] = static_cast<float>(tile.thread_rank());
}

__global__ void grid_sync(float* out) {
    cg::grid_group grid = cg::this_grid();
    out[grid.thread_rank()] = 1.0f;
    grid.sync();
}

__global__ void tile_lane_returns(float* out) {
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(cg::this_thread_block());
    if (tile.thread_rank() == 3) return;
    out[threadIdx.x] = cg::reduce(tile, 1.0f, cg::plus<float>());
}

static void print(const std::vector<long long>& v) {
    for (long long x : v) std::printf("%lld ", x);
    std::printf("\n");
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    try {
        if (c == "tile32" || c == "tile16" || c == "tile4") {
            std::vector<long long> out(128 * 16);
            const dim3 block(16, 8);
            if (c == "tile32") tile_ops<32><<<dim3(3), block>>>(out.data());
            if (c == "tile16") tile_ops<16><<<dim3(3), block>>>(out.data());
            if (c == "tile4") tile_ops<4><<<dim3(3), block>>>(out.data());
            print(out);
        } else if (c == "block_sum") {
            const int64_t n = 1000;
            std::vector<float> x(n), sums(4), maxes(4);
            for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>((i * 7919) % 1001) / 8.0f - 60.0f;
            block_sum<<<4, 256>>>(x.data(), sums.data(), maxes.data(), n);
            for (int b = 0; b < 4; ++b) std::printf("%.9g %.9g ", sums[b], maxes[b]);
            std::printf("\n");
        } else if (c == "reduce_ops") {
            std::vector<long long> out(64 * 8);
            std::vector<double> wide(64 * 4);
            reduce_ops<<<1, 64>>>(out.data(), wide.data());
            print(out);
            for (double w : wide) std::printf("%.17g ", w);
            std::printf("\n");
        } else if (c == "coalesced") {
            std::vector<long long> out(64 * 6);
            coalesced<<<1, 64>>>(out.data());
            print(out);
        } else if (c == "nested") {
            std::vector<long long> out(64 * 5);
            nested<<<1, 64>>>(out.data(), 16);
            print(out);
        } else if (c == "partial_tile") {
            std::vector<float> out(48);
            partial_tile<<<2, 48>>>(out.data());
        } else if (c == "bad_dynamic_size") {
            std::vector<float> out(48);
            bad_dynamic_size<<<1, 48>>>(out.data());
        } else if (c == "grid_sync") {
            std::vector<float> out(64);
            grid_sync<<<2, 32>>>(out.data());
        } else if (c == "tile_lane_returns") {
            std::vector<float> out(32);
            tile_lane_returns<<<1, 32>>>(out.data());
        } else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
