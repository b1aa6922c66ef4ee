// cub::BlockScan for brrr's CPU execution (<cub/block/block_scan.cuh>).
//
// Each thread writes its input (or the fold of its items, in order) to the TempStorage, the block
// meets at a barrier (the kernel's line), and each thread folds the inputs of the threads before
// it in thread order: (((init op x0) op x1) ... ). Every thread gets its result and, where asked,
// the block's aggregate (all inputs, without the initial value). For integers and min/max that is
// exactly a GPU's result; for floating-point sums CUB's raking order may differ in the last bits.
// No barrier follows, as in CUB: reusing the TempStorage without a __syncthreads races (a later
// thread still reads what the next call overwrites), and the checked build reports it.
//
// An exclusive scan without an initial value leaves thread 0's output undefined (CUB's contract):
// it gets a poison (NaN, or 0xA5 bytes for integers: brrr_cub_detail.h). Not provided: the
// prefix-callback overloads and the ALGORITHM's effect on the order.
#pragma once
#include "../brrr_cub_detail.h"
#include "../thread/thread_operators.cuh"

namespace cub {

enum BlockScanAlgorithm { BLOCK_SCAN_RAKING, BLOCK_SCAN_RAKING_MEMOIZE, BLOCK_SCAN_WARP_SCANS };

template <typename T, int BLOCK_DIM_X, BlockScanAlgorithm ALGORITHM = BLOCK_SCAN_RAKING, int BLOCK_DIM_Y = 1,
          int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockScan {
    static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    static_assert(BLOCK_THREADS > 0, "cub::BlockScan needs at least one thread");

    // The exclusive prefix of the calling thread (has: false for thread 0 without an initial value).
    struct Prefix {
        T value;
        bool has;
    };

   public:
    struct TempStorage {
        T partial[BLOCK_THREADS];
    };

    BlockScan(BRRR_CPU_HERE)
        : storage_(brrr_cpu::cub::private_storage<TempStorage>("cub::BlockScan private storage", brrr_file, brrr_line)) {}
    explicit BlockScan(TempStorage& storage) : storage_(storage) {}

    // ---- one item per thread
    BRRR_CUB_INLINE void InclusiveSum(T input, T& output, BRRR_CPU_HERE) {
        InclusiveScan(input, output, cub::Sum(), brrr_file, brrr_line);
    }
    BRRR_CUB_INLINE void InclusiveSum(T input, T& output, T& block_aggregate, BRRR_CPU_HERE) {
        InclusiveScan(input, output, cub::Sum(), block_aggregate, brrr_file, brrr_line);
    }
    BRRR_CUB_INLINE void ExclusiveSum(T input, T& output, BRRR_CPU_HERE) {
        ExclusiveScan(input, output, T{}, cub::Sum(), brrr_file, brrr_line);
    }
    BRRR_CUB_INLINE void ExclusiveSum(T input, T& output, T& block_aggregate, BRRR_CPU_HERE) {
        ExclusiveScan(input, output, T{}, cub::Sum(), block_aggregate, brrr_file, brrr_line);
    }
    template <typename Op>
    BRRR_CUB_INLINE void InclusiveScan(T input, T& output, Op op, BRRR_CPU_HERE) {
        const Prefix p = prefix(input, op, nullptr, nullptr, brrr_file, brrr_line);
        output = p.has ? static_cast<T>(op(p.value, input)) : input;
    }
    template <typename Op>
    BRRR_CUB_INLINE void InclusiveScan(T input, T& output, Op op, T& block_aggregate, BRRR_CPU_HERE) {
        const Prefix p = prefix(input, op, nullptr, &block_aggregate, brrr_file, brrr_line);
        output = p.has ? static_cast<T>(op(p.value, input)) : input;
    }
    template <typename Op>
    BRRR_CUB_INLINE void ExclusiveScan(T input, T& output, T initial_value, Op op, BRRR_CPU_HERE) {
        output = prefix(input, op, &initial_value, nullptr, brrr_file, brrr_line).value;
    }
    template <typename Op>
    BRRR_CUB_INLINE void ExclusiveScan(T input, T& output, T initial_value, Op op, T& block_aggregate, BRRR_CPU_HERE) {
        output = prefix(input, op, &initial_value, &block_aggregate, brrr_file, brrr_line).value;
    }
    template <typename Op>
    BRRR_CUB_INLINE void ExclusiveScan(T input, T& output, Op op, BRRR_CPU_HERE) {
        const Prefix p = prefix(input, op, nullptr, nullptr, brrr_file, brrr_line);
        output = p.has ? p.value : brrr_cpu::cub::poison<T>();
    }
    template <typename Op>
    BRRR_CUB_INLINE void ExclusiveScan(T input, T& output, Op op, T& block_aggregate, BRRR_CPU_HERE) {
        const Prefix p = prefix(input, op, nullptr, &block_aggregate, brrr_file, brrr_line);
        output = p.has ? p.value : brrr_cpu::cub::poison<T>();
    }

    // ---- ITEMS per thread, in a blocked arrangement (input and output may be the same array)
    template <int ITEMS>
    BRRR_CUB_INLINE void InclusiveSum(T (&input)[ITEMS], T (&output)[ITEMS], BRRR_CPU_HERE) {
        InclusiveScan(input, output, cub::Sum(), brrr_file, brrr_line);
    }
    template <int ITEMS>
    BRRR_CUB_INLINE void ExclusiveSum(T (&input)[ITEMS], T (&output)[ITEMS], BRRR_CPU_HERE) {
        ExclusiveScan(input, output, T{}, cub::Sum(), brrr_file, brrr_line);
    }
    template <int ITEMS, typename Op>
    BRRR_CUB_INLINE void InclusiveScan(T (&input)[ITEMS], T (&output)[ITEMS], Op op, BRRR_CPU_HERE) {
        Prefix p = prefix(fold(input, op), op, nullptr, nullptr, brrr_file, brrr_line);
        for (int i = 0; i < ITEMS; ++i) {
            p.value = p.has ? static_cast<T>(op(p.value, input[i])) : input[i];
            p.has = true;
            output[i] = p.value;
        }
    }
    template <int ITEMS, typename Op>
    BRRR_CUB_INLINE void ExclusiveScan(T (&input)[ITEMS], T (&output)[ITEMS], T initial_value, Op op, BRRR_CPU_HERE) {
        T running = prefix(fold(input, op), op, &initial_value, nullptr, brrr_file, brrr_line).value;
        for (int i = 0; i < ITEMS; ++i) {
            const T x = input[i];
            output[i] = running;
            running = op(running, x);
        }
    }

   private:
    TempStorage& storage_;

    template <int ITEMS, typename Op>
    static T fold(const T (&items)[ITEMS], Op& op) {
        T partial = items[0];
        for (int i = 1; i < ITEMS; ++i) partial = op(partial, items[i]);
        return partial;
    }

    template <typename Op>
    BRRR_CUB_INLINE Prefix prefix(T input, Op& op, const T* initial, T* aggregate, const char* file, int line) {
        const int tid = brrr_cpu::cub::linear_tid<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockScan", file, line);
        const int threads = static_cast<int>(brrr_cpu::cub::block_threads());
        if (aggregate != nullptr && threads != BLOCK_THREADS) {
            brrr_cpu::fault("cub", "cub::BlockScan declared for " + std::to_string(BLOCK_THREADS) +
                                       " threads gives a block aggregate in a block of " + std::to_string(threads) +
                                       ": CUB folds an input for every declared thread",
                            file, line);
        }
        storage_.partial[tid] = input;
        __syncthreads(file, line);
        Prefix p{initial != nullptr ? *initial : input, initial != nullptr};
        for (int j = 0; j < tid; ++j) {
            p.value = p.has ? static_cast<T>(op(p.value, storage_.partial[j])) : storage_.partial[j];
            p.has = true;
        }
        if (aggregate != nullptr) {
            T total = storage_.partial[0];
            for (int j = 1; j < BLOCK_THREADS; ++j) total = op(total, storage_.partial[j]);
            *aggregate = total;
        }
        return p;
    }
};

}  // namespace cub
