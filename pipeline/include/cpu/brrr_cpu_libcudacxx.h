// CPU stand-ins for libcu++'s asynchronous copies (<cuda/pipeline>, <cuda/barrier>): cuda::memcpy_async
// with a per-thread cuda::pipeline or a block-scope cuda::barrier, on brrr_cpu_async.h's copies.
//
// A copy with a pipeline joins the thread's copies since its last producer_commit; consumer_wait
// lands the oldest committed stage. A copy with a barrier lands when the barrier's current phase
// completes (the last arrival), for every thread taking part, as the CUDA Programming Guide says.
// cuda::barrier's waits let the block's other threads run; a wait that no thread can end (too few
// arrivals for the expected count) is a deadlock fault at once, not a time-out.
//
// Not emulated (a compile error naming it): a pipeline shared by a group (make_pipeline(group,
// &shared_state)), and the mbarrier transaction counts of sm_90 (cuda::device::barrier_arrive_tx).
#pragma once
#include <cstddef>
#include <type_traits>

#include "brrr_cpu_async.h"
#include "brrr_cpu_tma.h"

namespace cuda {

enum thread_scope { thread_scope_system, thread_scope_device, thread_scope_block, thread_scope_thread };

template <size_t Align>
struct aligned_size_t {
    static_assert(Align && (Align & (Align - 1)) == 0, "cuda::aligned_size_t: the alignment is a power of 2");
    static constexpr size_t align = Align;
    size_t value;
    explicit aligned_size_t(size_t size) : value(size) {}
    operator size_t() const { return value; }
};

namespace detail {
inline size_t size_of(size_t s) { return s; }
template <size_t A>
size_t size_of(aligned_size_t<A> s) { return s.value; }
template <typename S>
constexpr size_t align_of() {
    if constexpr (std::is_integral_v<S>) return 1;
    else return S::align;
}
}  // namespace detail

template <thread_scope Scope, typename Completion = void>
class barrier {
    static_assert(std::is_void_v<Completion>, "a cuda::barrier with a completion function is not supported on the CPU");

   public:
    using arrival_token = unsigned;
    barrier() = default;
    barrier(const barrier&) = delete;
    barrier& operator=(const barrier&) = delete;

    arrival_token arrive(ptrdiff_t update = 1, BRRR_CPU_HERE) {
        return brrr_cpu::async::barrier_arrive(&state_, static_cast<int>(update), false, brrr_file, brrr_line);
    }
    void wait(arrival_token&& phase, BRRR_CPU_HERE) const {
        brrr_cpu::async::barrier_wait(const_cast<brrr_cpu::async::BarrierState*>(&state_), phase, brrr_file, brrr_line);
    }
    void arrive_and_wait(BRRR_CPU_HERE) {
        wait(brrr_cpu::async::barrier_arrive(&state_, 1, false, brrr_file, brrr_line), brrr_file, brrr_line);
    }
    void arrive_and_drop(BRRR_CPU_HERE) { brrr_cpu::async::barrier_arrive(&state_, 1, true, brrr_file, brrr_line); }
    static constexpr ptrdiff_t max() { return 1024; }

    friend void init(barrier* b, ptrdiff_t expected, BRRR_CPU_HERE) {
        brrr_cpu::async::barrier_init(&b->state_, static_cast<int>(expected), brrr_file, brrr_line);
    }
    brrr_cpu::async::BarrierState* brrr_state() { return &state_; }

   private:
    brrr_cpu::async::BarrierState state_;
};

template <thread_scope Scope>
class pipeline {
    static_assert(Scope == thread_scope_thread,
                  "a cuda::pipeline shared by a group (make_pipeline(group, &shared_state)) is not supported on the CPU: "
                  "use cuda::make_pipeline() per thread, cuda::barrier, or the __pipeline primitives");

   public:
    void producer_acquire() {}
    void producer_commit(BRRR_CPU_HERE) { brrr_cpu::async::commit(brrr_file, brrr_line); }
    void consumer_wait(BRRR_CPU_HERE) { brrr_cpu::async::wait_oldest(brrr_file, brrr_line); }
    void consumer_release() {}
    bool quit() { return true; }
};

template <thread_scope Scope, unsigned char Stages>
struct pipeline_shared_state {};

inline pipeline<thread_scope_thread> make_pipeline() { return {}; }
template <typename Group, thread_scope Scope, unsigned char Stages>
pipeline<Scope> make_pipeline(const Group&, pipeline_shared_state<Scope, Stages>*) {
    return pipeline<Scope>{};  // the static_assert above names it
}

template <unsigned char Prior>
void pipeline_consumer_wait_prior(pipeline<thread_scope_thread>&, BRRR_CPU_HERE) {
    brrr_cpu::async::wait_prior(Prior, brrr_file, brrr_line);
}

// One thread's copy, with its pipeline or barrier.
template <typename Size>
BRRR_CPU_ENTRY void memcpy_async(void* dst, const void* src, Size size, pipeline<thread_scope_thread>&, BRRR_CPU_HERE) {
    const size_t n = detail::size_of(size);
    brrr_cpu::async::copy(brrr_cpu::async::Kind::Memcpy, dst, src, n, n, detail::align_of<Size>(), nullptr,
                          {__builtin_return_address(0), brrr_file, brrr_line});
}
template <typename Size, thread_scope Scope>
BRRR_CPU_ENTRY void memcpy_async(void* dst, const void* src, Size size, barrier<Scope>& bar, BRRR_CPU_HERE) {
    const size_t n = detail::size_of(size);
    brrr_cpu::async::copy(brrr_cpu::async::Kind::Memcpy, dst, src, n, n, detail::align_of<Size>(), bar.brrr_state(),
                          {__builtin_return_address(0), brrr_file, brrr_line});
}

// A group's copy: every thread of `group` calls it with the same arguments; each copies its slice.
template <typename Group, typename Size, typename Sync>
BRRR_CPU_ENTRY void memcpy_async(const Group& group, void* dst, const void* src, Size size, Sync& sync, BRRR_CPU_HERE) {
    const size_t n = detail::size_of(size), align = detail::align_of<Size>();
    size_t threads = 0, rank = group.thread_rank();
    if constexpr (requires { group.num_threads(); }) threads = group.num_threads();
    else threads = group.size();
    const size_t units = (n + align - 1) / align, per = (units + threads - 1) / threads;
    const size_t lo = std::min(n, rank * per * align), hi = std::min(n, (rank + 1) * per * align);
    const brrr_cpu::async::BarrierState* b = nullptr;
    if constexpr (!std::is_same_v<Sync, pipeline<thread_scope_thread>>) b = sync.brrr_state();
    if (hi > lo) {
        brrr_cpu::async::copy(brrr_cpu::async::Kind::Memcpy, static_cast<char*>(dst) + lo, static_cast<const char*>(src) + lo,
                              hi - lo, hi - lo, align, b, {__builtin_return_address(0), brrr_file, brrr_line});
    }
}

// <cuda/barrier>'s Hopper extras: transaction bytes on a cuda::barrier, and the tensor memory
// accelerator's loads completing them (cuda::device::experimental), emulated as the PTX forms are
// (brrr_cpu_tma.h): a copy lands when the barrier's phase completes.
namespace device {
template <thread_scope Scope>
void barrier_expect_tx(barrier<Scope>& b, ptrdiff_t bytes, BRRR_CPU_HERE) {
    brrr_cpu::async::barrier_expect_tx(b.brrr_state(), static_cast<int64_t>(bytes), brrr_file, brrr_line);
}
template <thread_scope Scope>
typename barrier<Scope>::arrival_token barrier_arrive_tx(barrier<Scope>& b, ptrdiff_t count, ptrdiff_t bytes, BRRR_CPU_HERE) {
    brrr_cpu::async::barrier_expect_tx(b.brrr_state(), static_cast<int64_t>(bytes), brrr_file, brrr_line);
    return b.arrive(count, brrr_file, brrr_line);
}

namespace experimental {
inline void fence_proxy_async_shared_cta() {}

template <int Rank, thread_scope Scope>
BRRR_CPU_ENTRY void bulk_tensor_load(void* dst, const CUtensorMap* map, const int32_t (&coords)[Rank], barrier<Scope>& bar,
                                     const char* file, int line) {
    brrr_cpu::mbarrier::tensor_load_onto(reinterpret_cast<uint64_t>(dst), map, coords, Rank, bar.brrr_state(),
                                         __builtin_return_address(0), file, line);
}
template <thread_scope Scope>
void cp_async_bulk_tensor_1d_global_to_shared(void* dst, const CUtensorMap* map, int c0, barrier<Scope>& bar, BRRR_CPU_HERE) {
    bulk_tensor_load<1>(dst, map, {c0}, bar, brrr_file, brrr_line);
}
template <thread_scope Scope>
void cp_async_bulk_tensor_2d_global_to_shared(void* dst, const CUtensorMap* map, int c0, int c1, barrier<Scope>& bar,
                                              BRRR_CPU_HERE) {
    bulk_tensor_load<2>(dst, map, {c0, c1}, bar, brrr_file, brrr_line);
}
template <thread_scope Scope>
void cp_async_bulk_tensor_3d_global_to_shared(void* dst, const CUtensorMap* map, int c0, int c1, int c2, barrier<Scope>& bar,
                                              BRRR_CPU_HERE) {
    bulk_tensor_load<3>(dst, map, {c0, c1, c2}, bar, brrr_file, brrr_line);
}
template <thread_scope Scope>
void cp_async_bulk_tensor_4d_global_to_shared(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3,
                                              barrier<Scope>& bar, BRRR_CPU_HERE) {
    bulk_tensor_load<4>(dst, map, {c0, c1, c2, c3}, bar, brrr_file, brrr_line);
}
template <thread_scope Scope>
void cp_async_bulk_tensor_5d_global_to_shared(void* dst, const CUtensorMap* map, int c0, int c1, int c2, int c3, int c4,
                                              barrier<Scope>& bar, BRRR_CPU_HERE) {
    bulk_tensor_load<5>(dst, map, {c0, c1, c2, c3, c4}, bar, brrr_file, brrr_line);
}
}  // namespace experimental
}  // namespace device

}  // namespace cuda
