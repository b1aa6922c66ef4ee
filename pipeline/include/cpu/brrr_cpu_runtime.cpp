// The CPU execution's scheduler: blocks of fibers, barriers, warp-synchronous calls, per-block
// shared memory, and the facts it reports (barrier divergence, bad warp masks, deadlock).
// Compiled once per content (brrr caches it) and linked into each op's CPU library.
//
// A block's threads are fibers on one OS thread. The scheduler resumes them in thread order; each
// runs until it waits (at __syncthreads, at a warp intrinsic for the other lanes its mask names)
// or returns. A wait completes when the last thread it needs arrives: that thread carries on at
// once and the others are queued, in thread order. When nothing can run and threads remain, the
// block is stuck, and the reason is reported with kernel.cu's line, the block and the threads.
//
// Rules checked, as CUDA states them (the programming guide; compute-sanitizer's synccheck):
// - __syncthreads must be reached by every thread of the block, and by all at the same call: a
//   thread that returns while others wait, or two calls on different lines, is barrier divergence.
// - a warp intrinsic's mask names the lanes that take part: each must reach the same call with the
//   same mask; a lane that has exited, or does not exist (a partial warp), cannot.
#include "brrr_cpu.h"
#include "brrr_cpu_async.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include <condition_variable>
#include <functional>
#include <sched.h>
#include <cstdarg>
#include <csignal>
#include <pthread.h>
#include <sys/ucontext.h>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

// Read by a debugger in a one-worker run (BRRR_CPU_WORKERS=1): the block and thread now running.
extern "C" {
__attribute__((visibility("default"))) int brrr_cpu_debug_block[3] = {-1, -1, -1};
__attribute__((visibility("default"))) int brrr_cpu_debug_thread[3] = {-1, -1, -1};
}

namespace brrr_cpu {

// ---- context switching ------------------------------------------------------------------------

#if defined(__x86_64__)
// switch(save, load): push the callee-saved registers and the FP control words on this stack,
// store its pointer in *save, load `load` and pop the same from there. A new fiber's stack is
// laid out as if it had switched out just before entering brrr_cpu_trampoline.
extern "C" void brrr_cpu_switch(void** save, void* load);
extern "C" void brrr_cpu_trampoline();
asm(R"(
    .text
    .p2align 4
    .type brrr_cpu_switch,@function
brrr_cpu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size brrr_cpu_switch, .-brrr_cpu_switch

    .p2align 4
    .type brrr_cpu_trampoline,@function
brrr_cpu_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq %r12, %rdi
    callq *%r13
    ud2
    .cfi_endproc
    .size brrr_cpu_trampoline, .-brrr_cpu_trampoline
)");

struct Context {
    void* sp = nullptr;
};

static void make_context(Context& c, char* stack, size_t size, void (*entry)(void*), void* arg) {
    auto* top = reinterpret_cast<uint64_t*>(reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t(15));
    uint32_t mxcsr = 0;
    uint16_t fpucw = 0;
    asm volatile("stmxcsr %0" : "=m"(mxcsr));
    asm volatile("fnstcw %0" : "=m"(fpucw));
    const uint64_t control = mxcsr | (uint64_t(fpucw) << 32);
    uint64_t* sp = top;
    *--sp = reinterpret_cast<uint64_t>(&brrr_cpu_trampoline);  // popped by ret
    *--sp = 0;                                                 // rbp
    *--sp = 0;                                                 // rbx
    *--sp = reinterpret_cast<uint64_t>(arg);                   // r12: the trampoline's argument
    *--sp = reinterpret_cast<uint64_t>(entry);                 // r13: what it calls
    *--sp = 0;                                                 // r14
    *--sp = 0;                                                 // r15
    *--sp = control;                                           // mxcsr, x87 control word
    c.sp = sp;
}

static inline void switch_context(Context& from, Context& to) { brrr_cpu_switch(&from.sp, to.sp); }
#else
struct Context {
    ucontext_t uc;
};
static void make_context(Context& c, char* stack, size_t size, void (*entry)(void*), void* arg) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = stack;
    c.uc.uc_stack.ss_size = size;
    c.uc.uc_link = nullptr;
    makecontext(&c.uc, reinterpret_cast<void (*)()>(entry), 1, arg);
}
static inline void switch_context(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
#endif

// ---- fiber stacks: mapped once, with a guard page, and reused --------------------------------------

static size_t stack_size() {
    static const size_t size = [] {
        const char* env = std::getenv("BRRR_CPU_STACK_KB");
        const long kb = env ? std::atol(env) : 256;
        return static_cast<size_t>(kb > 16 ? kb : 16) * 1024;
    }();
    return size;
}

static std::mutex stacks_mutex;
static std::vector<char*> free_stacks;

static char* take_stack() {
    {
        std::lock_guard<std::mutex> lock(stacks_mutex);
        if (!free_stacks.empty()) {
            char* s = free_stacks.back();
            free_stacks.pop_back();
            return s;
        }
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* p = mmap(nullptr, stack_size() + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw KernelFault("brrr CPU execution: out of memory for thread stacks");
    mprotect(p, page, PROT_NONE);  // the guard page: a fiber overflowing its stack faults here
    return static_cast<char*>(p) + page;
}

static void give_stack(char* s) {
    std::lock_guard<std::mutex> lock(stacks_mutex);
    free_stacks.push_back(s);
}

// ---- blocks and their threads ------------------------------------------------------------------

enum class State : uint8_t { Fresh, Ready, Barrier, Warp, Exited };

struct Block;

// An allocator of `Align`-byte aligned storage (the shared-memory arena's).
template <typename T, size_t Align>
struct AlignedAllocator {
    using value_type = T;
    template <typename U>
    struct rebind {
        using other = AlignedAllocator<U, Align>;
    };
    AlignedAllocator() = default;
    template <typename U>
    AlignedAllocator(const AlignedAllocator<U, Align>&) {}
    T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(Align))); }
    void deallocate(T* p, size_t) { ::operator delete(p, std::align_val_t(Align)); }
    bool operator==(const AlignedAllocator&) const { return true; }
    bool operator!=(const AlignedAllocator&) const { return false; }
};

// A barrier that spans blocks, which a thread's spin waits at (see "waiting on memory").
enum class BlockWait : uint8_t { None, Grid, Cluster, Named };

struct Fiber {
    Context context;
    char* stack = nullptr;
    Block* block = nullptr;
    uint3 index{0, 0, 0};
    int linear = 0;
    State state = State::Fresh;
    const char* file = nullptr;  // where it waits
    int line = 0;
    Sync sync = Sync::Threads;
    int predicate = 0;
    int sync_result = 0;
    WarpCall* call = nullptr;    // on the fiber's own stack while it waits
    // Waiting on memory (watch()): its accesses since it last made progress, and where it spins.
    int polls = 0;
    bool wrote = false;
    int distinct = 0;            // addresses read, up to kSpinAddresses (more: not a spin)
    uintptr_t seen[8] = {};
    bool spinning = false;
    const void* spin_pc = nullptr;  // the access that polls, for its kernel.cu line
    const char* spin_file = nullptr;  // or the line of the __nanosleep or grid sync it waits at
    int spin_line = 0;
    BlockWait spin_barrier = BlockWait::None;  // it waits at a barrier of several blocks
    uint64_t cluster_round = 0;       // the cluster barrier's round it last arrived at
    uintptr_t spin_address = 0;
};

// Per worker thread: the block it runs, reused from block to block.
struct Block {
    const Launch* launch = nullptr;
    void (*thread_main)(void*) = nullptr;
    void* context = nullptr;
    uint3 index{0, 0, 0};
    int threads = 0;
    std::vector<Fiber> fibers;
    std::vector<int> ready, running;
    Context scheduler;
    int exited = 0;
    int at_barrier = 0;
    uint64_t epoch = 0;
    std::vector<unsigned> warp_waiting;  // lanes waiting at a warp intrinsic, per warp
    std::vector<unsigned> warp_exited;
    std::vector<unsigned> warp_present;  // lanes that exist (the last warp may be partial)
    // The block's shared memory, 1024-byte aligned: a GPU's shared window starts at address 0, so an
    // `extern __shared__ __align__(128)` array, a struct of alignas(128) tiles or a 128-byte swizzle
    // pattern's 1024-byte repeat is aligned there, and must be here for the alignment checks.
    std::vector<char, AlignedAllocator<char, 1024>> arena;
    size_t arena_used = 0;
    size_t static_shared = 0;
    std::vector<SharedRegion> regions;
    // Cross-block waits (see "waiting on memory"): the launch's coordination, whether a thread of
    // this block made progress in the scheduler's current round, and how long it has been stalled.
    struct Coordination* coordination = nullptr;
    bool moved = false;
    bool stalled = false;
    bool asked = false;          // asked for another block to run beside it in this stall
    uint64_t quiet_since = 0;    // the launch's progress count when its quiet rounds began
    int quiet_rounds = 0;
    bool failed = false;
    std::string error;
    std::string race;  // a race found in this phase, held until its barrier completes (see brrr_cpu::race)
    bool single_worker = true;
    bool abandoned = false;  // stopped at a grid barrier because another block of its cooperative grid faulted
    uint64_t serial = 0;  // unique to each block run: brrr_cpu_async_impl.h starts its state afresh by it
    int64_t cluster_id = -1;  // in a launch with clusters of more than one block: its cluster and rank there
    unsigned cluster_rank = 0;
    // PTX's named barriers 0-15 (bar.sync a, b; bar.arrive a, b): threads arrived in the current round,
    // the count that completes it, and rounds completed.
    struct Named {
        int arrived = 0;
        int count = 0;
        uint64_t rounds = 0;
    };
    std::array<Named, 16> named{};
};

static thread_local Block* running_block = nullptr;
static thread_local Fiber* running_fiber = nullptr;
static thread_local const Launch* running_launch = nullptr;

// A thread reached a barrier, a warp intrinsic or its end, or wrote memory: it is not waiting on
// memory, and its block is not stalled this round.
static void made_progress(Block& b, Fiber& f) {
    f.polls = 0;
    f.wrote = false;
    f.distinct = 0;
    f.spinning = false;
    b.moved = true;
}
static bool watched(Fiber& f, const void* address, bool write, const void* pc);

Hooks& hooks() {
    static Hooks h;
    return h;
}

int current_thread() { return running_fiber ? running_fiber->linear : -1; }
const Launch* current_launch() { return running_launch; }
const SharedRegion* shared_regions(int* count) {
    if (!running_block) {
        *count = 0;
        return nullptr;
    }
    *count = static_cast<int>(running_block->regions.size());
    return running_block->regions.data();
}

// ---- messages ------------------------------------------------------------------------------------

static std::string triple(uint3 v) {
    std::ostringstream s;
    s << "(" << v.x << ", " << v.y << ", " << v.z << ")";
    return s.str();
}

static std::string kernel_name(const Launch& launch) {
    Dl_info info;
    if (dladdr(launch.kernel, &info) && info.dli_sname && info.dli_saddr == launch.kernel) {
        int status = 0;
        char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
        if (status == 0 && demangled) {
            std::string name(demangled);
            std::free(demangled);
            const auto paren = name.find('(');
            name = name.substr(0, paren);
            if (name.rfind("void ", 0) == 0) name = name.substr(5);
            return name;
        }
    }
    return launch.site.kernel;
}

// "file:line: kind in kernel, block (..), thread (..): detail" -- the first line says where.
static std::string located(const Block& b, const char* kind, const std::string& detail, const char* file, int line,
                           const Fiber* f) {
    std::ostringstream s;
    s << file << ":" << line << ": " << kind << " in " << b.launch->name << ", block " << triple(b.index);
    if (f) s << ", thread " << triple(f->index);
    s << ": " << detail;
    return s.str();
}

// The block's first finding; a race held back (brrr_cpu::race) came before anything found since.
static void record(Block& b, std::string message) {
    if (!b.failed) {
        b.failed = true;
        b.error = b.race.empty() ? std::move(message) : b.race;
    }
}

// Barrier divergence outranks a race held back: the threads that skipped the barrier are what raced.
static void record_divergence(Block& b, const std::string& message) {
    if (!b.failed) {
        b.failed = true;
        b.error = b.race.empty() ? message : message + "\nthe race it leaves unordered: " + b.race;
    }
}

static std::string thread_list(const Block& b, const std::vector<int>& ids) {
    std::ostringstream s;
    const size_t shown = std::min<size_t>(ids.size(), 4);
    for (size_t i = 0; i < shown; ++i) s << (i ? ", " : "") << triple(b.fibers[ids[i]].index);
    if (ids.size() > shown) s << " and " << ids.size() - shown << " more";
    return s.str();
}

static const char* op_name(WarpOp op) {
    switch (op) {
        case WarpOp::Shfl: return "__shfl_sync";
        case WarpOp::ShflUp: return "__shfl_up_sync";
        case WarpOp::ShflDown: return "__shfl_down_sync";
        case WarpOp::ShflXor: return "__shfl_xor_sync";
        case WarpOp::Ballot: return "__ballot_sync";
        case WarpOp::Any: return "__any_sync";
        case WarpOp::All: return "__all_sync";
        case WarpOp::SyncWarp: return "__syncwarp";
        case WarpOp::ActiveMask: return "__activemask";
        case WarpOp::MatchAny: return "__match_any_sync";
        case WarpOp::MatchAll: return "__match_all_sync";
        case WarpOp::ReduceAdd: return "__reduce_add_sync";
        case WarpOp::ReduceMin: return "__reduce_min_sync";
        case WarpOp::ReduceMax: return "__reduce_max_sync";
        case WarpOp::ReduceAnd: return "__reduce_and_sync";
        case WarpOp::ReduceOr: return "__reduce_or_sync";
        case WarpOp::ReduceXor: return "__reduce_xor_sync";
        case WarpOp::Collective: return "a warp-collective operation";
    }
    return "a warp intrinsic";
}

// The name a message gives a waiting call: a Collective says which one.
static const char* call_name(const WarpCall& c) {
    return c.op == WarpOp::Collective ? static_cast<const Collective*>(c.value)->name : op_name(c.op);
}

static const char* sync_name(Sync s) {
    switch (s) {
        case Sync::Threads: return "__syncthreads";
        case Sync::Count: return "__syncthreads_count";
        case Sync::And: return "__syncthreads_and";
        case Sync::Or: return "__syncthreads_or";
    }
    return "__syncthreads";
}

static std::string hex(unsigned m) {
    std::ostringstream s;
    s << "0x" << std::hex << m;
    return s.str();
}

static std::string where(const Fiber& f) {
    std::ostringstream s;
    if (f.state == State::Barrier) s << sync_name(f.sync) << " at " << f.file << ":" << f.line;
    else if (f.state == State::Warp) s << call_name(*f.call) << " at " << f.file << ":" << f.line;
    else if (f.state == State::Exited) s << "the end of the kernel (returned)";
    else s << "no wait";
    return s.str();
}

// ---- the fiber's side ------------------------------------------------------------------------------

static void wait_here(Block& b, Fiber& f) { switch_context(f.context, b.scheduler); }

[[noreturn]] static void stop(Block& b, Fiber& f) {
    f.state = State::Exited;
    switch_context(f.context, b.scheduler);
    __builtin_unreachable();  // a failed block is never resumed
}

[[noreturn]] void fault(const char* kind, const std::string& detail, const char* file, int line) {
    Block* b = running_block;
    Fiber* f = running_fiber;
    if (!b || !f) throw KernelFault(std::string(file) + ":" + std::to_string(line) + ": " + kind + ": " + detail);
    record(*b, located(*b, kind, detail, file, line, f));
    stop(*b, *f);
}

void race(const char* kind, const std::string& detail, const char* file, int line) {
    Block* b = running_block;
    Fiber* f = running_fiber;
    if (!b || !f) fault(kind, detail, file, line);
    if (b->race.empty()) b->race = located(*b, kind, detail, file, line, f);
}

[[noreturn]] void trap(const char* file, int line) {
    fault("trap", "the kernel called __trap()", file, line);
}

static void fiber_main(void* arg) {
    auto* f = static_cast<Fiber*>(arg);
    Block& b = *f->block;
    try {
        b.thread_main(b.context);
    } catch (const std::exception& e) {
        record(b, located(b, "exception", e.what(), b.launch->site.file, b.launch->site.line, f));
    } catch (...) {
        record(b, located(b, "exception", "an exception that is not a std::exception", b.launch->site.file,
                          b.launch->site.line, f));
    }
    f->state = State::Exited;
    switch_context(f->context, b.scheduler);
    __builtin_trap();
}

static Fiber& here(const char* what, const char* file, int line) {
    if (!running_fiber) {
        throw KernelFault(std::string(file) + ":" + std::to_string(line) + ": " + what +
                          " called outside a kernel (host code has no block to synchronise with)");
    }
    return *running_fiber;
}

// ---- __syncthreads ---------------------------------------------------------------------------------

static std::vector<int> threads_where(const Block& b, State s) {
    std::vector<int> ids;
    for (const Fiber& f : b.fibers) {
        if (f.state == s) ids.push_back(f.linear);
    }
    return ids;
}

// Some threads returned and every other one waits at a barrier: it can never complete.
static std::string divergence_exited(const Block& b, const Fiber& culprit) {
    const std::vector<int> waiting = threads_where(b, State::Barrier), gone = threads_where(b, State::Exited);
    const Fiber& w = b.fibers[waiting.front()];
    std::ostringstream s;
    s << "threads " << thread_list(b, waiting) << " wait at " << sync_name(w.sync) << " at " << w.file << ":" << w.line
      << ", but threads " << thread_list(b, gone)
      << " returned without reaching it (every thread of a block must reach each __syncthreads)";
    return located(b, "barrier divergence", s.str(), w.file, w.line, &culprit);
}

static bool same_barrier(const Fiber& a, const Fiber& b) {
    return a.sync == b.sync && a.line == b.line && std::strcmp(a.file, b.file) == 0;
}

static void complete_barrier(Block& b, Fiber& last) {
    const Fiber& first = b.fibers.front();
    for (const Fiber& f : b.fibers) {
        if (!same_barrier(f, first)) {
            std::vector<int> here_ids, there_ids;
            for (const Fiber& g : b.fibers) (same_barrier(g, first) ? here_ids : there_ids).push_back(g.linear);
            const Fiber& other = b.fibers[there_ids.front()];
            std::ostringstream s;
            s << "threads " << thread_list(b, here_ids) << " wait at " << sync_name(first.sync) << " at " << first.file
              << ":" << first.line << ", threads " << thread_list(b, there_ids) << " at " << sync_name(other.sync)
              << " at " << other.file << ":" << other.line
              << " (every thread of a block must reach the same __syncthreads)";
            record_divergence(b, located(b, "barrier divergence", s.str(), other.file, other.line, &other));
            stop(b, last);
        }
    }
    if (!b.race.empty()) {  // every thread reached this barrier: the race held back is no divergence's
        record(b, b.race);
        stop(b, last);
    }
    int count = 0;
    for (const Fiber& f : b.fibers) count += f.predicate;
    const int result = first.sync == Sync::Count ? count
                       : first.sync == Sync::And ? (count == b.threads)
                       : first.sync == Sync::Or  ? (count > 0)
                                                 : 0;
    for (Fiber& f : b.fibers) {
        f.sync_result = result;
        f.state = State::Ready;
        if (&f != &last) b.ready.push_back(f.linear);
    }
    b.at_barrier = 0;
    ++b.epoch;
    async::share_seen(-1, 0);
    if (hooks().barrier_done) hooks().barrier_done(b.epoch);
}

int barrier(Sync kind, int predicate, const char* file, int line) {
    Fiber& f = here(sync_name(kind), file, line);
    Block& b = *f.block;
    made_progress(b, f);
    f.state = State::Barrier;
    f.file = file;
    f.line = line;
    f.sync = kind;
    f.predicate = predicate;
    if (++b.at_barrier == b.threads) {
        complete_barrier(b, f);
        return f.sync_result;
    }
    if (b.at_barrier + b.exited == b.threads) {
        record_divergence(b, divergence_exited(b, b.fibers[threads_where(b, State::Exited).front()]));
        stop(b, f);
    }
    wait_here(b, f);
    return f.sync_result;
}

void yield(const char* file, int line) {
    Fiber& f = here("__nanosleep", file, line);
    Block& b = *f.block;
    // A __nanosleep is a poll too: a loop of them with nothing written waits on memory.
    f.spin_file = file;
    f.spin_line = line;
    if (!watched(f, nullptr, false, nullptr)) {
        b.ready.push_back(f.linear);
        wait_here(b, f);
    }
}

// ---- warp intrinsics -------------------------------------------------------------------------------

static bool same_call(const WarpCall& a, const WarpCall& b) {
    if (a.op != b.op || a.mask != b.mask) return false;
    if (a.op == WarpOp::SyncWarp) return true;  // __syncwarp calls on different lines may meet (sm_70+)
    if (a.op == WarpOp::Collective && a.value != b.value) return false;
    // The operand's size too: one line of a template may be a call on another type in each lane.
    return a.line == b.line && a.width == b.width && a.size == b.size && std::strcmp(a.file, b.file) == 0;
}

static std::string lane_list(unsigned mask) {
    std::ostringstream s;
    int shown = 0;
    for (int l = 0; l < 32; ++l) {
        if (mask & (1u << l)) {
            if (shown == 4) {
                s << " and " << __builtin_popcount(mask) - 4 << " more";
                break;
            }
            s << (shown++ ? ", " : "") << l;
        }
    }
    return s.str();
}

template <typename T>
static T load(const WarpCall& c) {
    T v{};
    std::memcpy(&v, c.value, sizeof(T) < static_cast<size_t>(c.size) ? sizeof(T) : static_cast<size_t>(c.size));
    return v;
}

template <typename T>
static T reduce(WarpOp op, const std::vector<const WarpCall*>& calls) {
    T r = load<T>(*calls.front());
    for (size_t i = 1; i < calls.size(); ++i) {
        const T v = load<T>(*calls[i]);
        switch (op) {
            case WarpOp::ReduceAdd: r = static_cast<T>(r + v); break;
            case WarpOp::ReduceMin: r = v < r ? v : r; break;
            case WarpOp::ReduceMax: r = v > r ? v : r; break;
            case WarpOp::ReduceAnd: r &= v; break;
            case WarpOp::ReduceOr: r |= v; break;
            default: r ^= v; break;
        }
    }
    return r;
}

// The source lane of a shuffle for `lane`, or `lane` itself where CUDA returns the caller's value.
// `c` is that lane's own call: the source lane, delta or lane mask may differ from lane to lane.
static int source_lane(const WarpCall& c, int lane) {
    const int w = c.width, group = lane & ~(w - 1), in_group = lane & (w - 1);
    switch (c.op) {
        case WarpOp::Shfl: return group | (c.param & (w - 1));
        case WarpOp::ShflUp: return in_group >= c.param ? lane - c.param : lane;
        case WarpOp::ShflDown: return in_group + c.param < w ? lane + c.param : lane;
        default: {
            const int s = lane ^ c.param;
            return (s >= 32 || (s & ~(w - 1)) > group) ? lane : s;
        }
    }
}

static void complete_warp(Block& b, int w, Fiber& caller, const WarpCall& c) {
    async::share_seen(w, c.mask);
    if (hooks().warp_done) hooks().warp_done(w, c.mask);
    std::vector<const WarpCall*> calls(32, nullptr);
    std::vector<const WarpCall*> taking;
    for (int l = 0; l < 32; ++l) {
        if (c.mask & (1u << l)) {
            calls[l] = b.fibers[w * 32 + l].call;
            taking.push_back(calls[l]);
        }
    }
    switch (c.op) {
        case WarpOp::Shfl: case WarpOp::ShflUp: case WarpOp::ShflDown: case WarpOp::ShflXor:
            for (int l = 0; l < 32; ++l) {
                if (!calls[l]) continue;
                const int s = source_lane(*calls[l], l);
                if (!calls[s]) {
                    std::ostringstream m;
                    m << "lane " << l << " reads lane " << s << " of " << op_name(c.op) << " with mask " << hex(c.mask)
                      << ", which does not name lane " << s << ": the value it gets is undefined";
                    record(b, located(b, "warp mask", m.str(), c.file, c.line, &b.fibers[w * 32 + l]));
                    stop(b, caller);
                }
                std::memcpy(calls[l]->result, calls[s]->value, static_cast<size_t>(c.size));
            }
            break;
        case WarpOp::Ballot: case WarpOp::Any: case WarpOp::All: {
            unsigned ballot = 0;
            for (int l = 0; l < 32; ++l) {
                if (calls[l] && calls[l]->param) ballot |= 1u << l;
            }
            for (const WarpCall* k : taking) {
                if (c.op == WarpOp::Ballot) *static_cast<unsigned*>(k->result) = ballot;
                else *static_cast<int*>(k->result) = c.op == WarpOp::Any ? ballot != 0 : ballot == c.mask;
            }
            break;
        }
        case WarpOp::MatchAny: case WarpOp::MatchAll: {
            bool all = true;
            for (int l = 0; l < 32; ++l) {
                if (!calls[l]) continue;
                unsigned same = 0;
                for (int m = 0; m < 32; ++m) {
                    if (calls[m] && std::memcmp(calls[m]->value, calls[l]->value, static_cast<size_t>(c.size)) == 0) same |= 1u << m;
                }
                all = all && same == c.mask;
                *static_cast<unsigned*>(calls[l]->result) = same;
            }
            if (c.op == WarpOp::MatchAll) {
                for (const WarpCall* k : taking) {
                    *static_cast<unsigned*>(k->result) = all ? c.mask : 0u;
                    const_cast<WarpCall*>(k)->aux = all;
                }
            }
            break;
        }
        case WarpOp::ReduceAdd: case WarpOp::ReduceMin: case WarpOp::ReduceMax:
        case WarpOp::ReduceAnd: case WarpOp::ReduceOr: case WarpOp::ReduceXor:
            if (c.is_signed) {
                const int r = reduce<int>(c.op, taking);
                for (const WarpCall* k : taking) std::memcpy(k->result, &r, sizeof r);
            } else {
                const unsigned r = reduce<unsigned>(c.op, taking);
                for (const WarpCall* k : taking) std::memcpy(k->result, &r, sizeof r);
            }
            break;
        case WarpOp::Collective: {
            void* lanes[32];
            for (int l = 0; l < 32; ++l) lanes[l] = calls[l] ? calls[l]->result : nullptr;
            static_cast<const Collective*>(c.value)->complete(lanes, c.mask);
            break;
        }
        default:
            break;
    }
    b.warp_waiting[w] &= ~c.mask;
    for (int l = 0; l < 32; ++l) {
        if (!calls[l]) continue;
        Fiber& f = b.fibers[w * 32 + l];
        f.state = State::Ready;
        f.call = nullptr;
        if (&f != &caller) b.ready.push_back(f.linear);
    }
}

void warp(WarpCall& c) {
    Fiber& f = here(op_name(c.op), c.file, c.line);
    Block& b = *f.block;
    made_progress(b, f);
    const int w = f.linear / 32, lane = f.linear % 32;
    const unsigned bit = 1u << lane;
    f.call = &c;
    f.file = c.file;
    f.line = c.line;
    if (c.op == WarpOp::ActiveMask) {  // resolved by the scheduler once the warp's other lanes wait
        f.state = State::Warp;
        b.warp_waiting[w] |= bit;
        wait_here(b, f);
        return;
    }
    const bool shuffle = c.op == WarpOp::Shfl || c.op == WarpOp::ShflUp || c.op == WarpOp::ShflDown || c.op == WarpOp::ShflXor;
    std::ostringstream m;
    if (!(c.mask & bit)) {
        m << "lane " << lane << " calls " << call_name(c) << " with mask " << hex(c.mask)
          << ", which does not name the calling lane";
    } else if (unsigned absent = c.mask & ~b.warp_present[w]) {
        m << call_name(c) << " with mask " << hex(c.mask) << " names lanes " << lane_list(absent)
          << ", which do not exist: this warp of a " << b.threads << "-thread block has "
          << __builtin_popcount(b.warp_present[w]) << " lanes";
    } else if (unsigned gone = c.mask & b.warp_exited[w]) {
        m << call_name(c) << " with mask " << hex(c.mask) << " names lanes " << lane_list(gone)
          << ", which have already returned";
    } else if (shuffle && (c.width < 1 || c.width > 32 || (c.width & (c.width - 1)))) {
        m << op_name(c.op) << " with width " << c.width << ": the width must be a power of 2 from 1 to 32";
    }
    if (!m.str().empty()) {
        record(b, located(b, "warp mask", m.str(), c.file, c.line, &f));
        stop(b, f);
    }
    f.state = State::Warp;
    b.warp_waiting[w] |= bit;
    if ((b.warp_waiting[w] & c.mask) == c.mask) {
        bool all_here = true;
        for (int l = 0; l < 32 && all_here; ++l) {
            if (c.mask & (1u << l)) {
                const Fiber& g = b.fibers[w * 32 + l];
                all_here = g.state == State::Warp && g.call && same_call(*g.call, c);
            }
        }
        if (all_here) {
            complete_warp(b, w, f, c);
            return;
        }
    }
    wait_here(b, f);
}

// A lane that returns while others wait for it at a warp intrinsic, or while the rest of the
// block waits at a barrier, makes that wait impossible: reported at once.
static void check_exit(Block& b, Fiber& f) {
    ++b.exited;
    b.moved = true;
    const int w = f.linear / 32;
    const unsigned bit = 1u << (f.linear % 32);
    b.warp_exited[w] |= bit;
    for (int l = 0; l < 32; ++l) {
        if (!(b.warp_waiting[w] & (1u << l))) continue;
        const Fiber& g = b.fibers[w * 32 + l];
        if (g.call && g.call->op != WarpOp::ActiveMask && (g.call->mask & bit)) {
            std::ostringstream m;
            m << "lanes of this warp wait at " << call_name(*g.call) << " with mask " << hex(g.call->mask) << " for lane "
              << f.linear % 32 << ", which returned without reaching it";
            record(b, located(b, "warp mask", m.str(), g.file, g.line, &f));
            return;
        }
    }
    if (b.at_barrier > 0 && b.at_barrier + b.exited == b.threads) record_divergence(b, divergence_exited(b, f));
}

// Nothing can run and some threads have not returned: say what each waits for.
static void diagnose(Block& b) {
    for (const Fiber& f : b.fibers) {
        if (f.state != State::Warp || !f.call || f.call->op == WarpOp::ActiveMask) continue;
        const int w = f.linear / 32;
        for (int l = 0; l < 32; ++l) {
            if (!(f.call->mask & (1u << l))) continue;
            const Fiber& g = b.fibers[w * 32 + l];
            if (g.state == State::Warp && g.call && same_call(*g.call, *f.call)) continue;
            if (g.state == State::Barrier) {  // lane l waits at a barrier this lane went past: a barrier in a branch
                std::ostringstream d;
                d << "thread " << triple(g.index) << " waits at " << sync_name(g.sync) << " at " << g.file << ":" << g.line
                  << ", which thread " << triple(f.index) << " of its warp went past: it waits at " << call_name(*f.call)
                  << " at " << f.file << ":" << f.line
                  << " for it (every thread of a block must reach each __syncthreads)";
                record_divergence(b, located(b, "barrier divergence", d.str(), g.file, g.line, &g));
                return;
            }
            std::ostringstream m;
            m << "lane " << f.linear % 32 << " waits at " << call_name(*f.call) << " with mask " << hex(f.call->mask)
              << " for lane " << l << ", which is at " << where(g);
            if (g.state == State::Warp && g.call && g.call->op == f.call->op && g.line == f.line)
                m << " with mask " << hex(g.call->mask);
            m << " (every lane a mask names must reach the same call with the same mask)";
            record(b, located(b, "warp mask", m.str(), f.file, f.line, &f));
            return;
        }
    }
    std::ostringstream m;
    m << "no thread of the block can go on:";
    const char* file = b.launch->site.file;
    int line = b.launch->site.line;
    const Fiber* first = nullptr;
    for (const Fiber& f : b.fibers) {
        if (f.state == State::Exited) continue;
        if (!first) {
            first = &f;
            file = f.file ? f.file : file;
            line = f.file ? f.line : line;
        }
    }
    std::vector<int> waiting;
    for (const Fiber& f : b.fibers) {
        if (f.state != State::Exited) waiting.push_back(f.linear);
    }
    m << " threads " << thread_list(b, waiting) << " wait (the first at " << (first ? where(*first) : "?") << ")";
    record(b, located(b, "deadlock", m.str(), file, line, first));
}

// __activemask: the lanes of the warp that reached the same call together. Resolved when no
// thread can run, so every lane that will get there has.
static bool resolve_activemask(Block& b) {
    bool any = false;
    for (Fiber& f : b.fibers) {
        if (f.state != State::Warp || !f.call || f.call->op != WarpOp::ActiveMask) continue;
        const int w = f.linear / 32;
        unsigned mask = 0;
        for (int l = 0; l < 32; ++l) {
            const Fiber* g = w * 32 + l < b.threads ? &b.fibers[w * 32 + l] : nullptr;
            if (g && g->state == State::Warp && g->call && g->call->op == WarpOp::ActiveMask && g->line == f.line &&
                std::strcmp(g->file, f.file) == 0)
                mask |= 1u << l;
        }
        for (int l = 0; l < 32; ++l) {
            if (!(mask & (1u << l))) continue;
            Fiber& g = b.fibers[w * 32 + l];
            *static_cast<unsigned*>(g.call->result) = mask;
            g.call = nullptr;
            g.state = State::Ready;
            b.ready.push_back(g.linear);
        }
        b.warp_waiting[w] &= ~mask;
        any = true;
    }
    std::sort(b.ready.begin(), b.ready.end());
    return any;
}

// ---- shared memory ---------------------------------------------------------------------------------

constexpr size_t kMaxShared = 232448;       // an H100 block's shared memory, with the opt-in
constexpr size_t kMaxStaticShared = 49152;  // what a kernel may declare statically
constexpr size_t kDynamicAlign = 128;

// What a launch may take beyond a kernel's static shared memory: 48 KiB in all unless cudaFuncSetAttribute
// (MaxDynamicSharedMemorySize) raised it, as on a GPU, which refuses a launch past it ("invalid argument").
// A kernel.cu that forgets the opt-in runs everywhere but on the GPU without this check.
// A fact a GPU keeps per kernel (its cluster shape, its shared-memory allowance), set by one call and
// read at each launch: the last value set wins.
template <typename V>
class PerKernel {
public:
    void set(const void* kernel, V value) {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [k, v] : table_) {
            if (k == kernel) {
                v = value;
                return;
            }
        }
        table_.emplace_back(kernel, value);
    }
    std::optional<V> get(const void* kernel) {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [k, v] : table_) {
            if (k == kernel) return v;
        }
        return std::nullopt;
    }

private:
    std::mutex mutex_;
    std::vector<std::pair<const void*, V>> table_;
};

static PerKernel<size_t>& dynamic_shared_allowed() {
    static PerKernel<size_t> table;
    return table;
}

void set_max_dynamic_shared(const void* kernel, size_t bytes) { dynamic_shared_allowed().set(kernel, bytes); }

// Empty, or why a GPU would refuse to launch with `dynamic` bytes of dynamic shared memory beside the
// `static_bytes` the kernel declares (those reached so far on the CPU).
static std::string dynamic_shared_error(const Launch& l, size_t static_bytes) {
    const size_t dynamic = l.config.shared_bytes;
    const std::optional<size_t> allowed = dynamic_shared_allowed().get(l.kernel);
    std::ostringstream s;
    if (allowed && dynamic > *allowed) {
        s << dynamic << " bytes of dynamic shared memory, more than the " << *allowed
          << " that cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ...) last allowed this "
             "kernel: a GPU refuses the launch (invalid argument); allow at least the launch's bytes first";
    } else if (!allowed && dynamic + static_bytes > kMaxStaticShared) {
        s << dynamic << " bytes of dynamic shared memory";
        if (static_bytes) s << " beside " << static_bytes << " bytes of static __shared__";
        s << ", more than the 48 KiB (" << kMaxStaticShared << " bytes) a kernel has until cudaFuncSetAttribute(kernel, "
          << "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) raises it: a GPU refuses the launch (invalid "
             "argument); call it before the launch, with at least the dynamic bytes";
    }
    return s.str();
}

static SharedRegion& add_region(Block& b, const void* key, size_t size, size_t align, const char* name,
                                const char* file, int line, const SharedRegion* shape = nullptr) {
    const size_t offset = (b.arena_used + align - 1) / align * align;
    b.arena_used = offset + size;
    char* data = b.arena.data() + offset;
    std::memset(data, 0xff, size);  // NaN in every float type: an unwritten element shows
    b.regions.push_back(SharedRegion{key, data, size, name, file, line});
    if (shape) {
        b.regions.back().element_size = shape->element_size;
        b.regions.back().rank = shape->rank;
        std::memcpy(b.regions.back().dims, shape->dims, sizeof shape->dims);
        b.regions.back().fields = shape->fields;
    }
    if (hooks().shared_allocated) hooks().shared_allocated(b.regions.back());
    return b.regions.back();
}

void* shared_storage(const void* key, size_t size, size_t align, const char* name, const char* file, int line,
                     const SharedRegion* shape) {
    Fiber& f = here("__shared__", file, line);
    Block& b = *f.block;
    for (const SharedRegion& r : b.regions) {
        if (r.key == key) return r.data;
    }
    // At least 16-byte aligned, as nvcc places shared arrays in practice: a kernel reading a
    // __shared__ float array as float4 must not fault here (the checked build's alignment check)
    // where it runs on a GPU.
    align = align > 16 ? align : 16;
    b.static_shared += size;
    if (b.static_shared > kMaxStaticShared) {
        fault("shared memory", "__shared__ " + std::string(name) + " brings the kernel's static shared memory to " +
                                   std::to_string(b.static_shared) + " bytes, more than the 48 KiB a kernel may declare",
              file, line);
    }
    if (const std::string bad = dynamic_shared_error(*b.launch, b.static_shared); !bad.empty()) {
        fault("invalid configuration argument", "__shared__ " + std::string(name) + ": " + bad, file, line);
    }
    if ((b.arena_used + align - 1) / align * align + size > kMaxShared) {
        fault("shared memory", "__shared__ " + std::string(name) + " does not fit: with the dynamic shared memory the block would use more than " +
                                   std::to_string(kMaxShared) + " bytes",
              file, line);
    }
    return add_region(b, key, size, align, name, file, line, shape).data;
}

void* dynamic_shared_storage(const char* file, int line) {
    Fiber& f = here("extern __shared__", file, line);
    return f.block->arena.data();
}

// ---- waiting on memory: spins, blocks that wait for blocks, deadlock ------------------------------
// A thread spinning on memory (a flag another block sets, a lock) never reaches a barrier, so on
// its OS thread nothing else would run. Its polls are seen: every atomic, every load and store of
// a checked build (brrr_cpu_memcheck.cpp) and every __nanosleep call watch(). kSpinSlice polls in
// a row that read at most kSpinAddresses addresses and write nothing are a spin: the thread gives
// way to the other threads of its block. A block whose every thread spins or waits is stalled: the
// launch starts the next block beside it, on another OS thread (a GPU has many blocks resident),
// up to BRRR_CPU_RESIDENT blocks at once (default 64). When every running block is stalled, none
// is left to start, and no thread has made progress during kQuietRounds rounds of each, nothing
// can change what they read: a deadlock, reported at once with the line that polls.

constexpr int kSpinSlice = 4096;
constexpr int kSpinAddresses = 8;
constexpr int kQuietRounds = 3;

// ---- thread block clusters -----------------------------------------------------------------------
// A GPU runs a cluster's blocks at once. Here the launch hands blocks out cluster by cluster
// (block_of), and a block waiting at the cluster barrier is a stalled block, so its siblings start
// beside it, as a cooperative grid's blocks do. barrier.cluster is per thread: every thread of every
// block of the cluster arrives, and a round completes with the last arrival. A block's shared memory
// is its worker's arena; distributed shared memory is the same offset in a sibling's arena while the
// sibling runs (members: its Block, from its start to its end).
constexpr int kMaxCluster = 16;  // the non-portable limit (8 without cudaFuncAttributeNonPortableClusterSizeAllowed)

struct ClusterState {
    std::atomic<int64_t> arrived{0};
    std::atomic<uint64_t> rounds{0};
    std::atomic<Block*> members[kMaxCluster] = {};
};

// Blocks in a grid or a cluster (threads in a block).
static int64_t volume(dim3 d) { return int64_t(d.x) * d.y * d.z; }

// Block `i` of the launch's order: clusters one after another, a cluster's blocks by rank (x fastest),
// so a cluster's blocks are consecutive. Without clusters (1 x 1 x 1) the order is blockIdx's, x fastest.
static uint3 block_of(int64_t i, dim3 g, dim3 c) {
    const int64_t size = volume(c), k = i / size, r = i % size;
    const int64_t nx = g.x / c.x, ny = g.y / c.y;
    return uint3{static_cast<unsigned>((k % nx) * c.x + r % c.x), static_cast<unsigned>(((k / nx) % ny) * c.y + (r / c.x) % c.y),
                 static_cast<unsigned>((k / (nx * ny)) * c.z + r / (int64_t(c.x) * c.y))};
}

struct Coordination {
    std::unique_ptr<ClusterState[]> clusters;  // one a cluster, in a launch of clusters of more than one block
    std::mutex mutex;
    std::atomic<uint64_t> progress{0};
    // A cooperative launch's grid-wide barrier: blocks arrived at this round of it, and rounds done.
    std::atomic<int64_t> grid_arrived{0};
    std::atomic<uint64_t> grid_rounds{0};
    // A block faulted: blocks waiting on it (at a grid barrier, or polling memory it would have written)
    // wait in vain; they stop, and the launch reports the block that faulted.
    std::atomic<bool> block_failed{false};
    std::vector<Block*> blocks;          // the running workers' blocks
    std::function<bool()> start_worker;  // another worker beside the others; false if none may start
    std::function<bool()> none_left;     // no block left to start, or no more may run at once
    std::atomic<bool> deadlock{false};  // written under the mutex; a grid barrier's poll reads it without
};

// Whether a waiting block waits in vain: another block of the launch faulted (a deadlock found is every
// waiting block's own to report).
static bool waits_in_vain(const Coordination& c) { return !c.deadlock && c.block_failed.load(); }

// One poll of a thread waiting at a barrier of several blocks (the scheduler sees it spin, and lets
// other threads and blocks run); a stop where a block the barrier needs has faulted.
static void poll_blocks(Fiber& f, BlockWait at, const char* kind, const char* others, const char* file, int line) {
    if (waits_in_vain(*f.block->coordination)) {
        f.block->abandoned = true;  // the launch reports the block that faulted, not this one
        fault(kind, std::string("abandoned: ") + others + " faulted", file, line);
    }
    f.spin_file = file;
    f.spin_line = line;
    f.spin_barrier = at;
    watched(f, nullptr, false, nullptr);
}

static int max_resident() {
    const char* env = std::getenv("BRRR_CPU_RESIDENT");
    return env && std::atoi(env) > 0 ? std::atoi(env) : 64;
}

static bool watched(Fiber& f, const void* address, bool write, const void* pc) {
    Block& b = *f.block;
    if (write) {
        f.wrote = true;
    } else if (address && f.distinct <= kSpinAddresses) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(address);
        bool known = false;
        for (int i = 0; i < f.distinct && i < kSpinAddresses; ++i) known = known || f.seen[i] == a;
        if (!known) {
            if (f.distinct < kSpinAddresses) f.seen[f.distinct] = a;
            ++f.distinct;
        }
        f.spin_pc = pc;
        f.spin_address = a;
        f.spin_file = nullptr;
        f.spin_barrier = BlockWait::None;
    }
    if (++f.polls < kSpinSlice) return false;
    if (f.wrote || f.distinct > kSpinAddresses) {
        made_progress(b, f);
        return false;
    }
    f.polls = 0;
    f.distinct = 0;
    f.spinning = true;
    b.ready.push_back(f.linear);
    wait_here(b, f);
    return true;
}

void watch(const void* address, bool write, const void* pc) {
    if (running_fiber) watched(*running_fiber, address, write, pc);
}

// kernel.cu:line of the code at `pc` (a return address): addr2line on the loaded object's line
// table (DWARF 4 in a checked build: binutils 2.40 misreads gcc 12's DWARF 5 after #line).
std::string place_of(const void* pc) {
    Dl_info info{};
    if (!pc || dladdr(pc, &info) == 0 || info.dli_fname == nullptr) return "";
    const uintptr_t offset = reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase) - 1;
    std::ostringstream command;
    command << "addr2line -e '" << info.dli_fname << "' 0x" << std::hex << offset << " 2>/dev/null";
    std::string out;
    if (FILE* p = popen(command.str().c_str(), "r")) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        pclose(p);
    }
    out = out.substr(0, out.find('\n'));
    const auto colon = out.rfind(':');
    if (colon == std::string::npos || std::atoi(out.c_str() + colon + 1) <= 0) return "";
    return out.substr(0, colon + 1) + std::to_string(std::atoi(out.c_str() + colon + 1));
}

static bool block_stalled(const Block& b) {
    if (b.moved || b.ready.empty()) return false;
    for (int t : b.ready) {
        if (!b.fibers[t].spinning) return false;
    }
    return true;
}

static void report_deadlock(Block& b, int resident) {
    const Fiber* spinner = nullptr;
    for (int t : b.ready) {
        if (!spinner && b.fibers[t].spinning) spinner = &b.fibers[t];
    }
    if (!spinner) return;
    std::string place = spinner->spin_file ? std::string(spinner->spin_file) + ":" + std::to_string(spinner->spin_line)
                                           : place_of(spinner->spin_pc);
    if (place.empty()) place = std::string(b.launch->site.file) + ":" + std::to_string(b.launch->site.line);
    const auto colon = place.rfind(':');
    const std::string file = place.substr(0, colon);
    std::ostringstream m;
    if (spinner->spin_barrier == BlockWait::Grid) {
        m << "this block waits at the grid-wide barrier (this_grid().sync()) for blocks that will never reach it: "
             "every block of a cooperative launch must call it as often as the others, and some returned first or "
             "wait elsewhere (a GPU hangs here)";
    } else if (spinner->spin_barrier == BlockWait::Cluster) {
        m << "this thread waits at the cluster barrier (cluster.sync(), barrier.cluster.wait) for threads that will "
             "never arrive: every thread of every block of the cluster must arrive as often as the others, and some "
             "returned first or wait elsewhere (a GPU hangs here)";
    } else if (spinner->spin_barrier == BlockWait::Named) {
        m << "this thread waits at a named barrier (bar.sync) for threads that will never arrive: as many threads as "
             "its count must arrive (bar.sync or bar.arrive with the same barrier and count) in each round, and the "
             "others returned or wait elsewhere (a GPU hangs here)";
    } else {
        m << "this thread waits on memory: it polls ";
        if (spinner->spin_file) m << "with __nanosleep";
        else m << "address 0x" << std::hex << spinner->spin_address << std::dec;
        m << " again and again and writes nothing, and so does every other thread still running that is not at a "
             "barrier, in every block running, with none left to start (at most " << resident
          << " run at once: BRRR_CPU_RESIDENT): nothing can change what they wait for (a flag no thread sets, a lock "
             "no thread releases, or blocks waiting on more blocks than run at once)";
    }
    record(b, located(b, "deadlock", m.str(), file.c_str(), std::atoi(place.c_str() + colon + 1), spinner));
}

// The block is stalled after a round: ask for another block beside it, and decide deadlock.
static void wait_for_others(Block& b) {
    Coordination& c = *b.coordination;
    bool start = false;
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        const uint64_t now = c.progress.load();
        if (!b.stalled || b.quiet_since != now) {
            b.stalled = true;
            b.quiet_since = now;
            b.quiet_rounds = 0;
        }
        ++b.quiet_rounds;
        if (waits_in_vain(c)) {  // what it waits for may be a failed block's to do
            b.abandoned = true;
            record(b, "abandoned: waiting on memory after another block of the launch faulted");
            return;
        }
        start = !b.asked;
        b.asked = true;
        if (!c.deadlock && c.none_left()) {
            bool all_quiet = true;
            for (const Block* o : c.blocks) {
                all_quiet = all_quiet && o->stalled && o->quiet_since == now && o->quiet_rounds >= kQuietRounds;
            }
            c.deadlock = all_quiet;
        }
        if (c.deadlock) {
            report_deadlock(b, max_resident());
            return;
        }
    }
    if (start) c.start_worker();
    sched_yield();  // what it waits for runs on another OS thread
}

// A round of the scheduler ended: publish progress, or handle a stalled block.
static void after_round(Block& b) {
    if (!b.coordination) return;
    if (b.moved) {
        b.coordination->progress.fetch_add(1);
        if (b.stalled) {
            std::lock_guard<std::mutex> lock(b.coordination->mutex);
            b.stalled = false;
            b.asked = false;
        }
    } else if (!b.failed && block_stalled(b)) {
        wait_for_others(b);
    }
    b.moved = false;
}

// ---- running a launch --------------------------------------------------------------------------------

static void resume(Block& b, Fiber& f) {
    if (f.state == State::Fresh) {
        f.stack = take_stack();
        make_context(f.context, f.stack, stack_size(), fiber_main, &f);
        f.state = State::Ready;
    }
    threadIdx = f.index;
    running_fiber = &f;
    if (b.single_worker) {
        brrr_cpu_debug_thread[0] = static_cast<int>(f.index.x);
        brrr_cpu_debug_thread[1] = static_cast<int>(f.index.y);
        brrr_cpu_debug_thread[2] = static_cast<int>(f.index.z);
    }
    if (hooks().thread_resumed) hooks().thread_resumed(f.linear, f.stack, f.stack + stack_size());
    switch_context(b.scheduler, f.context);
    running_fiber = nullptr;
    if (f.state == State::Exited) {
        give_stack(f.stack);
        f.stack = nullptr;
        if (!b.failed) check_exit(b, f);
    }
}

static ClusterState* cluster_state(const Block& b) {
    return b.cluster_id < 0 ? nullptr : &b.coordination->clusters[b.cluster_id];
}

static void join_cluster(Block& b, uint3 index) {
    const dim3 c = b.launch->config.cluster, g = b.launch->config.grid;
    b.cluster_id = -1;
    b.cluster_rank = 0;
    if (volume(c) == 1 || !b.coordination) return;
    b.cluster_rank = index.x % c.x + c.x * (index.y % c.y + c.y * (index.z % c.z));
    b.cluster_id = index.x / c.x + int64_t(g.x / c.x) * (index.y / c.y + int64_t(g.y / c.y) * (index.z / c.z));
    cluster_state(b)->members[b.cluster_rank].store(&b);
}

static void leave_cluster(Block& b) {
    if (ClusterState* s = cluster_state(b)) s->members[b.cluster_rank].store(nullptr);
}

static void run_block(Block& b, uint3 index) {
    const dim3 dim = b.launch->config.block;
    b.index = index;
    static std::atomic<uint64_t> serials{0};
    b.serial = ++serials;
    b.fibers.assign(static_cast<size_t>(b.threads), Fiber{});
    for (int t = 0; t < b.threads; ++t) {
        Fiber& f = b.fibers[t];
        f.block = &b;
        f.linear = t;
        f.index = uint3{t % dim.x, (t / dim.x) % dim.y, t / (dim.x * dim.y)};
    }
    const int warps = (b.threads + 31) / 32;
    b.warp_waiting.assign(warps, 0u);
    b.warp_exited.assign(warps, 0u);
    b.warp_present.assign(warps, 0xffffffffu);
    if (b.threads % 32) b.warp_present.back() = (1u << (b.threads % 32)) - 1;
    b.exited = b.at_barrier = 0;
    b.moved = false;
    b.abandoned = false;
    b.race.clear();
    if (b.coordination) {
        std::lock_guard<std::mutex> lock(b.coordination->mutex);
        b.stalled = b.asked = false;
    }
    b.arena_used = 0;
    b.static_shared = 0;
    b.regions.clear();
    b.ready.clear();
    const size_t dynamic = b.launch->config.shared_bytes;
    add_region(b, "extern", dynamic, kDynamicAlign, "extern __shared__", b.launch->site.file, b.launch->site.line);
    blockIdx = index;
    blockDim = dim;
    gridDim = b.launch->config.grid;
    join_cluster(b, index);
    if (b.single_worker) {
        brrr_cpu_debug_block[0] = static_cast<int>(index.x);
        brrr_cpu_debug_block[1] = static_cast<int>(index.y);
        brrr_cpu_debug_block[2] = static_cast<int>(index.z);
    }
    running_block = &b;
    if (hooks().block_begin) hooks().block_begin(*b.launch, index);
    for (int t = 0; t < b.threads; ++t) b.ready.push_back(t);
    while (!b.failed) {
        if (b.ready.empty()) {
            if (b.exited == b.threads) break;
            if (!resolve_activemask(b)) {
                diagnose(b);
                break;
            }
            continue;
        }
        b.running.swap(b.ready);
        b.ready.clear();
        for (int t : b.running) {
            if (b.failed) break;
            Fiber& f = b.fibers[t];
            if (f.state == State::Ready || f.state == State::Fresh) resume(b, f);
        }
        after_round(b);
    }
    if (!b.race.empty()) record(b, b.race);  // the block ended with no barrier after its race
    leave_cluster(b);
    for (Fiber& f : b.fibers) {  // a failed block's threads are abandoned where they stand
        if (f.stack) give_stack(f.stack);
        f.stack = nullptr;
    }
    if (hooks().block_end) hooks().block_end(*b.launch, index);
    running_block = nullptr;
}

static int workers_setting() {
    const char* env = std::getenv("BRRR_CPU_WORKERS");
    if (env && std::atoi(env) > 0) return std::atoi(env);
    return 1;
}

static std::string config_error(const Launch& l) {
    const dim3 g = l.config.grid, k = l.config.block;
    const uint64_t threads = uint64_t(k.x) * k.y * k.z;
    std::ostringstream s;
    if (threads == 0 || threads > 1024 || k.x > 1024 || k.y > 1024 || k.z > 64)
        s << "block " << triple(uint3{k.x, k.y, k.z}) << " has " << threads
          << " threads: a block has 1 to 1024 (x and y at most 1024, z at most 64)";
    else if (g.x == 0 || g.y == 0 || g.z == 0)
        s << "grid " << triple(uint3{g.x, g.y, g.z}) << " has no blocks";
    else if (g.x > 2147483647u || g.y > 65535 || g.z > 65535)
        s << "grid " << triple(uint3{g.x, g.y, g.z}) << " is too large: x at most 2^31 - 1, y and z at most 65535";
    else if (l.config.shared_bytes > kMaxShared)
        s << l.config.shared_bytes << " bytes of dynamic shared memory: a block has at most " << kMaxShared;
    else if (const std::string shared = dynamic_shared_error(l, 0); !shared.empty())
        s << shared;
    else if (const dim3 c = l.config.cluster; c.x == 0 || c.y == 0 || c.z == 0 || volume(c) > kMaxCluster)
        s << "cluster " << triple(uint3{c.x, c.y, c.z}) << " has " << volume(c) << " blocks: a cluster has 1 to 8 (16 "
          << "where the kernel allows non-portable sizes)";
    else if (g.x % c.x || g.y % c.y || g.z % c.z)
        s << "grid " << triple(uint3{g.x, g.y, g.z}) << " is not a whole number of clusters " << triple(uint3{c.x, c.y, c.z})
          << ": each grid dimension must be a multiple of the cluster's";
    else if (l.config.cooperative && volume(c) > 1)
        s << "a cooperative launch with clusters (brrr's CPU execution runs one or the other)";
    return s.str();
}

static std::unique_ptr<Block> make_block(const Launch& launch, void (*thread_main)(void*), void* context, bool single) {
    auto b = std::make_unique<Block>();
    b->launch = &launch;
    b->thread_main = thread_main;
    b->context = context;
    const dim3 k = launch.config.block;
    b->threads = static_cast<int>(k.x * k.y * k.z);
    b->arena.assign(kMaxShared + kDynamicAlign, 0);
    b->single_worker = single;
    return b;
}

// ---- the time limit ----------------------------------------------------------------------------------
// A thread that spins waiting for another thread of its block (which runs only when this one waits
// at __syncthreads, a warp intrinsic or __nanosleep) or for another block (blocks run one after
// another) never ends here. When the launch's workers have spent its time limit in CPU time (so a
// loaded machine does not stop a kernel that is merely slow), or 4 times it in wall time, a
// watchdog signals them; the handler, on the looping fiber's stack, records where it is (the
// interrupted instruction: the loop's kernel.cu line, found with addr2line once the launch is over)
// and leaves that stack for the scheduler, so the launch fails with a message instead of hanging.
// A kernel that ran out of time once is refused at once afterwards in this process: its later
// launches (the next case, the next check) are not waited out again.
//
// The limit: BRRR_CPU_TIMEOUT seconds when set (a number above 0; anything else is an error, never
// the default), else 10 s and 40 us more for each thread of the launch, at most 45 s.

static std::atomic<bool> time_is_up{false};
static std::atomic<double> time_limit_seconds{0};
static std::atomic<const void*> time_up_pc{nullptr};  // where the looping thread was interrupted
static std::mutex timed_out_mutex;
static std::vector<std::pair<std::string, std::string>> timed_out;  // kernel, its fault

// A kernel as the time limit remembers it: its name without template arguments, so each
// instantiation (float, double, a vector width) of a looping kernel is not waited out again.
static std::string kernel_family(const std::string& name) { return name.substr(0, name.find('<')); }

static double time_limit(const Launch& launch) {
    const char* env = std::getenv("BRRR_CPU_TIMEOUT");
    if (env && *env) {
        char* end = nullptr;
        const double v = std::strtod(env, &end);
        while (end && (*end == ' ' || *end == '\t' || *end == '\n')) ++end;
        if (end == env || (end && *end) || !(v > 0) || v > 1e9) {
            throw KernelFault(std::string("BRRR_CPU_TIMEOUT=") + env +
                              ": expected a number of seconds above 0 (the most one launch may run)");
        }
        return v;
    }
    const dim3 g = launch.config.grid, k = launch.config.block;
    const double threads = double(g.x) * g.y * g.z * k.x * k.y * k.z;
    return std::min(45.0, 10.0 + 40e-6 * threads);
}

static void on_time_up(int, siginfo_t*, void* context) {
    Block* b = running_block;
    Fiber* f = running_fiber;
    if (!time_is_up.load() || !b || !f) return;
#if defined(__x86_64__)
    // +1: place_of takes a return address (it looks one byte back)
    time_up_pc = reinterpret_cast<const char*>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]) + 1;
#elif defined(__aarch64__)
    time_up_pc = reinterpret_cast<const char*>(static_cast<ucontext_t*>(context)->uc_mcontext.pc) + 1;
#else
    (void)context;
#endif
    std::ostringstream m;
    m << "the launch ran for more than " << time_limit_seconds.load() << " s (BRRR_CPU_TIMEOUT) and this thread "
      << "was still running here: on the CPU a block's threads take turns only at __syncthreads, warp intrinsics and "
         "__nanosleep, and blocks run one after another, so a loop waiting for another thread or block never ends";
    record(*b, located(*b, "time limit", m.str(), b->launch->site.file, b->launch->site.line, f));
    stop(*b, *f);
}

// The fault of a launch that ran out of time, placed at the interrupted line instead of the launch's.
static std::string at_interrupted_line(const std::string& error, const Launch& launch) {
    const void* pc = time_up_pc.exchange(nullptr);
    const std::string place = place_of(pc);
    const std::string site = std::string(launch.site.file) + ":" + std::to_string(launch.site.line);
    if (place.empty() || error.compare(0, site.size(), site) != 0) return error;
    return place + error.substr(site.size());
}

class Watchdog {
   public:
    explicit Watchdog(double seconds) : seconds_(seconds) {
        time_limit_seconds = seconds_;
        time_up_pc = nullptr;
        struct sigaction act {};
        act.sa_sigaction = on_time_up;
        act.sa_flags = SA_NODEFER | SA_SIGINFO;  // the handler never returns: the signal must not stay blocked
        sigemptyset(&act.sa_mask);
        sigaction(SIGUSR2, &act, &previous_);
        thread_ = std::thread([this] { watch(); });
    }
    ~Watchdog() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
        }
        wake_.notify_all();
        thread_.join();
        sigaction(SIGUSR2, &previous_, nullptr);
        time_is_up = false;
    }
    void enlist() {
        std::lock_guard<std::mutex> lock(mutex_);
        workers_.push_back(pthread_self());
        clockid_t clock;
        timespec now{};
        if (pthread_getcpuclockid(pthread_self(), &clock) == 0 && clock_gettime(clock, &now) == 0) {
            cpu_before_ += now.tv_sec + now.tv_nsec * 1e-9;
        }
    }
    void leave() {
        std::lock_guard<std::mutex> lock(mutex_);
        workers_.erase(std::remove_if(workers_.begin(), workers_.end(),
                                      [](pthread_t t) { return pthread_equal(t, pthread_self()); }),
                       workers_.end());
    }

   private:
    // CPU seconds the enlisted workers have spent in this launch (a worker that left is not counted).
    double cpu_spent() const {
        double total = -cpu_before_;
        for (pthread_t t : workers_) {
            clockid_t clock;
            timespec now{};
            if (pthread_getcpuclockid(t, &clock) == 0 && clock_gettime(clock, &now) == 0) {
                total += now.tv_sec + now.tv_nsec * 1e-9;
            }
        }
        return total;
    }
    void watch() {
        std::unique_lock<std::mutex> lock(mutex_);
        const auto start = std::chrono::steady_clock::now();
        for (;;) {
            if (wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; })) return;
            const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (cpu_spent() > seconds_ || wall > 4 * seconds_) break;
        }
        time_is_up = true;
        while (!done_) {  // again each second: the next thread may loop too
            for (pthread_t t : workers_) pthread_kill(t, SIGUSR2);
            wake_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; });
        }
    }
    double seconds_;
    double cpu_before_ = 0;
    struct sigaction previous_ {};
    std::mutex mutex_;
    std::condition_variable wake_;
    bool done_ = false;
    std::vector<pthread_t> workers_;
    std::thread thread_;
};

// ---- a cooperative launch: the grid-wide barrier ------------------------------------------------------
// Every block of a cooperative grid is resident at once (run() lets as many run as the grid has), so
// the barrier is a count: the block's threads meet at a block barrier, its thread 0 arrives and polls
// the count of completed rounds until the last block's arrival completes this one (the poll is a spin
// to the scheduler, so the blocks still to arrive start beside it), and the block meets again.

bool cooperative_fits(const LaunchConfig& config) {
    int per_sm = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, nullptr, static_cast<int>(config.block.x * config.block.y * config.block.z),
                                                  config.shared_bytes);
    return volume(config.grid) <= int64_t(per_sm) * device_attribute(cudaDevAttrMultiProcessorCount);
}

const char* argument_text(const char* arguments, int index) {
    std::string part;
    int depth = 0, at = 0;
    for (const char* c = arguments; *c; ++c) {
        if (*c == '(' || *c == '<' || *c == '[' || *c == '{') ++depth;
        if (*c == ')' || *c == '>' || *c == ']' || *c == '}') --depth;
        if (*c == ',' && depth == 0) {
            ++at;
            continue;
        }
        if (at == index) part += *c;
    }
    const auto first = part.find_first_not_of(" \t\n&");
    const auto last = part.find_last_not_of(" \t\n");
    part = first == std::string::npos ? std::string("kernel") : part.substr(first, last - first + 1);
    static std::mutex mutex;
    static std::set<std::string> kept;
    std::lock_guard<std::mutex> lock(mutex);
    return kept.insert(part).first->c_str();
}

bool cooperative_launch() { return running_launch && running_launch->config.cooperative; }

void grid_sync(const char* file, int line) {
    Fiber& f = here("this_grid().sync()", file, line);
    Block& b = *f.block;
    if (!b.launch->config.cooperative) {
        fault("grid sync", "this_grid().sync() in a kernel not launched cooperatively: a GPU gives a grid-wide barrier "
              "only to cudaLaunchCooperativeKernel (or cudaLaunchKernelEx with cudaLaunchAttributeCooperative), whose "
              "grid must fit on the device at once; a <<<>>> launch has none", file, line);
    }
    barrier(Sync::Threads, 1, file, line);
    if (f.linear == 0) {
        Coordination& c = *b.coordination;
        const uint64_t round = c.grid_rounds.load();
        if (c.grid_arrived.fetch_add(1) + 1 == volume(b.launch->config.grid)) {
            c.grid_arrived.store(0);
            c.grid_rounds.fetch_add(1);
            made_progress(b, f);
        } else {
            while (c.grid_rounds.load() == round) {
                poll_blocks(f, BlockWait::Grid, "grid sync", "another block of the cooperative grid", file, line);
            }
            f.spin_barrier = BlockWait::None;
        }
    }
    barrier(Sync::Threads, 1, file, line);
}

// ---- thread block clusters: the barrier, distributed shared memory, __cluster_dims__ ------------------

dim3 cluster_dims() { return running_launch ? running_launch->config.cluster : dim3(1, 1, 1); }

uint3 cluster_block_index() {
    const dim3 c = cluster_dims();
    return uint3{blockIdx.x % c.x, blockIdx.y % c.y, blockIdx.z % c.z};
}

unsigned cluster_block_rank() {
    const dim3 c = cluster_dims();
    const uint3 i = cluster_block_index();
    return i.x + c.x * (i.y + c.y * i.z);
}

uint3 cluster_index() {
    const dim3 c = cluster_dims();
    return uint3{blockIdx.x / c.x, blockIdx.y / c.y, blockIdx.z / c.z};
}

void cluster_arrive(const char* file, int line) {
    Fiber& f = here("the cluster barrier", file, line);
    Block& b = *f.block;
    ClusterState* s = cluster_state(b);
    if (!s) return;  // a cluster of one block: cluster_wait is the block's barrier
    f.cluster_round = s->rounds.load();
    if (s->arrived.fetch_add(1) + 1 == volume(b.launch->config.cluster) * b.threads) {
        s->arrived.store(0);
        s->rounds.fetch_add(1);
    }
    made_progress(b, f);
}

// bar.sync / bar.arrive on a named barrier: `count` threads (0: the block's) complete a round, which
// orders shared memory as __syncthreads does (conservatively: for the whole block, so a race between a
// thread outside it and one inside may go unnamed). A waiting thread polls, so a round that can never
// complete is the scheduler's deadlock, named at the bar.sync.
void named_barrier(unsigned id, unsigned count, bool wait, const char* file, int line) {
    Fiber& f = here("bar.sync", file, line);
    Block& b = *f.block;
    const int n = count ? static_cast<int>(count) : b.threads;
    if (id >= b.named.size()) {
        fault("named barrier", "barrier " + std::to_string(id) + ": PTX's named barriers are 0 to 15", file, line);
    }
    if (n % 32 != 0 && n != b.threads) {
        fault("named barrier", "bar.sync " + std::to_string(id) + ", " + std::to_string(n) +
              ": the thread count must be a multiple of the warp size (32)", file, line);
    }
    if (n > b.threads) {
        fault("named barrier", "bar.sync " + std::to_string(id) + ", " + std::to_string(n) + " in a block of " +
              std::to_string(b.threads) + " threads: the round can never complete (a GPU hangs here)", file, line);
    }
    Block::Named& nb = b.named[id];
    if (nb.arrived == 0) nb.count = n;
    if (nb.count != n) {
        fault("barrier divergence", "threads meet at named barrier " + std::to_string(id) + " with thread counts " +
              std::to_string(nb.count) + " and " + std::to_string(n) + " in one round", file, line);
    }
    const uint64_t round = nb.rounds;
    if (++nb.arrived == n) {
        nb.arrived = 0;
        ++nb.rounds;
        ++b.epoch;
        async::share_seen(-1, 0);
        if (hooks().barrier_done) hooks().barrier_done(b.epoch);
    } else if (wait) {
        while (nb.rounds == round) {
            f.spin_file = file;
            f.spin_line = line;
            f.spin_barrier = BlockWait::Named;
            watched(f, nullptr, false, nullptr);
        }
        f.spin_barrier = BlockWait::None;
    }
    made_progress(b, f);
}

void cluster_wait(const char* file, int line) {
    Fiber& f = here("the cluster barrier", file, line);
    Block& b = *f.block;
    ClusterState* s = cluster_state(b);
    if (!s) {
        barrier(Sync::Threads, 1, file, line);
        return;
    }
    while (s->rounds.load() <= f.cluster_round) {
        poll_blocks(f, BlockWait::Cluster, "cluster barrier", "another block of the cluster", file, line);
    }
    f.spin_barrier = BlockWait::None;
    made_progress(b, f);
}

static size_t arena_offset(const Block& b, const void* address) {
    return static_cast<size_t>(reinterpret_cast<uintptr_t>(address) - reinterpret_cast<uintptr_t>(b.arena.data()));
}

void* cluster_map_shared(const void* address, unsigned rank, const char* file, int line) {
    Fiber& f = here("map_shared_rank", file, line);
    Block& b = *f.block;
    const int64_t blocks = volume(b.launch->config.cluster);
    if (rank >= blocks) {
        fault("distributed shared memory", "map_shared_rank to rank " + std::to_string(rank) + " of a cluster of " +
              std::to_string(blocks) + " blocks", file, line);
    }
    const size_t offset = arena_offset(b, address);
    if (offset >= b.arena.size()) {
        fault("distributed shared memory", "map_shared_rank of an address that is not in this block's shared memory",
              file, line);
    }
    ClusterState* s = cluster_state(b);
    if (!s) return const_cast<void*>(address);
    Block* other = s->members[rank].load();
    if (!other) {
        fault("distributed shared memory", "block rank " + std::to_string(rank) + " of this cluster is not running: it "
              "has not started yet or has already returned. A cluster.sync() after every block of the cluster starts "
              "and before any returns makes its shared memory safe to use (the CUDA Programming Guide)", file, line);
    }
    return other->arena.data() + offset;
}

unsigned cluster_shared_rank(const void* address, const char* file, int line) {
    Fiber& f = here("query_shared_rank", file, line);
    Block& b = *f.block;
    if (arena_offset(b, address) < b.arena.size()) return b.cluster_rank;
    if (ClusterState* s = cluster_state(b)) {
        for (int r = 0; r < volume(b.launch->config.cluster); ++r) {
            Block* o = s->members[r].load();
            if (o && arena_offset(*o, address) < o->arena.size()) return static_cast<unsigned>(r);
        }
    }
    fault("distributed shared memory", "query_shared_rank of an address in no running block of this cluster's shared "
          "memory", file, line);
}

bool in_cluster_shared(const void* address, size_t size) {
    const Block* b = running_block;
    ClusterState* s = b ? cluster_state(*b) : nullptr;
    if (!s) return false;
    for (int r = 0; r < volume(b->launch->config.cluster); ++r) {
        const Block* o = s->members[r].load();
        if (o && o != b && arena_offset(*o, address) + size <= o->arena.size()) return true;
    }
    return false;
}

static PerKernel<dim3>& cluster_dims_declared_table() {
    static PerKernel<dim3> table;
    return table;
}

static dim3 registered_cluster(const void* kernel) {
    return cluster_dims_declared_table().get(kernel).value_or(dim3(1, 1, 1));
}

// The first statement of a kernel declaring __cluster_dims__ (cpu_source.py), so it runs before any
// other code of the kernel, in every thread. Launched without a cluster shape, the kernel's first
// launch learns it here: every thread stops at once (no code of the kernel has run), and run()
// launches again in clusters of that shape, as every later launch of the kernel is.
constexpr const char* kClusterShapeLearned = "cluster shape learned";

void cluster_dims_declared(dim3 dims, const char* file, int line) {
    const dim3 c = cluster_dims();
    if (c.x == dims.x && c.y == dims.y && c.z == dims.z) return;
    here("__cluster_dims__", file, line);
    if (volume(c) == 1 && !running_launch->config.cooperative) {
        cluster_dims_declared_table().set(running_launch->kernel, dims);
        fault(kClusterShapeLearned, "", file, line);
    }
    fault("invalid cluster", "the kernel declares __cluster_dims__" + triple(uint3{dims.x, dims.y, dims.z}) +
          " but is launched in clusters of " + triple(uint3{c.x, c.y, c.z}) + ": a GPU refuses such a launch", file, line);
}

void launch_bounds_declared(unsigned long long max_threads, const char* file, int line) {
    if (threadIdx.x != 0 || threadIdx.y != 0 || threadIdx.z != 0) return;  // one report a block
    const uint64_t threads = uint64_t(blockDim.x) * blockDim.y * blockDim.z;
    if (threads <= max_threads) return;
    here("__launch_bounds__", file, line);
    fault("invalid configuration argument",
          "a block of " + std::to_string(threads) + " threads, more than the kernel's __launch_bounds__(" +
              std::to_string(max_threads) + ") (launched at " + running_launch->site.file + ":" +
              std::to_string(running_launch->site.line) + "): a GPU refuses the launch (invalid argument); "
              "launch at most the bound's threads a block, or raise the bound",
          file, line);
}

void flush_printed();

void run(const Launch& given, void (*thread_main)(void*), void* context) {
    if (running_fiber) {
        throw KernelFault(std::string(given.site.file) + ":" + std::to_string(given.site.line) +
                          ": unsupported: a kernel launched from inside a kernel (dynamic parallelism)");
    }
    Launch launch = given;
    launch.name = kernel_name(launch);
    if (volume(launch.config.cluster) == 1) launch.config.cluster = registered_cluster(launch.kernel);
    const std::string bad = config_error(launch);
    if (!bad.empty()) {
        throw KernelFault(std::string(launch.site.file) + ":" + std::to_string(launch.site.line) +
                          ": invalid configuration argument: launching " + launch.name + ": " + bad);
    }
    {
        std::lock_guard<std::mutex> lock(timed_out_mutex);
        for (const auto& [name, fault] : timed_out) {
            if (name == kernel_family(launch.name)) {
                throw KernelFault(fault + "; not run again: this kernel ran out of time in an earlier launch");
            }
        }
    }
    const double seconds = time_limit(launch);
    if (hooks().launch_begin) hooks().launch_begin(launch);
    const dim3 g = launch.config.grid;
    const int64_t total = volume(g);
    const int workers = static_cast<int>(std::min<int64_t>(workers_setting(), total));
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> first_failed{total};
    std::mutex error_mutex;
    std::string error;
    Watchdog watchdog(seconds);
    Coordination coordination;
    if (volume(launch.config.cluster) > 1) coordination.clusters.reset(new ClusterState[total / volume(launch.config.cluster)]);
    std::mutex pool_mutex;
    std::vector<std::thread> pool;
    int running_workers = workers;
    // A cooperative grid is resident at once (cooperative_fits held it to the device's size).
    const int resident = launch.config.cooperative ? static_cast<int>(std::max<int64_t>(max_resident(), total))
                                                   : max_resident();
    // A worker's block, known to the others (a stalled block looks at them all to decide deadlock).
    auto enrol = [&](Block* gone, Block* now) {
        std::lock_guard<std::mutex> lock(coordination.mutex);
        auto& all = coordination.blocks;
        if (gone) all.erase(std::remove(all.begin(), all.end(), gone), all.end());
        if (now) {
            now->coordination = &coordination;
            all.push_back(now);
        }
    };
    auto work = [&](bool single) {
        watchdog.enlist();
        running_launch = &launch;
        auto b = make_block(launch, thread_main, context, single);
        enrol(nullptr, b.get());
        for (;;) {
            const int64_t i = next.fetch_add(1);
            // Blocks after a failed one are skipped; earlier ones still run, so the fault reported
            // is the first block's, whatever the number of workers.
            if (i >= total || i > first_failed.load()) break;
            run_block(*b, block_of(i, g, launch.config.cluster));
            if (b->failed) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!b->abandoned) coordination.block_failed = true;
                if (!b->abandoned && i < first_failed.load()) {
                    first_failed = i;
                    error = b->error;
                }
                auto fresh = make_block(launch, thread_main, context, single);
                enrol(b.get(), fresh.get());
                b = std::move(fresh);
            }
        }
        enrol(b.get(), nullptr);
        running_launch = nullptr;
        watchdog.leave();
    };
    coordination.none_left = [&] { return next.load() >= total || running_workers >= resident; };
    coordination.start_worker = [&] {
        std::lock_guard<std::mutex> lock(pool_mutex);
        if (next.load() >= total || first_failed.load() < total || running_workers >= resident) return false;
        ++running_workers;  // read by none_left under the coordination's lock: see wait_for_others
        pool.emplace_back(work, false);
        return true;
    };
    {
        std::lock_guard<std::mutex> lock(pool_mutex);
        for (int i = 1; i < workers; ++i) pool.emplace_back(work, false);
    }
    work(workers <= 1);
    for (;;) {  // workers may start workers: join until none is left
        std::thread t;
        {
            std::lock_guard<std::mutex> lock(pool_mutex);
            if (pool.empty()) break;
            t = std::move(pool.back());
            pool.pop_back();
        }
        t.join();
    }
    if (hooks().launch_end) hooks().launch_end(launch);
    flush_printed();
    if (first_failed.load() < total) {
        if (error.find(kClusterShapeLearned) != std::string::npos && volume(registered_cluster(launch.kernel)) > 1) {
            run(given, thread_main, context);  // in the kernel's clusters, registered by cluster_dims_declared
            return;
        }
        if (error.find(": time limit in ") != std::string::npos) {
            error = at_interrupted_line(error, launch);
            std::lock_guard<std::mutex> lock(timed_out_mutex);
            timed_out.emplace_back(kernel_family(launch.name), error.substr(0, error.find('\n')));
        }
        throw KernelFault(error);
    }
}

int device_attribute(cudaDeviceAttr attr) {
    switch (attr) {
        case cudaDevAttrMaxThreadsPerBlock: case cudaDevAttrMaxBlockDimX: return 1024;
        case cudaDevAttrMaxGridDimX: return 2147483647;
        case cudaDevAttrMaxSharedMemoryPerBlock: return static_cast<int>(kMaxStaticShared);
        case cudaDevAttrWarpSize: return 32;
        case cudaDevAttrMultiProcessorCount: {
            const char* env = std::getenv("BRRR_CPU_SMS");
            return env && std::atoi(env) > 0 ? std::atoi(env) : 4;
        }
        case cudaDevAttrComputeCapabilityMajor: return 9;
        case cudaDevAttrComputeCapabilityMinor: return 0;
        case cudaDevAttrMaxSharedMemoryPerMultiprocessor: return 233472;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: return static_cast<int>(kMaxShared);
        case cudaDevAttrCooperativeLaunch: return 1;
    }
    return 0;
}

}  // namespace brrr_cpu

// assert() in a kernel stops the launch with a located fault, as a device-side assert does, instead
// of aborting the process; in host code it is glibc's.
extern "C" [[noreturn]] void __assert_fail(const char* expr, const char* file, unsigned int line,
                                           const char* function) noexcept {
    if (brrr_cpu::running_fiber) {
        brrr_cpu::fault("assertion failed", std::string(expr) + " (in " + function + ")", file, static_cast<int>(line));
    }
    using Real = void (*)(const char*, const char*, unsigned int, const char*);
    auto real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "__assert_fail"));
    if (real) real(expr, file, line, function);
    std::abort();
}

// Asynchronous copies (cp.async, the pipeline primitives, cuda::memcpy_async): their state is the runtime's.
#include "brrr_cpu_async_impl.h"

// ---- device printf ---------------------------------------------------------------------------------
// A kernel's printf lines, each prefixed with its block and thread, are kept in a buffer of CUDA's
// default size (1 MiB, cudaLimitPrintfFifoSize; what does not fit is dropped, as on a GPU). At the
// end of each launch they go to stdout, as a GPU's do at the next synchronisation, unless a
// collector (brrr validate, which keeps them with the row) has asked to take them itself.

namespace brrr_cpu {
static std::mutex printed_mutex;
static std::string printed;
static bool printed_dropped = false;
static bool printed_kept = false;
constexpr size_t kPrintfBuffer = size_t(1) << 20;

static void keep_printed(const std::string& text) {
    std::lock_guard<std::mutex> lock(printed_mutex);
    if (printed.size() + text.size() > kPrintfBuffer) {
        printed_dropped = true;
        return;
    }
    printed += text;
}

// At a launch's end: the lines to stdout, unless a collector takes them.
void flush_printed() {
    std::lock_guard<std::mutex> lock(printed_mutex);
    if (printed_kept) return;
    if (printed_dropped) printed += "[brrr: device printf output beyond 1 MiB was dropped, as a GPU drops it]\n";
    std::fwrite(printed.data(), 1, printed.size(), stdout);
    std::fflush(stdout);
    printed.clear();
    printed_dropped = false;
}
}  // namespace brrr_cpu

extern "C" __attribute__((visibility("default"))) int brrr_cpu_device_printf(const char* format, ...) {
    va_list args;
    va_start(args, format);
    va_list again;
    va_copy(again, args);
    const int n = std::vsnprintf(nullptr, 0, format, args);
    va_end(args);
    std::string text(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    if (n > 0) std::vsnprintf(text.data(), text.size() + 1, format, again);
    va_end(again);
    using brrr_cpu::running_block;
    using brrr_cpu::running_fiber;
    if (!running_fiber || !running_block) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        return n;
    }
    const std::string prefix = "[block " + brrr_cpu::triple(running_block->index) + ", thread " +
                               brrr_cpu::triple(running_fiber->index) + "] ";
    std::string out;
    size_t at = 0;
    while (at < text.size()) {
        const size_t end = text.find('\n', at);
        const size_t stop = end == std::string::npos ? text.size() : end + 1;
        out += prefix;
        out.append(text, at, stop - at);
        at = stop;
    }
    if (!out.empty() && out.back() != '\n') out += '\n';
    brrr_cpu::keep_printed(out);
    return n;
}

// For a collector (ctypes): keep the lines instead of printing them, and take what was kept.
extern "C" __attribute__((visibility("default"))) void brrr_cpu_keep_printed(int keep) {
    std::lock_guard<std::mutex> lock(brrr_cpu::printed_mutex);
    brrr_cpu::printed_kept = keep != 0;
}

// Copies up to `capacity` bytes of the kept lines into `out` and forgets them; returns how many
// there were (call with capacity 0 to learn the size).
extern "C" __attribute__((visibility("default"))) size_t brrr_cpu_take_printed(char* out, size_t capacity) {
    std::lock_guard<std::mutex> lock(brrr_cpu::printed_mutex);
    if (brrr_cpu::printed_dropped) {  // said where the lines are read, as flush_printed says it on stdout
        brrr_cpu::printed += "[brrr: device printf output beyond 1 MiB was dropped, as a GPU drops it]\n";
        brrr_cpu::printed_dropped = false;
    }
    const size_t size = brrr_cpu::printed.size();
    if (capacity == 0) return size;
    std::memcpy(out, brrr_cpu::printed.data(), size < capacity ? size : capacity);
    brrr_cpu::printed.clear();
    brrr_cpu::printed_dropped = false;
    return size;
}
