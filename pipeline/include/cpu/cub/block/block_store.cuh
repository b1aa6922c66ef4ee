// cub::BlockStore and the direct stores (<cub/block/block_store.cuh>) for brrr's CPU execution.
//
// As CUB's: every algorithm writes the blocked arrangement (thread t's items to t*ITEMS_PER_THREAD
// ...) except STRIPED, which writes item i of thread t to i*BLOCK_THREADS + t. The TRANSPOSE
// algorithms exchange the items to striped (WARP_*: warp-striped) through the TempStorage with
// CUB's barriers (block_load.cuh's brrr_cpu::cub::Exchange), so, as in CUB, they leave the
// caller's items array in that arrangement afterwards. A guarded store writes only the items below
// valid_items; the transposes take thread 0's valid_items, passed through the TempStorage behind a
// barrier, as CUB does.
#pragma once
#include "block_load.cuh"

namespace cub {

enum BlockStoreAlgorithm {
    BLOCK_STORE_DIRECT,
    BLOCK_STORE_STRIPED,
    BLOCK_STORE_VECTORIZE,
    BLOCK_STORE_TRANSPOSE,
    BLOCK_STORE_WARP_TRANSPOSE,
    BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED,
};

// ---- blocked arrangement
template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
BRRR_CUB_INLINE void StoreDirectBlocked(int linear_tid, OutputIteratorT block_dst, T (&items)[ITEMS_PER_THREAD]) {
    OutputIteratorT thread_dst = block_dst + linear_tid * ITEMS_PER_THREAD;
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) thread_dst[i] = items[i];
}
template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
BRRR_CUB_INLINE void StoreDirectBlocked(int linear_tid, OutputIteratorT block_dst, T (&items)[ITEMS_PER_THREAD],
                                        int valid_items) {
    OutputIteratorT thread_dst = block_dst + linear_tid * ITEMS_PER_THREAD;
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (linear_tid * ITEMS_PER_THREAD + i < valid_items) thread_dst[i] = items[i];
    }
}
// CUB falls back to StoreDirectBlocked where it cannot vectorize; the values are the same.
template <typename T, int ITEMS_PER_THREAD>
BRRR_CUB_INLINE void StoreDirectBlockedVectorized(int linear_tid, T* block_ptr, T (&items)[ITEMS_PER_THREAD]) {
    StoreDirectBlocked(linear_tid, block_ptr, items);
}

// ---- striped arrangement
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
BRRR_CUB_INLINE void StoreDirectStriped(int linear_tid, OutputIteratorT block_dst, T (&items)[ITEMS_PER_THREAD]) {
    OutputIteratorT thread_dst = block_dst + linear_tid;
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) thread_dst[i * BLOCK_THREADS] = items[i];
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
BRRR_CUB_INLINE void StoreDirectStriped(int linear_tid, OutputIteratorT block_dst, T (&items)[ITEMS_PER_THREAD],
                                        int valid_items) {
    OutputIteratorT thread_dst = block_dst + linear_tid;
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (i * BLOCK_THREADS + linear_tid < valid_items) thread_dst[i * BLOCK_THREADS] = items[i];
    }
}

// ---- warp-striped arrangement
template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
BRRR_CUB_INLINE void StoreDirectWarpStriped(int linear_tid, OutputIteratorT block_dst, T (&items)[ITEMS_PER_THREAD]) {
    const int base = linear_tid / 32 * 32 * ITEMS_PER_THREAD + linear_tid % 32;
    OutputIteratorT thread_dst = block_dst + base;
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) thread_dst[i * 32] = items[i];
}
template <typename T, int ITEMS_PER_THREAD, typename OutputIteratorT>
BRRR_CUB_INLINE void StoreDirectWarpStriped(int linear_tid, OutputIteratorT block_dst, T (&items)[ITEMS_PER_THREAD],
                                            int valid_items) {
    const int base = linear_tid / 32 * 32 * ITEMS_PER_THREAD + linear_tid % 32;
    OutputIteratorT thread_dst = block_dst + base;
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (base + i * 32 < valid_items) thread_dst[i * 32] = items[i];
    }
}

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockStoreAlgorithm ALGORITHM = BLOCK_STORE_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockStore {
    static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    static constexpr bool WARP_TRANSPOSE =
        ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE || ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED;
    static constexpr bool TRANSPOSE = ALGORITHM == BLOCK_STORE_TRANSPOSE || WARP_TRANSPOSE;
    static_assert(BLOCK_THREADS > 0 && ITEMS_PER_THREAD > 0, "cub::BlockStore needs threads and items");
    static_assert(!WARP_TRANSPOSE || BLOCK_THREADS % 32 == 0,
                  "BLOCK_THREADS must be a multiple of the warp size for this BlockStoreAlgorithm");
    using Exchange = brrr_cpu::cub::Exchange<T, BLOCK_THREADS, ITEMS_PER_THREAD,
                                             ALGORITHM == BLOCK_STORE_WARP_TRANSPOSE_TIMESLICED>;
    struct Transposing {
        typename Exchange::Storage exchange;
        int valid_items;  // CUB's guard passed from thread 0
    };

   public:
    // CUB's is an empty type (1 byte) where nothing is exchanged.
    struct TempStorage {
        std::conditional_t<TRANSPOSE, Transposing, unsigned char> s;
    };

    BlockStore(BRRR_CPU_HERE)
        : storage_(TRANSPOSE ? &brrr_cpu::cub::private_storage<TempStorage>("cub::BlockStore private storage",
                                                                            brrr_file, brrr_line)
                             : nullptr) {}
    explicit BlockStore(TempStorage& storage) : storage_(&storage) {}

    template <typename OutputIteratorT>
    BRRR_CUB_INLINE void Store(OutputIteratorT block_dst, T (&items)[ITEMS_PER_THREAD], BRRR_CPU_HERE) {
        const int tid = linear_tid(brrr_file, brrr_line);
        if constexpr (ALGORITHM == BLOCK_STORE_STRIPED) {
            StoreDirectStriped<BLOCK_THREADS>(tid, block_dst, items);
        } else if constexpr (ALGORITHM == BLOCK_STORE_TRANSPOSE) {
            Exchange::blocked_to_striped(storage_->s.exchange, items, tid, brrr_file, brrr_line);
            StoreDirectStriped<BLOCK_THREADS>(tid, block_dst, items);
        } else if constexpr (WARP_TRANSPOSE) {
            Exchange::blocked_to_warp_striped(storage_->s.exchange, items, tid, brrr_file, brrr_line);
            StoreDirectWarpStriped(tid, block_dst, items);
        } else {
            StoreDirectBlocked(tid, block_dst, items);
        }
    }
    template <typename OutputIteratorT>
    BRRR_CUB_INLINE void Store(OutputIteratorT block_dst, T (&items)[ITEMS_PER_THREAD], int valid_items,
                               BRRR_CPU_HERE) {
        const int tid = linear_tid(brrr_file, brrr_line);
        if constexpr (ALGORITHM == BLOCK_STORE_STRIPED) {
            StoreDirectStriped<BLOCK_THREADS>(tid, block_dst, items, valid_items);
        } else if constexpr (TRANSPOSE) {
            if constexpr (WARP_TRANSPOSE) {
                Exchange::blocked_to_warp_striped(storage_->s.exchange, items, tid, brrr_file, brrr_line);
            } else {
                Exchange::blocked_to_striped(storage_->s.exchange, items, tid, brrr_file, brrr_line);
            }
            if (tid == 0) storage_->s.valid_items = valid_items;
            __syncthreads(brrr_file, brrr_line);
            if constexpr (WARP_TRANSPOSE) {
                StoreDirectWarpStriped(tid, block_dst, items, storage_->s.valid_items);
            } else {
                StoreDirectStriped<BLOCK_THREADS>(tid, block_dst, items, storage_->s.valid_items);
            }
        } else {
            StoreDirectBlocked(tid, block_dst, items, valid_items);
        }
    }

   private:
    TempStorage* storage_;

    BRRR_CUB_INLINE static int linear_tid(const char* file, int line) {
        if constexpr (TRANSPOSE) {
            const int tid =
                brrr_cpu::cub::linear_tid<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockStore", file, line);
            Exchange::check_block("cub::BlockStore", file, line);
            return tid;
        } else {
            return brrr_cpu::cub::row_major_tid<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>();
        }
    }
};

}  // namespace cub
