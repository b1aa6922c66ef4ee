// Warp and barrier instructions of inline PTX on the CPU (pipeline/cuda/cpu_ptx_warp.py writes the
// calls): shfl.sync, vote.sync, redux.sync, elect.sync, activemask, bar.warp.sync, bar.sync / barrier.sync
// and bar.arrive, each as the CUDA function it is (the runtime's warp intrinsics, with their
// checks: every named lane at the same call, or barrier divergence).
#pragma once
#include <cstdint>
#include <string>

#include "brrr_cpu.h"
#include "brrr_cpu_ldst.h"

namespace brrr_cpu::ptx {

enum class Shfl { Idx, Up, Down, Bfly };

// shfl.sync.mode.b32 d, a, b, c, membermask for the c operands CUDA's __shfl_*_sync compile to: the
// segment mask 32 - width in bits 12:8 and the clamp 31 (0 for .up). Another c is not emulated.
template <Shfl M, typename A, typename B, typename C, typename K>
inline uint32_t shfl_sync(A ra, B rb, C rc, K rmask, const char* file, int line) {
    const uint32_t a = bits_of<uint32_t>(ra), c = bits_of<uint32_t>(rc), mask = bits_of<uint32_t>(rmask);
    const int b = static_cast<int>(bits_of<uint32_t>(rb));
    const int width = 32 - static_cast<int>((c >> 8) & 0x1fu);
    if ((width & (width - 1)) != 0 || (c & 0x1fu) != (M == Shfl::Up ? 0u : 0x1fu) || (c >> 13) != 0) {
        fault("not supported on the CPU", "shfl.sync with c = " + std::to_string(c) + ": brrr emulates the c operands "
              "CUDA's __shfl_*_sync use, ((32 - width) << 8) | 31 (or | 0 for .up) with width a power of 2", file, line);
    }
    switch (M) {
        case Shfl::Idx: return __shfl_sync(mask, a, b, width, file, line);
        case Shfl::Up: return __shfl_up_sync(mask, a, static_cast<unsigned>(b), width, file, line);
        case Shfl::Down: return __shfl_down_sync(mask, a, static_cast<unsigned>(b), width, file, line);
        default: return __shfl_xor_sync(mask, a, b, width, file, line);
    }
}

// elect.sync d|p, membermask: the lowest lane of membermask, in every lane; p where it is this one.
inline uint32_t elect_sync(uint32_t mask, bool& elected, const char* file, int line) {
    const unsigned here = __ballot_sync(mask, 1, file, line);
    const uint32_t leader = here ? static_cast<uint32_t>(__builtin_ctz(here)) : 0u;
    elected = laneid() == leader;
    return leader;
}

// bar.sync / barrier.sync a{, b}: barrier 0 over the whole block is __syncthreads; another barrier (1 to
// 15) or a count of fewer threads is a named barrier of the runtime's. bar.arrive arrives without waiting.
inline void bar_sync(uint32_t id, uint32_t count, bool wait, const char* file, int line) {
    const uint32_t threads = blockDim.x * blockDim.y * blockDim.z;
    if (wait && id == 0 && (count == 0 || count == threads)) {
        __syncthreads(file, line);
    } else {
        brrr_cpu::named_barrier(id, count, wait, file, line);
    }
}

}  // namespace brrr_cpu::ptx
