// cub::BlockLoad and the direct loads (<cub/block/block_load.cuh>) for brrr's CPU execution.
//
// As CUB's: DIRECT and VECTORIZE give the blocked arrangement (thread t holds items
// t*ITEMS_PER_THREAD ...; VECTORIZE's wide loads change only speed, so it is DIRECT here), STRIPED
// the striped one (item i of thread t at i*BLOCK_THREADS + t). The TRANSPOSE algorithms read
// striped (WARP_*: warp-striped) and exchange the items to blocked through the TempStorage, with
// CUB's barriers (__syncthreads across the block, __syncwarp within a warp) at the kernel's line:
// the memory checks see the exchange, a TempStorage reused without a barrier races as on a GPU,
// and the TempStorage is as large as CUB's (BLOCK_THREADS * ITEMS_PER_THREAD T's, padded as CUB
// pads them; one warp's worth for *_TIMESLICED), so `sizeof` sizes dynamic shared memory alike.
//
// A guarded load leaves items past block_items_end as they were (or sets them to oob_default).
// In the transposes they are then exchanged like the rest, so a thread may get another thread's
// stale item there, as on a GPU (CUB calls them unassigned). The exchange shared with BlockStore
// lives here (brrr_cpu::cub::Exchange). Not provided: BlockExchange's public class and CUB's
// cache-modified iterators.
#pragma once
#include <type_traits>

#include "../brrr_cub_detail.h"

namespace cub {

enum BlockLoadAlgorithm {
    BLOCK_LOAD_DIRECT,
    BLOCK_LOAD_STRIPED,
    BLOCK_LOAD_VECTORIZE,
    BLOCK_LOAD_TRANSPOSE,
    BLOCK_LOAD_WARP_TRANSPOSE,
    BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED,
};

// ---- blocked arrangement
template <typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
BRRR_CUB_INLINE void LoadDirectBlocked(int linear_tid, InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD]) {
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = block_src[linear_tid * ITEMS_PER_THREAD + i];
}
template <typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
BRRR_CUB_INLINE void LoadDirectBlocked(int linear_tid, InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD],
                                       int block_items_end) {
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        const int at = linear_tid * ITEMS_PER_THREAD + i;
        if (at < block_items_end) items[i] = block_src[at];
    }
}
template <typename T, typename DefaultT, int ITEMS_PER_THREAD, typename InputIteratorT>
BRRR_CUB_INLINE void LoadDirectBlocked(int linear_tid, InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD],
                                       int block_items_end, DefaultT oob_default) {
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = oob_default;
    LoadDirectBlocked(linear_tid, block_src, items, block_items_end);
}
// CUB falls back to LoadDirectBlocked where it cannot vectorize; the values are the same.
template <typename T, int ITEMS_PER_THREAD>
BRRR_CUB_INLINE void LoadDirectBlockedVectorized(int linear_tid, T* block_ptr, T (&items)[ITEMS_PER_THREAD]) {
    LoadDirectBlocked(linear_tid, block_ptr, items);
}

// ---- striped arrangement
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
BRRR_CUB_INLINE void LoadDirectStriped(int linear_tid, InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD]) {
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = block_src[linear_tid + i * BLOCK_THREADS];
}
template <int BLOCK_THREADS, typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
BRRR_CUB_INLINE void LoadDirectStriped(int linear_tid, InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD],
                                       int block_items_end) {
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        const int at = linear_tid + i * BLOCK_THREADS;
        if (at < block_items_end) items[i] = block_src[at];
    }
}
template <int BLOCK_THREADS, typename T, typename DefaultT, int ITEMS_PER_THREAD, typename InputIteratorT>
BRRR_CUB_INLINE void LoadDirectStriped(int linear_tid, InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD],
                                       int block_items_end, DefaultT oob_default) {
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = oob_default;
    LoadDirectStriped<BLOCK_THREADS>(linear_tid, block_src, items, block_items_end);
}

// ---- warp-striped arrangement (warp w's tile of 32*ITEMS_PER_THREAD items, striped over its lanes)
template <typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
BRRR_CUB_INLINE void LoadDirectWarpStriped(int linear_tid, InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD]) {
    const int base = linear_tid / 32 * 32 * ITEMS_PER_THREAD + linear_tid % 32;
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = block_src[base + i * 32];
}
template <typename T, int ITEMS_PER_THREAD, typename InputIteratorT>
BRRR_CUB_INLINE void LoadDirectWarpStriped(int linear_tid, InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD],
                                           int block_items_end) {
    const int base = linear_tid / 32 * 32 * ITEMS_PER_THREAD + linear_tid % 32;
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) {
        if (base + i * 32 < block_items_end) items[i] = block_src[base + i * 32];
    }
}
template <typename T, typename DefaultT, int ITEMS_PER_THREAD, typename InputIteratorT>
BRRR_CUB_INLINE void LoadDirectWarpStriped(int linear_tid, InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD],
                                           int block_items_end, DefaultT oob_default) {
    for (int i = 0; i < ITEMS_PER_THREAD; ++i) items[i] = oob_default;
    LoadDirectWarpStriped(linear_tid, block_src, items, block_items_end);
}

}  // namespace cub

namespace brrr_cpu::cub {

// CUB's RowMajorTid without the check: a direct load in a block larger than declared is no fault
// of CUB's (it has no TempStorage to overrun), the threads past the tile just read past it.
template <int X, int Y, int Z>
inline int row_major_tid() {
    return static_cast<int>((Z == 1 ? 0u : threadIdx.z * X * Y) + (Y == 1 ? 0u : threadIdx.y * X) + threadIdx.x);
}

// CUB's BlockExchange, the transposes BlockLoad and BlockStore use, in CUB's order of accesses
// and barriers. A transpose reads what every declared thread wrote: in a smaller block that is
// memory no thread wrote, so it is a fault here.
template <typename T, int BLOCK_THREADS, int ITEMS, bool TIME_SLICED>
struct Exchange {
    static constexpr int WARP_THREADS = BLOCK_THREADS < 32 ? BLOCK_THREADS : 32;
    static constexpr int WARPS = (BLOCK_THREADS + 31) / 32;
    static constexpr int SLICED_ITEMS = (TIME_SLICED ? WARP_THREADS : BLOCK_THREADS) * ITEMS;
    // CUB pads a slot every 32 items (its bank count) where ITEMS is a power of 2 above 4.
    static constexpr bool PAD = ITEMS > 4 && (ITEMS & (ITEMS - 1)) == 0;
    struct alignas(16) Storage {
        T buff[SLICED_ITEMS + (PAD ? SLICED_ITEMS >> 5 : 0)];
    };

    static int at(int offset) { return PAD ? offset + (offset >> 5) : offset; }

    static void check_block(const char* what, const char* file, int line) {
        const unsigned threads = block_threads();
        if (threads != static_cast<unsigned>(BLOCK_THREADS)) {
            fault("cub", std::string(what) + " declared for " + std::to_string(BLOCK_THREADS) +
                             " threads transposes through its TempStorage in a block of " + std::to_string(threads) +
                             ": CUB reads the items of every declared thread (declare it for the block's size)",
                  file, line);
        }
    }

    BRRR_CUB_INLINE static void striped_to_blocked(Storage& s, T (&items)[ITEMS], int tid, const char* file, int line) {
        for (int i = 0; i < ITEMS; ++i) s.buff[at(i * BLOCK_THREADS + tid)] = items[i];
        __syncthreads(file, line);
        for (int i = 0; i < ITEMS; ++i) items[i] = s.buff[at(tid * ITEMS + i)];
    }

    BRRR_CUB_INLINE static void blocked_to_striped(Storage& s, T (&items)[ITEMS], int tid, const char* file, int line) {
        for (int i = 0; i < ITEMS; ++i) s.buff[at(tid * ITEMS + i)] = items[i];
        __syncthreads(file, line);
        for (int i = 0; i < ITEMS; ++i) items[i] = s.buff[at(i * BLOCK_THREADS + tid)];
    }

    // TIME_SLICED: the warps take the one warp's worth of storage in turn, a barrier before each.
    BRRR_CUB_INLINE static void warp_striped_to_blocked(Storage& s, T (&items)[ITEMS], int tid, const char* file,
                                                        int line) {
        const int lane = tid % 32, warp = tid / 32;
        if constexpr (TIME_SLICED) {
            for (int slice = 0; slice < WARPS; ++slice) {
                __syncthreads(file, line);
                if (warp == slice) warp_transpose(s, items, 0, lane, true, file, line);
            }
        } else {
            warp_transpose(s, items, warp * WARP_THREADS * ITEMS, lane, true, file, line);
        }
    }

    // As CUB: warp 0 goes first without a barrier before it.
    BRRR_CUB_INLINE static void blocked_to_warp_striped(Storage& s, T (&items)[ITEMS], int tid, const char* file,
                                                        int line) {
        const int lane = tid % 32, warp = tid / 32;
        if constexpr (TIME_SLICED) {
            if (warp == 0) warp_transpose(s, items, 0, lane, false, file, line);
            for (int slice = 1; slice < WARPS; ++slice) {
                __syncthreads(file, line);
                if (warp == slice) warp_transpose(s, items, 0, lane, false, file, line);
            }
        } else {
            warp_transpose(s, items, warp * WARP_THREADS * ITEMS, lane, false, file, line);
        }
    }

    BRRR_CUB_INLINE static void warp_transpose(Storage& s, T (&items)[ITEMS], int base, int lane, bool to_blocked,
                                               const char* file, int line) {
        const auto striped = [&](int i) { return at(base + i * WARP_THREADS + lane); };
        const auto blocked = [&](int i) { return at(base + lane * ITEMS + i); };
        for (int i = 0; i < ITEMS; ++i) s.buff[to_blocked ? striped(i) : blocked(i)] = items[i];
        __syncwarp(0xffffffffu, file, line);
        for (int i = 0; i < ITEMS; ++i) items[i] = s.buff[to_blocked ? blocked(i) : striped(i)];
    }
};

}  // namespace brrr_cpu::cub

namespace cub {

template <typename T, int BLOCK_DIM_X, int ITEMS_PER_THREAD, BlockLoadAlgorithm ALGORITHM = BLOCK_LOAD_DIRECT,
          int BLOCK_DIM_Y = 1, int BLOCK_DIM_Z = 1, int LEGACY_PTX_ARCH = 0>
class BlockLoad {
    static constexpr int BLOCK_THREADS = BLOCK_DIM_X * BLOCK_DIM_Y * BLOCK_DIM_Z;
    static constexpr bool WARP_TRANSPOSE =
        ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE || ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED;
    static constexpr bool TRANSPOSE = ALGORITHM == BLOCK_LOAD_TRANSPOSE || WARP_TRANSPOSE;
    static_assert(BLOCK_THREADS > 0 && ITEMS_PER_THREAD > 0, "cub::BlockLoad needs threads and items");
    static_assert(!WARP_TRANSPOSE || BLOCK_THREADS % 32 == 0,
                  "BLOCK_THREADS must be a multiple of the warp size for this BlockLoadAlgorithm");
    using Exchange = brrr_cpu::cub::Exchange<T, BLOCK_THREADS, ITEMS_PER_THREAD,
                                             ALGORITHM == BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED>;

   public:
    // CUB's is an empty type (1 byte) where nothing is exchanged.
    struct TempStorage {
        std::conditional_t<TRANSPOSE, typename Exchange::Storage, unsigned char> exchange;
    };

    BlockLoad(BRRR_CPU_HERE)
        : storage_(TRANSPOSE ? &brrr_cpu::cub::private_storage<TempStorage>("cub::BlockLoad private storage", brrr_file,
                                                                            brrr_line)
                             : nullptr) {}
    explicit BlockLoad(TempStorage& storage) : storage_(&storage) {}

    template <typename InputIteratorT>
    BRRR_CUB_INLINE void Load(InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD], BRRR_CPU_HERE) {
        const int tid = linear_tid(brrr_file, brrr_line);
        if constexpr (ALGORITHM == BLOCK_LOAD_STRIPED || ALGORITHM == BLOCK_LOAD_TRANSPOSE) {
            LoadDirectStriped<BLOCK_THREADS>(tid, block_src, items);
        } else if constexpr (WARP_TRANSPOSE) {
            LoadDirectWarpStriped(tid, block_src, items);
        } else {
            LoadDirectBlocked(tid, block_src, items);
        }
        exchange(items, tid, brrr_file, brrr_line);
    }
    template <typename InputIteratorT>
    BRRR_CUB_INLINE void Load(InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD], int block_items_end,
                              BRRR_CPU_HERE) {
        const int tid = linear_tid(brrr_file, brrr_line);
        if constexpr (ALGORITHM == BLOCK_LOAD_STRIPED || ALGORITHM == BLOCK_LOAD_TRANSPOSE) {
            LoadDirectStriped<BLOCK_THREADS>(tid, block_src, items, block_items_end);
        } else if constexpr (WARP_TRANSPOSE) {
            LoadDirectWarpStriped(tid, block_src, items, block_items_end);
        } else {
            LoadDirectBlocked(tid, block_src, items, block_items_end);
        }
        exchange(items, tid, brrr_file, brrr_line);
    }
    template <typename InputIteratorT, typename DefaultT>
    BRRR_CUB_INLINE void Load(InputIteratorT block_src, T (&items)[ITEMS_PER_THREAD], int block_items_end,
                              DefaultT oob_default, BRRR_CPU_HERE) {
        const int tid = linear_tid(brrr_file, brrr_line);
        if constexpr (ALGORITHM == BLOCK_LOAD_STRIPED || ALGORITHM == BLOCK_LOAD_TRANSPOSE) {
            LoadDirectStriped<BLOCK_THREADS>(tid, block_src, items, block_items_end, oob_default);
        } else if constexpr (WARP_TRANSPOSE) {
            LoadDirectWarpStriped(tid, block_src, items, block_items_end, oob_default);
        } else {
            LoadDirectBlocked(tid, block_src, items, block_items_end, oob_default);
        }
        exchange(items, tid, brrr_file, brrr_line);
    }

   private:
    TempStorage* storage_;

    BRRR_CUB_INLINE static int linear_tid(const char* file, int line) {
        if constexpr (TRANSPOSE) {
            const int tid =
                brrr_cpu::cub::linear_tid<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>("cub::BlockLoad", file, line);
            Exchange::check_block("cub::BlockLoad", file, line);
            return tid;
        } else {
            return brrr_cpu::cub::row_major_tid<BLOCK_DIM_X, BLOCK_DIM_Y, BLOCK_DIM_Z>();
        }
    }

    BRRR_CUB_INLINE void exchange(T (&items)[ITEMS_PER_THREAD], int tid, const char* file, int line) {
        if constexpr (ALGORITHM == BLOCK_LOAD_TRANSPOSE) {
            Exchange::striped_to_blocked(storage_->exchange, items, tid, file, line);
        } else if constexpr (WARP_TRANSPOSE) {
            Exchange::warp_striped_to_blocked(storage_->exchange, items, tid, file, line);
        }
    }
};

}  // namespace cub
