// Asynchronous copies into shared memory on the CPU: cp.async (PTX, rewritten by
// pipeline/cpu_ptx.py), the pipeline primitives of <cuda_pipeline.h>, and cuda::memcpy_async with
// cuda::pipeline or cuda::barrier (<cuda/pipeline>, <cuda/barrier>); plus the shared-memory window
// (__cvta_generic_to_shared) that PTX with a `.shared` address needs.
//
// A copy does not land when it is issued: its source is read then, and the destination is written
// only at the wait that completes it (cp.async.wait_group, __pipeline_wait_prior, consumer_wait, the
// barrier's phase), so a kernel that reads the destination too early reads what was there before,
// as a GPU may, instead of passing by luck of the sequential order. In a checked build
// (brrr_cpu_memcheck.cpp) the destination's bytes are marked in flight until then: a read or write
// of them is a fault naming both lines, the copy's and the access's.
//
// The state (each thread's groups of copies, each barrier's) lives in the runtime, which is not
// instrumented (brrr_cpu_async_impl.h); the functions here are the kernel's side. Each entry point
// is noinline, so the return address it passes is the kernel's line (the memory checks name it).
#pragma once
#include <cstddef>
#include <cstdint>

#include "brrr_cpu.h"

#define BRRR_CPU_ENTRY __attribute__((noinline, no_sanitize_address))

namespace brrr_cpu::async {

enum class Kind : int {
    CpAsync,   // cp.async.ca/cg: 4, 8 or 16 bytes, aligned to their size
    Pipeline,  // __pipeline_memcpy_async: 4, 8 or 16 bytes, aligned to their size
    Memcpy,    // cuda::memcpy_async: any size, aligned to 1, 2, 4, 8 or 16 as its alignment says
};

struct Where {
    const void* pc;  // the return address into the kernel: where the memory checks say it was issued
    const char* file;
    int line;
};

// Issue one copy of `size` bytes, reading `src_size` of them from `src` (the rest are zeros, as
// cp.async's src-size and __pipeline_memcpy_async's zfill say). `barrier`: the cuda::barrier it
// completes with, or nullptr for the thread's own groups.
void copy(Kind kind, void* dst, const void* src, size_t size, size_t src_size, size_t align, const void* barrier,
          const Where& where);
// cp.async.commit_group / __pipeline_commit / producer_commit: the copies issued since become a group.
void commit(const char* file, int line);
// cp.async.wait_group n / __pipeline_wait_prior(n): every group but the newest n has landed.
void wait_prior(int n, const char* file, int line);
// consumer_wait: the oldest group not yet waited for has landed.
void wait_oldest(const char* file, int line);

// A block-scope barrier (cuda::barrier<thread_scope_block>) living in shared memory.
struct BarrierState {
    int expected;  // arrivals a phase needs
    int pending;   // arrivals the current phase still needs
    unsigned phase;
    int initialised;  // 0x62727272 once init() ran: a barrier used before init is a fault
    int64_t tx;       // transaction bytes the phase still expects (barrier_arrive_tx, tensor copies)
    uint32_t id;      // the block's number for it (brrr_cpu_async_impl.h: which threads saw which phases)
};
void barrier_init(BarrierState* b, int expected, const char* file, int line);
// cuda::device::barrier_expect_tx / the tx of barrier_arrive_tx: the phase also waits for `bytes` more.
void barrier_expect_tx(BarrierState* b, int64_t bytes, const char* file, int line);
unsigned barrier_arrive(BarrierState* b, int count, bool drop, const char* file, int line);
void barrier_wait(BarrierState* b, unsigned phase, const char* file, int line);

// A copy onto a barrier (an mbarrier or a cuda::barrier) that landed when the barrier's phase
// completed, as the runtime tells a checked build (brrr_cpu_memcheck.cpp): a thread may read those
// bytes once it has seen that phase complete, by its own wait or a __syncthreads or warp sync after a
// thread that waited. Before that a GPU gives no guarantee the bytes are there.
struct Landing {
    const void* dst;
    size_t size;
    const void* pc;      // where the copy was issued
    int thread;          // by which thread (linear in the block)
    uint32_t barrier;    // the barrier's id in the block (see seen_phases)
    uint64_t phase;      // the count of its completed phases once this one completed
    uint64_t offset;     // the barrier's shared offset, and what kind it is, for the report
    bool mbarrier;
};
// How many of barrier `id`'s phases thread `thread` has seen complete (the checked build asks).
uint64_t seen_phases(uint32_t id, int thread);
// The scheduler's __syncthreads (warp -1) or warp sync over `mask` completed: what one participating
// thread has seen, each has.
void share_seen(int warp, unsigned mask);

// The shared-memory window: offsets into the block's shared memory, as a GPU's .shared addresses are.
size_t shared_offset(const void* p, const char* file, int line);
void* shared_pointer(uint64_t address, const char* file, int line);
bool is_shared(const void* p);

}  // namespace brrr_cpu::async

// ---- the conversions between generic and state-space addresses -----------------------------------
inline size_t __cvta_generic_to_shared(const void* p, BRRR_CPU_HERE) { return brrr_cpu::async::shared_offset(p, brrr_file, brrr_line); }
inline void* __cvta_shared_to_generic(size_t a, BRRR_CPU_HERE) { return brrr_cpu::async::shared_pointer(a, brrr_file, brrr_line); }
inline size_t __cvta_generic_to_global(const void* p) { return reinterpret_cast<size_t>(p); }
inline void* __cvta_global_to_generic(size_t a) { return reinterpret_cast<void*>(a); }
inline bool __isShared(const void* p) { return brrr_cpu::async::is_shared(p); }
inline bool __isGlobal(const void* p) { return !__isShared(p); }

// ---- the pipeline primitives (<cuda_pipeline.h>) -------------------------------------------------
BRRR_CPU_ENTRY inline void __pipeline_memcpy_async(void* dst, const void* src, size_t size, size_t zfill = 0,
                                                   BRRR_CPU_HERE) {
    const size_t read = zfill > size ? 0 : size - zfill;
    brrr_cpu::async::copy(brrr_cpu::async::Kind::Pipeline, dst, src, size, read, size, nullptr,
                          {__builtin_return_address(0), brrr_file, brrr_line});
}
inline void __pipeline_commit(BRRR_CPU_HERE) { brrr_cpu::async::commit(brrr_file, brrr_line); }
inline void __pipeline_wait_prior(size_t n, BRRR_CPU_HERE) {
    brrr_cpu::async::wait_prior(static_cast<int>(n), brrr_file, brrr_line);
}
template <typename T>
void __pipeline_arrive_on(T*) {
    static_assert(sizeof(T) == 0, "__pipeline_arrive_on (an mbarrier) is not supported on the CPU: use cuda::barrier");
}

// ---- the PTX that pipeline/cpu_ptx.py rewrites into calls --------------------------------------------
namespace brrr_cpu::ptx {
// cp.async.{ca,cg}.shared.global [dst], [src], size{, src_size}: dst a .shared address (an offset of
// the shared window, or a generic pointer into it), src a global (generic) pointer.
BRRR_CPU_ENTRY inline void cp_async(uint64_t dst, uint64_t src_address, int size, int src_size, const char* file, int line) {
    const void* src = reinterpret_cast<const void*>(static_cast<uintptr_t>(src_address));
    void* to = brrr_cpu::async::shared_pointer(dst, file, line);
    brrr_cpu::async::copy(brrr_cpu::async::Kind::CpAsync, to, src, static_cast<size_t>(size),
                          static_cast<size_t>(src_size), static_cast<size_t>(size), nullptr,
                          {__builtin_return_address(0), file, line});
}
// An address operand as its 64-bit value: a pointer's, or an integer's (a state-space address).
template <typename P>
inline uint64_t global_address(P p) {
    if constexpr (std::is_pointer_v<P>) return reinterpret_cast<uint64_t>(p);
    else return static_cast<uint64_t>(p);
}
template <typename A>
inline uint64_t shared_address(A a) {
    if constexpr (std::is_pointer_v<A>) return reinterpret_cast<uint64_t>(a);
    else return static_cast<uint64_t>(a);
}
inline void cp_async_commit_group(const char* file, int line) { brrr_cpu::async::commit(file, line); }
inline void cp_async_wait_group(int n, const char* file, int line) { brrr_cpu::async::wait_prior(n, file, line); }
inline void cp_async_wait_all(const char* file, int line) {
    brrr_cpu::async::commit(file, line);
    brrr_cpu::async::wait_prior(0, file, line);
}
}  // namespace brrr_cpu::ptx
