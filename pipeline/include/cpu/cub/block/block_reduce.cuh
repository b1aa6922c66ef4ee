// cub::BlockReduce for brrr's CPU execution (<cub/block/block_reduce.cuh>).
//
// Each thread writes its input to the TempStorage (a __shared__ variable of the kernel's, so the
// memory checks see these accesses), the block meets at a barrier (the kernel's line: a thread
// that skips the call is a divergent barrier), and thread 0 folds the partials in the order of
// CUB's default algorithm, BLOCK_REDUCE_WARP_REDUCTIONS: within each warp of 32 (or of the whole
// block, if smaller) a shuffle tree whose step k combines lane i with lane i + 2^k (k = 0, 1, ...;
// the lower lane's value first), then warp 0's aggregate with warp 1's, warp 2's, ... in turn.
// For floats that is CUB's own order, so sums match a GPU's bit for bit where the algorithm is
// WARP_REDUCTIONS; the RAKING algorithms are folded in the same order (a GPU's may differ in the
// last bits). No barrier follows, as in CUB: reusing the TempStorage without a __syncthreads races
// (thread 0 still reads what the next call overwrites), and the checked build reports it.
//
// The aggregate is defined in thread 0 only (CUB's contract). Every other thread gets a poison
// (NaN, or 0xA5 bytes for integers: brrr_cub_detail.h), so a kernel that uses it elsewhere fails.
// Reduce without num_valid needs a block of exactly the declared threads (a fault otherwise: CUB
// would read the partials of threads that do not exist); with num_valid, a smaller block is fine
// (vLLM's BlockReduce<float, 1024> in blocks of blockDim.x threads), as long as num_valid <= its size.
#pragma once
#include "../brrr_cub_detail.h"
#include "../thread/thread_operators.cuh"

namespace cub {

enum BlockReduceAlgorithm { BLOCK_REDUCE_RAKING_COMMUTATIVE_ONLY, BLOCK_REDUCE_RAKING, BLOCK_REDUCE_WARP_REDUCTIONS };

template <typename T, int BLOCK_DIM_X, BlockReduceAlgorithm ALGORITHM = BLOCK_REDUCE_WARP_REDUCTIONS,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockReduce {
    static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    static constexpr int WARP = BLOCK_THREADS < 32 ? BLOCK_THREADS : 32;  // CUB's LOGICAL_WARP_SIZE
    static_assert(BLOCK_THREADS > 0, "cub::BlockReduce needs at least one thread");

   public:
    struct TempStorage {
        T partial[BLOCK_THREADS];
    };

    BlockReduce(BRRR_CPU_HERE)
        : storage_(brrr_cpu::cub::private_storage<TempStorage>("cub::BlockReduce private storage", brrr_file, brrr_line)) {}
    explicit BlockReduce(TempStorage& storage) : storage_(storage) {}

    template <typename Op>
    BRRR_CUB_INLINE T Reduce(T input, Op op, BRRR_CPU_HERE) {
        return reduce(input, op, BLOCK_THREADS, true, brrr_file, brrr_line);
    }
    template <typename Op>
    BRRR_CUB_INLINE T Reduce(T input, Op op, int num_valid, BRRR_CPU_HERE) {
        return reduce(input, op, num_valid, num_valid >= BLOCK_THREADS, brrr_file, brrr_line);
    }
    // Each thread's items folded in order first, as CUB's ThreadReduce does.
    template <int ITEMS, typename Op>
    BRRR_CUB_INLINE T Reduce(T (&inputs)[ITEMS], Op op, BRRR_CPU_HERE) {
        T partial = inputs[0];
        for (int i = 1; i < ITEMS; ++i) partial = op(partial, inputs[i]);
        return reduce(partial, op, BLOCK_THREADS, true, brrr_file, brrr_line);
    }
    BRRR_CUB_INLINE T Sum(T input, BRRR_CPU_HERE) { return Reduce(input, cub::Sum(), brrr_file, brrr_line); }
    BRRR_CUB_INLINE T Sum(T input, int num_valid, BRRR_CPU_HERE) {
        return Reduce(input, cub::Sum(), num_valid, brrr_file, brrr_line);
    }
    template <int ITEMS>
    BRRR_CUB_INLINE T Sum(T (&inputs)[ITEMS], BRRR_CPU_HERE) { return Reduce(inputs, cub::Sum(), brrr_file, brrr_line); }

   private:
    TempStorage& storage_;

    template <typename Op>
    BRRR_CUB_INLINE T reduce(T input, Op& op, int num_valid, bool full, const char* file, int line) {
        const int tid = brrr_cpu::cub::linear_tid<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockReduce", file, line);
        const int threads = static_cast<int>(brrr_cpu::cub::block_threads());
        if (full && threads != BLOCK_THREADS) {
            brrr_cpu::fault("cub", "cub::BlockReduce declared for " + std::to_string(BLOCK_THREADS) +
                                       " threads reduces over all of them (no num_valid, or num_valid >= " + std::to_string(BLOCK_THREADS) +
                                       ") in a block of " + std::to_string(threads) +
                                       ": CUB reads a partial for every declared thread (pass num_valid = the block's size)",
                            file, line);
        }
        storage_.partial[tid] = input;
        __syncthreads(file, line);
        if (tid != 0) return brrr_cpu::cub::poison<T>();
        if (!full && num_valid > threads) {
            brrr_cpu::fault("cub", "cub::BlockReduce with num_valid " + std::to_string(num_valid) + " in a block of " +
                                       std::to_string(threads) + " threads: CUB reads partials of threads that do not exist",
                            file, line);
        }
        const int valid = full ? BLOCK_THREADS : num_valid;
        T total = warp_fold(0, valid, op);
        for (int w = 1; w * WARP < valid; ++w) total = op(total, warp_fold(w, valid, op));
        return total;
    }

    // Lane 0's result of CUB's shuffle tree over warp w's partials, lanes at or past `valid` left out.
    template <typename Op>
    BRRR_CUB_INLINE T warp_fold(int w, int valid, Op& op) {
        T v[WARP];
        const int base = w * WARP;
        const int lanes = valid - base < WARP ? valid - base : WARP;
        for (int i = 0; i < lanes; ++i) v[i] = storage_.partial[base + i];
        for (int offset = 1; offset < WARP; offset *= 2) {
            for (int i = 0; i + offset < lanes; i += 2 * offset) v[i] = op(v[i], v[i + offset]);
        }
        return lanes > 0 ? v[0] : storage_.partial[base];
    }
};

}  // namespace cub
