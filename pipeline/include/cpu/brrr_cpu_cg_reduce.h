// cg::reduce and its operators (<cooperative_groups/reduce.h>) for the CPU execution.
//
// A reduction over a tile or a coalesced group is a tree in rank order: at each step rank r
// combines its value with rank r + offset's (offsets halving from the largest power of 2 below
// the group's size), then every rank takes rank 0's result, so all ranks return the same value.
// For integers and the bitwise and min/max operators that is the GPU's result exactly; for
// floating-point sums the GPU's order may differ, and so may the last bits.
#pragma once
#include <type_traits>
#include <utility>

#include "brrr_cpu_cg.h"

namespace cooperative_groups {

template <typename T>
struct plus {
    T operator()(const T& a, const T& b) const { return a + b; }
};
template <typename T>
struct less {  // the lesser of the two: a minimum
    T operator()(const T& a, const T& b) const { return b < a ? b : a; }
};
template <typename T>
struct greater {  // the greater of the two: a maximum
    T operator()(const T& a, const T& b) const { return a < b ? b : a; }
};
template <typename T>
struct bit_and {
    T operator()(const T& a, const T& b) const { return a & b; }
};
template <typename T>
struct bit_or {
    T operator()(const T& a, const T& b) const { return a | b; }
};
template <typename T>
struct bit_xor {
    T operator()(const T& a, const T& b) const { return a ^ b; }
};

template <typename Group, typename T, typename Op>
std::decay_t<T> reduce(const Group& group, T&& value, Op&& op, BRRR_CPU_HERE) {
    using V = std::decay_t<T>;
    static_assert(requires(const Group& g, V v) { g.shfl_down(v, 1u); },
                  "cg::reduce takes a thread_block_tile or a coalesced_group (as CUDA's does)");
    const unsigned n = static_cast<unsigned>(group.num_threads());
    const unsigned rank = static_cast<unsigned>(group.thread_rank());
    unsigned top = 1;
    while (top < n) top <<= 1;
    V v = std::forward<T>(value);
    for (unsigned offset = top / 2; offset > 0; offset /= 2) {
        const V other = group.shfl_down(v, offset, brrr_file, brrr_line);
        if (rank + offset < n) v = static_cast<V>(op(v, other));
    }
    return group.shfl(v, 0, brrr_file, brrr_line);
}

}  // namespace cooperative_groups
