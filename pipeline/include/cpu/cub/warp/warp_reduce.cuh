// cub::WarpReduce for brrr's CPU execution (<cub/warp/warp_reduce.cuh>).
//
// As CUB's shuffle variant: the lanes of a logical warp (LOGICAL_WARP_THREADS, a power of 2 up
// to 32, aligned within the hardware warp) exchange values with the runtime's shuffles, step k
// combining lane i with lane i + 2^k (k = 0, 1, ...; the lower lane's value first) where that lane
// is below valid_items. So the order is CUB's, every lane of the logical warp must make the call
// (the runtime's warp checks name a lane that did not), and the TempStorage is not touched.
//
// The aggregate is defined in lane 0 of each logical warp only (CUB's contract); every other lane
// gets a poison (NaN, or 0xA5 bytes for integers: brrr_cub_detail.h), so a kernel that uses it
// elsewhere fails visibly.
#pragma once
#include "../brrr_cub_detail.h"
#include "../thread/thread_operators.cuh"

namespace cub {

template <typename T, int LOGICAL_WARP_THREADS = 32, int LEGACY_PTX_ARCH = 0>
class WarpReduce {
    static_assert(LOGICAL_WARP_THREADS >= 1 && LOGICAL_WARP_THREADS <= 32 &&
                      (LOGICAL_WARP_THREADS & (LOGICAL_WARP_THREADS - 1)) == 0,
                  "brrr's cub::WarpReduce supports logical warps of a power of 2 from 1 to 32 threads");

   public:
    struct TempStorage {
        unsigned char unused;  // the shuffle variant keeps nothing in shared memory
    };

    explicit WarpReduce(TempStorage&) {}

    template <typename Op>
    BRRR_CUB_INLINE T Reduce(T input, Op op, BRRR_CPU_HERE) {
        return reduce(input, op, LOGICAL_WARP_THREADS, brrr_file, brrr_line);
    }
    template <typename Op>
    BRRR_CUB_INLINE T Reduce(T input, Op op, int valid_items, BRRR_CPU_HERE) {
        return reduce(input, op, valid_items, brrr_file, brrr_line);
    }
    BRRR_CUB_INLINE T Sum(T input, BRRR_CPU_HERE) { return reduce(input, cub::Sum(), LOGICAL_WARP_THREADS, brrr_file, brrr_line); }
    BRRR_CUB_INLINE T Sum(T input, int valid_items, BRRR_CPU_HERE) {
        return reduce(input, cub::Sum(), valid_items, brrr_file, brrr_line);
    }

   private:
    template <typename Op>
    BRRR_CUB_INLINE T reduce(T input, Op op, int valid, const char* file, int line) {
        constexpr int L = LOGICAL_WARP_THREADS;
        const unsigned hw_lane = brrr_cpu::cg::lane();
        const int lane = static_cast<int>(hw_lane % L);
        const unsigned mask = L == 32 ? 0xffffffffu : ((1u << L) - 1u) << (hw_lane / L * L);
        T v = input;
        for (int offset = 1; offset < L; offset *= 2) {
            const T other = brrr_cpu::cg::shuffle(brrr_cpu::WarpOp::ShflDown, mask, v, offset, L, file, line);
            if (lane + offset < valid) v = op(v, other);
        }
        return lane == 0 ? v : brrr_cpu::cub::poison<T>();
    }
};

}  // namespace cub
