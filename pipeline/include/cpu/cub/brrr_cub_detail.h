// What brrr's CUB stand-ins (<cub/cub.cuh>) share: the poison a thread gets where CUB defines no
// result, CUB's linear thread id, and the faults for a collective used outside its contract.
//
// CUB defines a block reduction's aggregate in thread 0 only and a warp reduction's in lane 0 of
// each logical warp; on a GPU the other threads hold partial sums that happen to look plausible.
// Here they hold a poison, so a kernel that uses the aggregate in every thread fails visibly:
// NaN for floating types (and 0xff bytes, NaN in every float type, for __half, __nv_bfloat16 and
// structs of them), 0xA5 bytes for integers (0xA5A5A5A5: -1515870811 as an int).
#pragma once
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "../brrr_cpu.h"
#include "../brrr_cpu_cg.h"

// Always inlined, so an access of a collective's temporary storage is placed by the memory
// checks at the kernel's line that called the collective (brrr_cpu_memcheck.cpp: symbolize).
#define BRRR_CUB_INLINE [[gnu::always_inline, gnu::artificial]] inline

namespace brrr_cpu::cub {

template <typename T>
T poison() {
    static_assert(std::is_trivially_copyable_v<T>, "CUB's collectives move trivially copyable values");
    if constexpr (std::numeric_limits<T>::has_quiet_NaN) {
        return std::numeric_limits<T>::quiet_NaN();
    } else {
        T t;
        std::memset(static_cast<void*>(&t), std::is_integral_v<T> ? 0xA5 : 0xff, sizeof(T));
        return t;
    }
}

inline unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }

// CUB's RowMajorTid: the linear id from the dimensions the collective was declared with (not
// blockDim). A block larger than those would index past the temporary storage on a GPU: a fault.
template <int X, int Y, int Z>
BRRR_CUB_INLINE int linear_tid(const char* what, const char* file, int line) {
    if (blockDim.x > static_cast<unsigned>(X) || blockDim.y > static_cast<unsigned>(Y) ||
        blockDim.z > static_cast<unsigned>(Z)) {
        fault("cub", std::string(what) + " declared for a block of (" + std::to_string(X) + ", " + std::to_string(Y) +
                         ", " + std::to_string(Z) + ") threads runs in a block of (" + std::to_string(blockDim.x) +
                         ", " + std::to_string(blockDim.y) + ", " + std::to_string(blockDim.z) +
                         "): CUB would index past its TempStorage (declare it for the block's size)",
              file, line);
    }
    return static_cast<int>((Z == 1 ? 0u : threadIdx.z * X * Y) + (Y == 1 ? 0u : threadIdx.y * X) + threadIdx.x);
}

// The per-block storage of a collective made with its default constructor (CUB's PrivateStorage,
// a __shared__ variable of the collective's own): one per instantiation, as CUB's is.
template <typename Storage>
Storage& private_storage(const char* name, const char* file, int line) {
    static char site;
    return shared_at<Storage>(&site, 0, name, file, line);
}

}  // namespace brrr_cpu::cub
