// Blocks that wait for other blocks on the CPU (tests/cuda/test_cpu_runtime_blocks.py): flags,
// locks, the last block of a grid, and waits nothing can end. Each case prints what it computed
// or the fault its launch threw.
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <vector>

// Block 0 waits (polling with an atomic) for a flag the grid's last block sets.
__global__ void atomic_flag(int* flag, int* out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        while (atomicAdd(flag, 0) == 0) {
        }
        out[0] = 7;
    }
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 5) {
        out[1] = 9;
        __threadfence();
        atomicExch(flag, 1);
    }
}

// The same with a volatile load and a plain store (seen in a checked build, as brrr validate's).
__global__ void volatile_flag(int* flag, float* out) {
    if (blockIdx.x == 0) {
        if (threadIdx.x == 0) {
            while (*reinterpret_cast<volatile int*>(flag) == 0) {
            }
        }
        __syncthreads();
        out[threadIdx.x] = out[blockDim.x * (gridDim.x - 1) + threadIdx.x] + 1.0f;
    } else {
        out[blockDim.x * blockIdx.x + threadIdx.x] = static_cast<float>(blockIdx.x * 10 + threadIdx.x);
        __syncthreads();
        if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
            __threadfence();
            *reinterpret_cast<volatile int*>(flag) = 1;
        }
    }
}

// The last block to finish sums every block's partial sum (__threadfence and an atomic counter).
__global__ void last_block_sums(const float* x, float* partial, unsigned* count, float* total, int64_t n) {
    __shared__ float sums[64];
    __shared__ bool last;
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    sums[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) sums[threadIdx.x] += sums[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = sums[0];
        __threadfence();
        last = atomicInc(count, gridDim.x) == gridDim.x - 1;
    }
    __syncthreads();
    if (last && threadIdx.x == 0) {
        float t = 0.0f;
        for (unsigned b = 0; b < gridDim.x; ++b) t += reinterpret_cast<volatile float*>(partial)[b];
        *total = t;
        *count = 0;
    }
}

// A lock around a read-modify-write, as Triton's layer norm backward takes one per column group.
__global__ void locked_sum(int* lock, float* acc, int* order) {
    if (threadIdx.x == 0) {
        while (atomicCAS(lock, 0, 1) != 0) {
        }
        const float seen = *reinterpret_cast<volatile float*>(acc);
        *reinterpret_cast<volatile float*>(acc) = seen + static_cast<float>(blockIdx.x + 1);
        order[blockIdx.x] = 1;
        __threadfence();
        atomicExch(lock, 0);
    }
}

// Each block waits for the block after it: every block must be resident at once.
__global__ void reverse_chain(int* flags, int* values) {
    const unsigned b = blockIdx.x;
    if (threadIdx.x == 0) {
        int carried = 0;
        if (b + 1 < gridDim.x) {
            while (atomicAdd(&flags[b + 1], 0) == 0) {
            }
            carried = values[b + 1];
        }
        values[b] = carried + static_cast<int>(b);
        __threadfence();
        atomicExch(&flags[b], 1);
    }
}

// Planted: flags nobody sets.
__global__ void nobody_sets(int* flag) {
    if (threadIdx.x == 0) {
        while (atomicOr(flag, 0) == 0) {
        }
    }
    __syncthreads();
}

__global__ void nobody_sets_volatile(int* flag) {
    while (reinterpret_cast<volatile int*>(flag)[0] == 0) {
    }
}

__global__ void nobody_sets_napping(int* flag) {
    if (threadIdx.x % 32 == 0) {
        while (*reinterpret_cast<volatile int*>(flag) == 0) __nanosleep(100);
    }
}

// Planted: block 0 waits for a flag block 2 sets, and block 1, between them, traps: the launch reports
// the trap, not block 0's wait (block 2 is never run: the blocks after a faulting one are skipped).
__global__ void waits_past_a_fault(int* flag) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        while (atomicAdd(flag, 0) == 0) {
        }
    }
    if (blockIdx.x == 1 && threadIdx.x == 0) __trap();  // the fault
    if (blockIdx.x == 2 && threadIdx.x == 0) atomicExch(flag, 1);
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    try {
        if (c == "atomic_flag") {
            int flag = 0;
            std::vector<int> out(2);
            atomic_flag<<<5, 32>>>(&flag, out.data());
            std::printf("%d %d\n", out[0], out[1]);
        } else if (c == "volatile_flag") {
            std::vector<int> flag(1);  // on the heap, as a tensor is
            std::vector<float> out(4 * 32, -1.0f);
            volatile_flag<<<4, 32>>>(flag.data(), out.data());
            for (int t = 0; t < 32; ++t) std::printf("%g ", out[t]);
            std::printf("\n");
        } else if (c == "last_block_sums") {
            const int64_t n = 1000;
            std::vector<float> x(n), partial(16);
            for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i % 17) - 3.0f;
            unsigned count = 0;
            float total = -1.0f;
            last_block_sums<<<16, 64>>>(x.data(), partial.data(), &count, &total, n);
            std::printf("%g %u\n", total, count);
        } else if (c == "locked_sum") {
            int lock = 0;
            float acc = 0.0f;
            std::vector<int> order(40);
            locked_sum<<<40, 64>>>(&lock, &acc, order.data());
            int done = 0;
            for (int o : order) done += o;
            std::printf("%g %d %d\n", acc, done, lock);
        } else if (c == "reverse_chain") {
            std::vector<int> flags(12), values(12);
            reverse_chain<<<12, 32>>>(flags.data(), values.data());
            for (int v : values) std::printf("%d ", v);
            std::printf("\n");
        } else if (c == "nobody_sets") {
            std::vector<int> flag(1);
            nobody_sets<<<2, 64>>>(flag.data());
        } else if (c == "nobody_sets_volatile") {
            std::vector<int> flag(1);
            nobody_sets_volatile<<<3, 32>>>(flag.data());
        } else if (c == "waits_past_a_fault") {
            std::vector<int> flag(1);
            waits_past_a_fault<<<3, 32>>>(flag.data());
        } else if (c == "nobody_sets_napping") {
            std::vector<int> flag(1);
            nobody_sets_napping<<<2, 64>>>(flag.data());
        } else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
