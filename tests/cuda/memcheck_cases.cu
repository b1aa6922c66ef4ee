// Small kernels for tests/test_memcheck.py, built with the checks into one program without torch
// (so without the allocation registry: only shared memory bounds and races are checked here).
#include <cstdio>
#include <string>
#include <vector>

// Every thread adds to one shared counter with atomicAdd: atomics are no race with each other.
__global__ void shared_atomics(int* out) {
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    atomicAdd(&count, 1);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = count;
}

// Lanes of one warp exchange through shared memory: ordered by a __syncwarp between (no race),
// or not at all (a race between two lanes of one warp).
template <bool kSync>
__global__ void warp_exchange(int* out) {
    __shared__ int slot[64];
    slot[threadIdx.x] = static_cast<int>(threadIdx.x) * 10;
    if (kSync) __syncwarp();
    out[threadIdx.x] = slot[threadIdx.x ^ 1];
}

// Lanes of different warps need a __syncthreads: a __syncwarp is not enough.
__global__ void across_warps(int* out) {
    __shared__ int slot[64];
    slot[threadIdx.x] = static_cast<int>(threadIdx.x);
    __syncwarp();
    out[threadIdx.x] = slot[(threadIdx.x + 32) % 64];
}

// One element past a shared array.
__global__ void shared_overrun(int* out) {
    __shared__ int buf[32];
    buf[threadIdx.x + 1] = 1;
    __syncthreads();
    out[threadIdx.x] = buf[threadIdx.x];
}

// A __syncthreads only the first warp reaches: the second, past it, reads what the first wrote in the
// same phase (a race) before the barrier is found divergent; or the barrier every thread reaches.
template <bool kBranch>
__global__ void barrier_in_branch(int* out) {
    __shared__ int slot[64];
    slot[threadIdx.x] = static_cast<int>(threadIdx.x);
    if (!kBranch || threadIdx.x < 32) __syncthreads();
    out[threadIdx.x] = slot[63 - threadIdx.x];
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    std::vector<int> out(64);
    try {
        if (c == "shared_atomics") shared_atomics<<<2, 96>>>(out.data());
        else if (c == "warp_synced") warp_exchange<true><<<1, 64>>>(out.data());
        else if (c == "warp_unsynced") warp_exchange<false><<<1, 64>>>(out.data());
        else if (c == "across_warps") across_warps<<<1, 64>>>(out.data());
        else if (c == "shared_overrun") shared_overrun<<<1, 32>>>(out.data());
        else if (c == "barrier_in_branch") barrier_in_branch<true><<<1, 64>>>(out.data());
        else if (c == "barrier_for_all") barrier_in_branch<false><<<1, 64>>>(out.data());
        else return 2;
        for (int i = 0; i < 4; ++i) std::printf("%d ", out[i]);
        std::printf("\n");
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
