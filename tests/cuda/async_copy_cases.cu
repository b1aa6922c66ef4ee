// Kernels for tests/cuda/test_cpu_async_copy.py: asynchronous copies into shared memory on the CPU
// execution (cp.async in inline PTX, the pipeline primitives, cuda::memcpy_async with cuda::pipeline
// and cuda::barrier, cp.async.bulk onto PTX mbarriers). Each correct kernel stages tiles of `in` through shared memory and writes
// out[i] = 2 in[i] + 1; each planted one gets the synchronisation wrong. `prog CASE` prints `out`,
// or the launch's fault. The test builds this file twice: plain, and with the memory checks.
#include <cuda.h>
#include <cuda/barrier>
#include <cuda/pipeline>
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "case_buffers.h"

constexpr int64_t kTile = 128;  // floats a block stages at a time: 4 per thread of 32

__device__ void cp16(float* dst, const float* src) {
    const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(src));
}

// ---- correct ---------------------------------------------------------------------------------------

// Two buffers: tile t + 1 is in flight while tile t is read (wait_group 1), the last with wait_group 0.
__global__ void ptx_double_buffer(const float* in, float* out, int64_t tiles) {
    __shared__ alignas(16) float buf[2][kTile];
    const int64_t t4 = threadIdx.x * 4;
    cp16(&buf[0][t4], in + t4);
    asm volatile("cp.async.commit_group;\n" ::);
    for (int64_t t = 0; t < tiles; ++t) {
        if (t + 1 < tiles) {
            cp16(&buf[(t + 1) % 2][t4], in + (t + 1) * kTile + t4);
            asm volatile("cp.async.commit_group;\n" ::);
            asm volatile("cp.async.wait_group %0;\n" ::"n"(1));
        } else {
            asm volatile("cp.async.wait_all;\n" ::);
        }
        __syncthreads();
        for (int64_t k = 0; k < 4; ++k) {
            const int64_t i = (threadIdx.x + 32 * k) % kTile;  // another thread's elements: needs the barrier
            out[t * kTile + i] = 2.0f * buf[t % 2][i] + 1.0f;
        }
        __syncthreads();
    }
}

// The tail of a row with cp.async's src-size: 8 bytes read, 8 bytes of zeros.
__global__ void ptx_zero_fill(const float* in, float* out) {
    __shared__ alignas(16) float buf[8];
    const uint32_t to = static_cast<uint32_t>(__cvta_generic_to_shared(&buf[4 * threadIdx.x]));
    const int bytes = threadIdx.x == 0 ? 16 : 8;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(in + 4 * threadIdx.x), "r"(bytes));
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group 0;\n" ::);
    for (int64_t k = 0; k < 4; ++k) out[4 * threadIdx.x + k] = 2.0f * buf[4 * threadIdx.x + k] + 1.0f;
}

__global__ void primitives(const float* in, float* out, int64_t tiles) {
    __shared__ alignas(16) float buf[2][kTile];
    const int64_t t4 = threadIdx.x * 4;
    for (int64_t t = 0; t < tiles; ++t) {
        __pipeline_memcpy_async(&buf[t % 2][t4], in + t * kTile + t4, 16);
        __pipeline_commit();
        __pipeline_wait_prior(0);
        __syncthreads();
        for (int64_t k = 0; k < 4; ++k) {
            const int64_t i = (threadIdx.x + 32 * k) % kTile;
            out[t * kTile + i] = 2.0f * buf[t % 2][i] + 1.0f;
        }
    }
}

__global__ void thread_pipeline(const float* in, float* out, int64_t tiles) {
    __shared__ alignas(16) float buf[2][kTile];
    auto pipe = cuda::make_pipeline();
    const int64_t t4 = threadIdx.x * 4;
    for (int64_t t = 0; t < tiles; ++t) {
        pipe.producer_acquire();
        cuda::memcpy_async(&buf[t % 2][t4], in + t * kTile + t4, cuda::aligned_size_t<16>(16), pipe);
        pipe.producer_commit();
        pipe.consumer_wait();
        for (int64_t k = 0; k < 4; ++k) out[t * kTile + t4 + k] = 2.0f * buf[t % 2][t4 + k] + 1.0f;  // its own
        pipe.consumer_release();
    }
}

// A block-wide copy with a cuda::barrier: every thread copies a slice; the phase lands all of them.
struct Block {
    __device__ unsigned thread_rank() const { return threadIdx.x; }
    __device__ unsigned num_threads() const { return blockDim.x; }
    __device__ unsigned size() const { return blockDim.x; }  // what CUDA 13's memcpy_async asks of a group
};

__global__ void block_barrier(const float* in, float* out, int64_t tiles) {
    __shared__ alignas(16) float buf[kTile];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    for (int64_t t = 0; t < tiles; ++t) {
        cuda::memcpy_async(Block{}, buf, in + t * kTile, cuda::aligned_size_t<16>(kTile * sizeof(float)), bar);
        bar.arrive_and_wait();
        for (int64_t k = 0; k < 4; ++k) {
            const int64_t i = (threadIdx.x + 32 * k) % kTile;
            out[t * kTile + i] = 2.0f * buf[i] + 1.0f;
        }
        bar.arrive_and_wait();  // the tile is read before the next copy overwrites it
    }
}

// ---- planted ---------------------------------------------------------------------------------------

// Reads the tile after __syncthreads but before any wait: the copies have not landed.
__global__ void read_before_wait(const float* in, float* out) {
    __shared__ alignas(16) float buf[kTile];
    cp16(&buf[threadIdx.x * 4], in + threadIdx.x * 4);
    asm volatile("cp.async.commit_group;\n" ::);
    __syncthreads();
    for (int64_t k = 0; k < 4; ++k) out[threadIdx.x * 4 + k] = 2.0f * buf[threadIdx.x * 4 + k] + 1.0f;
    asm volatile("cp.async.wait_group 0;\n" ::);
}

// The double buffer's last tile waited for with wait_group 1: its group is still pending.
__global__ void wait_group_too_lax(const float* in, float* out, int64_t tiles) {
    __shared__ alignas(16) float buf[2][kTile];
    const int64_t t4 = threadIdx.x * 4;
    cp16(&buf[0][t4], in + t4);
    asm volatile("cp.async.commit_group;\n" ::);
    for (int64_t t = 0; t < tiles; ++t) {
        if (t + 1 < tiles) {
            cp16(&buf[(t + 1) % 2][t4], in + (t + 1) * kTile + t4);
            asm volatile("cp.async.commit_group;\n" ::);
        }
        asm volatile("cp.async.wait_group 1;\n" ::);
        __syncthreads();
        for (int64_t k = 0; k < 4; ++k) out[t * kTile + t4 + k] = 2.0f * buf[t % 2][t4 + k] + 1.0f;  // the last: in flight
        __syncthreads();
    }
}

// Each thread waits for its own copy, then reads another thread's with no __syncthreads between.
__global__ void landed_without_barrier(const float* in, float* out) {
    __shared__ alignas(16) float buf[kTile];
    __pipeline_memcpy_async(&buf[threadIdx.x * 4], in + threadIdx.x * 4, 16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    out[threadIdx.x] = buf[(threadIdx.x * 4 + 4) % kTile];
}

__global__ void misaligned_copy(const float* in, float* out) {
    __shared__ alignas(16) float buf[kTile];
    __pipeline_memcpy_async(&buf[threadIdx.x * 4], in + threadIdx.x * 4 + 1, 16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    out[threadIdx.x] = buf[threadIdx.x * 4];
}

// A barrier expecting every thread, and thread 5 returns without arriving.
__global__ void barrier_missing_arrival(const float* in, float* out) {
    __shared__ alignas(16) float buf[kTile];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    if (threadIdx.x == 5) return;
    cuda::memcpy_async(&buf[threadIdx.x * 4], in + threadIdx.x * 4, cuda::aligned_size_t<16>(16), bar);
    bar.arrive_and_wait();
    out[threadIdx.x] = buf[threadIdx.x * 4];
}

// ---- the tensor memory accelerator onto a cuda::barrier (libcudacxx's Hopper API) -------------------

// `in` as a [5][128] float tensor; four boxes of 32 columns x 5 rows, 128-byte swizzled, each into its own
// 1024-byte aligned buffer. Thread 0 issues them and arrives with their bytes; every thread then reads
// its column of each box through the swizzle (16-byte unit u of a 128-byte row r sits at u ^ (r % 8)).
template <bool WaitFirst>
__global__ void tensor_copies(const __grid_constant__ CUtensorMap map, float* out) {
    __shared__ alignas(1024) float buf[4][256];
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    if (threadIdx.x == 0) init(&bar, blockDim.x);
    __syncthreads();
    cuda::barrier<cuda::thread_scope_block>::arrival_token token;
    if (threadIdx.x == 0) {
        for (int j = 0; j < 4; ++j) cuda::device::experimental::cp_async_bulk_tensor_2d_global_to_shared(&buf[j][0], &map, 32 * j, 0, bar);
        token = cuda::device::barrier_arrive_tx(bar, 1, 4 * 5 * 32 * sizeof(float));
    } else {
        token = bar.arrive();
    }
    if (WaitFirst) bar.wait(std::move(token));
    for (int j = 0; j < 4; ++j) {
        for (int r = 0; r < 5; ++r) {
            const int byte = r * 128 + static_cast<int>(threadIdx.x) * 4;
            const int swizzled = byte ^ (((byte >> 7) & 7) << 4);
            out[r * 128 + 32 * j + threadIdx.x] = 2 * buf[j][swizzled / 4] + 1;  // tensor read
        }
    }
    if (!WaitFirst) bar.wait(std::move(token));
}

// ---- plain bulk copies (cp.async.bulk, no tensor map) onto PTX mbarriers ------------------------------

__device__ uint32_t smem_at(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }
__device__ void wait_parity(uint64_t* bar, uint32_t parity) {
    asm volatile("{\n.reg .pred ready;\nWAIT:\nmbarrier.try_wait.parity.shared::cta.b64 ready, [%0], %1;\n"
                 "@ready bra DONE;\nbra WAIT;\nDONE:\n}\n" ::"r"(smem_at(bar)), "r"(parity) : "memory");
}

// How the readers of a bulk tile learn that it landed: each thread waits on full[b] itself, one
// thread waits and a __syncthreads passes it on, lane 0 of each warp waits and a __syncwarp passes it
// on (all correct); or, planted, nobody waits, with or without a __syncthreads before the reads (which
// orders the threads but not the copy: only the barrier's phase says the bytes are there). In the
// CPU's order the reads come after the copy landed, so only a check of who saw that phase names them.
enum class Wait { Each, OneThenSyncthreads, LaneThenSyncwarp, SyncthreadsOnly, None };

// Thread 0 copies tile t + 1 into the other buffer with one cp.async.bulk of Bytes while every thread
// reads tile t: full[b] (one arrival and the tile's bytes) says a tile landed there, empty[b] (an
// arrival a thread) that every thread has read it.
template <Wait W, int Bytes>
__global__ void bulk_tiles(const float* in, float* out, int64_t tiles) {
    __shared__ alignas(16) float buf[2][kTile];
    __shared__ alignas(8) uint64_t full[2], empty[2];
    if (threadIdx.x == 0) {
        for (int b = 0; b < 2; ++b) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_at(&full[b])), "r"(1));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_at(&empty[b])), "r"(blockDim.x));
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const auto load = [&](int64_t t) {
        uint64_t* bar = &full[t % 2];
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_at(bar)), "r"(Bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"  // bulk copy
                     ::"r"(smem_at(&buf[t % 2][0])), "l"(in + t * kTile), "r"(Bytes), "r"(smem_at(bar)) : "memory");
    };
    if (threadIdx.x == 0) load(0);
    for (int64_t t = 0; t < tiles; ++t) {
        if (threadIdx.x == 0 && t + 1 < tiles) {
            if (t >= 1) wait_parity(&empty[(t + 1) % 2], static_cast<uint32_t>((t - 1) / 2 % 2));  // tile t - 1 read
            load(t + 1);
        }
        const uint32_t parity = static_cast<uint32_t>(t / 2 % 2);
        if (W == Wait::Each) wait_parity(&full[t % 2], parity);
        if (W == Wait::OneThenSyncthreads || W == Wait::SyncthreadsOnly) {
            if (W == Wait::OneThenSyncthreads && threadIdx.x == 0) wait_parity(&full[t % 2], parity);
            __syncthreads();
        }
        if (W == Wait::LaneThenSyncwarp) {
            if (threadIdx.x % 32 == 0) wait_parity(&full[t % 2], parity);
            __syncwarp();
        }
        for (int64_t i = threadIdx.x; i < kTile; i += blockDim.x) {
            out[t * kTile + i] = 2.0f * buf[t % 2][i] + 1.0f;  // bulk read
        }
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_at(&empty[t % 2])) : "memory");
    }
}

// An mbarrier initialised afresh for every tile, the tiles gone over `rounds` times (1100 inits with
// the test's 5 tiles and 220 rounds): the CPU execution keeps a record of which thread saw which phase
// of each barrier, and past 1024 barriers in one block it stops adding to it.
__global__ void bulk_reinit_per_tile(const float* in, float* out, int64_t tiles, int rounds) {
    __shared__ alignas(16) float buf[kTile];
    __shared__ alignas(8) uint64_t full;
    for (int r = 0; r < rounds; ++r) {
        for (int64_t t = 0; t < tiles; ++t) {
            if (threadIdx.x == 0) {
                asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_at(&full)), "r"(1));
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_at(&full)), "r"(static_cast<int>(kTile * 4))
                             : "memory");
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n"
                             ::"r"(smem_at(&buf[0])), "l"(in + t * kTile), "r"(static_cast<int>(kTile * 4)), "r"(smem_at(&full)) : "memory");
            }
            __syncthreads();  // the init before any thread's wait
            wait_parity(&full, 0);
            for (int64_t i = threadIdx.x; i < kTile; i += blockDim.x) out[t * kTile + i] = 2.0f * buf[i] + 1.0f;
            __syncthreads();  // every read done before the next tile's copy
        }
    }
}

// ---- stores through the bulk-copy engine (shared to global, completed through bulk groups) --------------

// Each tile computed into shared memory, handed to the async proxy, and stored by thread 0 with one
// cp.async.bulk, which has read the buffer (wait_group.read) before the next tile overwrites it.
__global__ void bulk_stores(const float* in, float* out, int64_t tiles) {
    __shared__ alignas(16) float buf[kTile];
    for (int64_t t = 0; t < tiles; ++t) {
        for (int64_t i = threadIdx.x; i < kTile; i += blockDim.x) buf[i] = 2.0f * in[t * kTile + i] + 1.0f;
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        if (threadIdx.x == 0) {
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"  // bulk store
                         ::"l"(out + t * kTile), "r"(smem_at(buf)), "r"(static_cast<int>(kTile * 4)) : "memory");
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
            asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}

// tensor_copies the other way: four boxes of 32 columns x 5 rows written into shared memory through
// the 128-byte swizzle, then stored by thread 0 into `out` as a [5][128] tensor.
__global__ void tensor_stores(const __grid_constant__ CUtensorMap map, const float* in) {
    __shared__ alignas(1024) float buf[4][256];
    for (int j = 0; j < 4; ++j) {
        for (int r = 0; r < 5; ++r) {
            const int byte = r * 128 + static_cast<int>(threadIdx.x) * 4;
            const int swizzled = byte ^ (((byte >> 7) & 7) << 4);
            buf[j][swizzled / 4] = 2.0f * in[r * 128 + 32 * j + threadIdx.x] + 1.0f;
        }
    }
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int j = 0; j < 4; ++j) {
            asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n"  // tensor store
                         ::"l"(&map), "r"(32 * j), "r"(0), "r"(smem_at(&buf[j][0])) : "memory");
        }
        asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
    }
}

// The .shared address of a generic pointer and back in PTX (`cvta.to.shared`, `cvta.shared`), as kernels
// written for NVRTC spell __cvta_generic_to_shared: a store through the round trip lands in buf.
__global__ void cvta_round_trip(const float* in, float* out) {
    __shared__ float buf[32];
    unsigned long long at, back;
    asm("cvta.to.shared.u64 %0, %1;" : "=l"(at) : "l"(&buf[threadIdx.x]));
    asm("cvta.shared.u64 %0, %1;" : "=l"(back) : "l"(at));
    *reinterpret_cast<float*>(back) = 2.0f * in[threadIdx.x] + 1.0f;
    __syncthreads();
    out[threadIdx.x] = buf[threadIdx.x];
}

static CUtensorMap rows_of_128(const float* in) {
    CUtensorMap map;
    const cuuint64_t dims[2] = {128, 5};
    const cuuint64_t strides[1] = {128 * sizeof(float)};
    const cuuint32_t box[2] = {32, 5}, unit[2] = {1, 1};
    if (cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float*>(in), dims, strides, box, unit,
                               CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
        std::printf("cuTensorMapEncodeTiled refused the map\n");
    }
    return map;
}

int main(int argc, char** argv) {
    const std::string c = argc > 1 ? argv[1] : "";
    const int64_t tiles = 5;
    Vec<float> in((tiles + 1) * kTile), out(tiles * kTile, -7.0f);  // a tile to spare: bulk_past_buffer reads 2
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
    int64_t n = tiles * kTile;
    try {
        if (c == "ptx_double_buffer") ptx_double_buffer<<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "ptx_zero_fill") ptx_zero_fill<<<1, 2>>>(in.data(), out.data()), n = 8;
        else if (c == "primitives") primitives<<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "thread_pipeline") thread_pipeline<<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "block_barrier") block_barrier<<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "read_before_wait") read_before_wait<<<1, 32>>>(in.data(), out.data()), n = kTile;
        else if (c == "wait_group_too_lax") wait_group_too_lax<<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "landed_without_barrier") landed_without_barrier<<<1, 32>>>(in.data(), out.data()), n = 32;
        else if (c == "misaligned_copy") misaligned_copy<<<1, 32>>>(in.data(), out.data()), n = 32;
        else if (c == "tensor_copies") tensor_copies<true><<<1, 32>>>(rows_of_128(in.data()), out.data());
        else if (c == "tensor_read_before_wait") tensor_copies<false><<<1, 32>>>(rows_of_128(in.data()), out.data());
        else if (c == "bulk_copies") bulk_tiles<Wait::Each, kTile * 4><<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "bulk_one_waits_then_syncthreads")
            bulk_tiles<Wait::OneThenSyncthreads, kTile * 4><<<1, 64>>>(in.data(), out.data(), tiles);
        else if (c == "bulk_lanes_wait_then_syncwarp")
            bulk_tiles<Wait::LaneThenSyncwarp, kTile * 4><<<1, 64>>>(in.data(), out.data(), tiles);
        else if (c == "bulk_read_before_wait") bulk_tiles<Wait::None, kTile * 4><<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "bulk_syncthreads_without_wait")
            bulk_tiles<Wait::SyncthreadsOnly, kTile * 4><<<1, 64>>>(in.data(), out.data(), tiles);
        else if (c == "bulk_reinit_per_tile") bulk_reinit_per_tile<<<1, 32>>>(in.data(), out.data(), tiles, 220);
        else if (c == "bulk_stores") bulk_stores<<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "tensor_stores") tensor_stores<<<1, 32>>>(rows_of_128(out.data()), in.data());
        else if (c == "cvta_round_trip") cvta_round_trip<<<1, 32>>>(in.data(), out.data()), n = 32;
        else if (c == "bulk_past_buffer") bulk_tiles<Wait::Each, kTile * 8><<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "bulk_size_not_16") bulk_tiles<Wait::Each, kTile * 4 - 4><<<1, 32>>>(in.data(), out.data(), tiles);
        else if (c == "barrier_missing_arrival") barrier_missing_arrival<<<1, 32>>>(in.data(), out.data()), n = 32;
        else {
            std::printf("unknown case %s\n", c.c_str());
            return 2;
        }
        if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess) throw std::runtime_error(cudaGetErrorString(e));
        for (int64_t i = 0; i < n; ++i) std::printf("%.9g ", static_cast<double>(out[i]));
        std::printf("\n");
    } catch (const std::exception& e) {
        std::printf("FAULT: %s\n", e.what());
    }
    return 0;
}
