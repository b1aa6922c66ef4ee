// Kernels for tests/cuda/test_cpu_runtime.py: each case launches one kernel on the CPU execution and
// prints what it computed, or the fault the launch threw. `prog CASE` runs one case.
#include <cuda_runtime.h>

#include <cassert>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

__global__ void shuffles(int* out) {
    const int lane = threadIdx.x % 32;
    int v = lane * 10;
    out[threadIdx.x * 8 + 0] = __shfl_xor_sync(0xffffffffu, v, 1);
    out[threadIdx.x * 8 + 1] = __shfl_up_sync(0xffffffffu, v, 3);
    out[threadIdx.x * 8 + 2] = __shfl_down_sync(0xffffffffu, v, 3, 16);
    out[threadIdx.x * 8 + 3] = __shfl_sync(0xffffffffu, v, 5, 8);
    out[threadIdx.x * 8 + 4] = static_cast<int>(__ballot_sync(0xffffffffu, lane % 3 == 0));
    out[threadIdx.x * 8 + 5] = __all_sync(0xffffffffu, lane < 40) * 2 + __any_sync(0xffffffffu, lane == 7);
    out[threadIdx.x * 8 + 6] = __reduce_add_sync(0xffffffffu, lane);
    double d = lane + 0.5;
    for (int offset = 16; offset > 0; offset /= 2) d += __shfl_xor_sync(0xffffffffu, d, offset);
    out[threadIdx.x * 8 + 7] = static_cast<int>(d);
}

__global__ void block_sync(int* out) {
    __shared__ int slots[64];
    extern __shared__ float dyn[];
    slots[threadIdx.x] = static_cast<int>(threadIdx.x) + 1;
    dyn[threadIdx.x] = 2.0f * threadIdx.x;
    const int count = __syncthreads_count(threadIdx.x % 4 == 0);
    const int all = __syncthreads_and(threadIdx.x < 64);
    const int any = __syncthreads_or(threadIdx.x == 63);
    out[threadIdx.x] = slots[63 - threadIdx.x] + 1000 * count + 100000 * all + 1000000 * any +
                       static_cast<int>(dyn[63 - threadIdx.x]) * 10000000;
}

__global__ void unwritten_shared(float* out) {
    __shared__ float s[32];
    if (threadIdx.x != 5) s[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}

__global__ void divergent_active(unsigned* out) {
    if (threadIdx.x % 2 == 0) {
        out[threadIdx.x] = __activemask();
    } else {
        out[threadIdx.x] = __activemask() | 1u;
    }
}

__global__ void atomics(unsigned long long* total, float* fsum) {
    atomicAdd(total, static_cast<unsigned long long>(blockIdx.x * blockDim.x + threadIdx.x));
    atomicAdd(fsum, 1.0f);
}

__global__ void barrier_after_return(float* out) {
    if (threadIdx.x >= 40) return;
    __syncthreads();
    out[threadIdx.x] = 1.0f;
}

__global__ void barrier_in_branch(float* out) {
    if (threadIdx.x < 32) {
        __syncthreads();
    } else {
        __syncthreads();
    }
    out[threadIdx.x] = 1.0f;
}

__global__ void mask_names_exited_lane(int* out) {
    if (threadIdx.x == 3) return;
    out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 1);
}

__global__ void mask_without_caller(int* out) { out[threadIdx.x] = __shfl_sync(0x0000fffeu, 1, 1); }

__global__ void reads_lane_outside_mask(int* out) {
    if (threadIdx.x < 16) out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, static_cast<int>(threadIdx.x), 4);
}

__global__ void lanes_at_different_calls(int* out) {
    int v = threadIdx.x;
    if (threadIdx.x < 16) {
        v = __shfl_xor_sync(0xffffffffu, v, 1);
    } else {
        v = __shfl_xor_sync(0xffffffffu, v, 2);
    }
    out[threadIdx.x] = v;
}

__global__ void partial_warp_full_mask(int* out) { out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1, 16); }

__global__ void asserts(int* out) {
    assert(threadIdx.x != 7);
    out[threadIdx.x] = 1;
}

__global__ void __launch_bounds__(32) traps(int* out) {
    if (blockIdx.x == 2 && threadIdx.x == 1) __trap();
    out[threadIdx.x] = 1;
}

__global__ void spins(int* flag) {
    // Thread 0 waits for thread 1, which on the CPU runs only when thread 0 waits somewhere.
    if (threadIdx.x == 0) {
        while (*reinterpret_cast<volatile int*>(flag) == 0) {
        }
    }
    if (threadIdx.x == 1) *flag = 1;
}

__global__ void naps(int* flag) {
    if (threadIdx.x == 0) {
        while (*reinterpret_cast<volatile int*>(flag) == 0) __nanosleep(100);
    }
    if (threadIdx.x == 1) *flag = 1;
}

static void print_ints(const std::vector<int>& v) {
    for (int x : v) std::printf("%d ", x);
    std::printf("\n");
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    try {
        if (c == "shuffles") {
            std::vector<int> out(64 * 8);
            shuffles<<<1, 64>>>(out.data());
            print_ints(out);
        } else if (c == "block_sync") {
            std::vector<int> out(64);
            block_sync<<<1, 64, 64 * sizeof(float)>>>(out.data());
            print_ints(out);
        } else if (c == "unwritten_shared") {
            std::vector<float> out(32);
            unwritten_shared<<<1, 32>>>(out.data());
            for (float x : out) std::printf("%g ", x);
            std::printf("\n");
        } else if (c == "divergent_active") {
            std::vector<unsigned> out(32);
            divergent_active<<<1, 32>>>(out.data());
            for (unsigned x : out) std::printf("%x ", x);
            std::printf("\n");
        } else if (c == "atomics") {
            unsigned long long total = 0;
            float fsum = 0;
            atomics<<<dim3(5, 2), 96>>>(&total, &fsum);
            std::printf("%llu %g\n", total, fsum);
        } else if (c == "barrier_after_return") {
            std::vector<float> out(64);
            barrier_after_return<<<1, 64>>>(out.data());
        } else if (c == "barrier_in_branch") {
            std::vector<float> out(64);
            barrier_in_branch<<<1, 64>>>(out.data());
        } else if (c == "mask_names_exited_lane") {
            std::vector<int> out(32);
            mask_names_exited_lane<<<1, 32>>>(out.data());
        } else if (c == "mask_without_caller") {
            std::vector<int> out(32);
            mask_without_caller<<<1, 32>>>(out.data());
        } else if (c == "reads_lane_outside_mask") {
            std::vector<int> out(32);
            reads_lane_outside_mask<<<1, 32>>>(out.data());
        } else if (c == "lanes_at_different_calls") {
            std::vector<int> out(32);
            lanes_at_different_calls<<<1, 32>>>(out.data());
        } else if (c == "partial_warp_full_mask") {
            std::vector<int> out(48);
            partial_warp_full_mask<<<1, 48>>>(out.data());
        } else if (c == "asserts") {
            std::vector<int> out(32);
            asserts<<<2, 32>>>(out.data());
        } else if (c == "traps") {
            std::vector<int> out(32);
            traps<<<4, 32>>>(out.data());
        } else if (c == "spins" || c == "naps") {
            int flag = 0;
            if (c == "spins") spins<<<1, 32>>>(&flag);
            else naps<<<1, 32>>>(&flag);
            std::printf("%d\n", flag);
        } else if (c == "bad_config") {
            std::vector<int> out(32);
            traps<<<dim3(1, 70000), 32>>>(out.data());
        } else if (c == "past_launch_bounds") {
            std::vector<int> out(64);
            traps<<<1, 64>>>(out.data());
        } else if (c.rfind("shared_", 0) == 0) {  // dynamic shared memory past 48 KiB, with and without the opt-in
            std::vector<int> out(64);
            const size_t bytes = c == "shared_beside_static" ? 49152 - 128 : 60000;
            if (c == "shared_opted_in") cudaFuncSetAttribute(block_sync, cudaFuncAttributeMaxDynamicSharedMemorySize, 60000);
            if (c == "shared_past_allowance") cudaFuncSetAttribute(block_sync, cudaFuncAttributeMaxDynamicSharedMemorySize, 50000);
            block_sync<<<1, 64, bytes>>>(out.data());
            print_ints(out);
        } else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
