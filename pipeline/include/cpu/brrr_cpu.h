// CPU execution of a CUDA C stage: what kernel.cu needs from CUDA's execution model, for g++.
//
// A launch runs the grid's blocks one after another (or several at once on worker threads, each
// block on one OS thread from start to end); the threads of a block are fibers on that OS thread,
// each run until it reaches __syncthreads, a warp intrinsic or its end, so a block's threads
// interleave only at the points where CUDA's do observably (brrr_cpu_runtime.cpp). threadIdx and
// the other built-in indices are thread-local variables the scheduler sets before it resumes a
// fiber; __shared__ variables are per-block storage, filled with 0xff bytes (NaN in every float
// type) when a block first reaches their declaration, so a read of an unwritten element shows.
//
// kernel.cu is compiled unchanged but for what the syntax needs (pipeline/cpu_source.py):
// `k<<<grid, block, smem, stream>>>(args)` becomes brrr_cpu::launch(...), a `__shared__`
// declaration a reference to brrr_cpu::shared_at(...), and known PTX `asm` the equivalent C++;
// `#line` keeps every line number and file name those of kernel.cu.
#pragma once
#include <math.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>
#include <utility>

#include "brrr_cpu_host.h"

#define BRRR_CPU_HIDDEN __attribute__((visibility("hidden")))

// The built-in variables. Thread-local, so blocks may run on several OS threads at once; a
// block's fibers never leave their OS thread, so the addresses the compiler caches stay right.
BRRR_CPU_HIDDEN inline thread_local uint3 threadIdx{0, 0, 0};
BRRR_CPU_HIDDEN inline thread_local uint3 blockIdx{0, 0, 0};
BRRR_CPU_HIDDEN inline thread_local dim3 blockDim{1, 1, 1};
BRRR_CPU_HIDDEN inline thread_local dim3 gridDim{1, 1, 1};
constexpr int warpSize = 32;

// A __shared__ the rewriter did not see (one made by a macro, say) is a compile error, not
// silently per-thread storage.
#define __shared__ _Pragma("GCC error \"__shared__ outside a declaration brrr can rewrite (inside a macro?): not supported on the CPU\"")

namespace brrr_cpu {

// Where a launch is written in kernel.cu, and its text, for messages.
struct Site {
    const char* file;
    int line;
    const char* kernel;  // the kernel expression as written, e.g. "sigmoid_forward_kernel<T, W>"
    const char* args;    // the argument list as written, e.g. "x, y, n"
};

struct LaunchConfig {
    dim3 grid, block;
    size_t shared_bytes;
    cudaStream_t stream;
    bool cooperative = false;  // cudaLaunchCooperativeKernel: the grid may meet at this_grid().sync()
    dim3 cluster{1, 1, 1};     // thread block clusters: cudaLaunchKernelEx's attribute or __cluster_dims__
    LaunchConfig(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = nullptr) : grid(g), block(b), shared_bytes(s), stream(st) {}
};

// One pointer among a launch's arguments (for memory checks: which tensor an address falls in).
struct PointerArg {
    int index;             // position in the kernel's parameter list
    const void* address;
    size_t element_size;   // sizeof the pointee (1 for void, or unknown)
    bool read_only;        // a pointer to const
    // -1: the argument itself; otherwise a word at this byte offset inside a struct passed by value
    // (`struct Params { const float* x; float* y; int64_t n; }`), which may or may not be a pointer.
    int offset = -1;
};

struct Launch {
    Site site;
    const void* kernel;    // the kernel function's address
    std::string name;      // its instantiated name where the symbol table has it, else site.kernel
    LaunchConfig config;
    const PointerArg* pointers;
    int pointer_count;
};

// A __shared__ variable (or the dynamic region, name "extern") of the running block.
struct SharedRegion {
    const void* key;
    char* data;
    size_t size;
    const char* name;
    const char* file;
    int line;
    // The declared type, to name an element in a report: sizeof one element and the extents
    // (element_size 0: untyped, as the extern dynamic region is).
    size_t element_size = 0;
    int rank = 0;
    size_t dims[4] = {};
    // The element is a struct or union of more than 16 bytes (a CUB TempStorage, a union of them),
    // whose fields different threads may write: the race checks watch each byte of it.
    bool fields = false;
};

// Extension points for checks layered on the scheduler (memory checks, a debugger): each is
// called on the OS thread running the block; nullptr means nothing to call.
struct Hooks {
    void (*launch_begin)(const Launch&) = nullptr;
    void (*launch_end)(const Launch&) = nullptr;
    void (*block_begin)(const Launch&, uint3 block) = nullptr;
    void (*block_end)(const Launch&, uint3 block) = nullptr;
    void (*barrier_done)(uint64_t epoch) = nullptr;  // a __syncthreads completed in the running block
    void (*shared_allocated)(const SharedRegion&) = nullptr;
    // the scheduler resumes thread `thread` (linear) of the running block, whose stack is [lo, hi)
    void (*thread_resumed)(int thread, const char* stack_lo, const char* stack_hi) = nullptr;
    // lanes `mask` of warp `warp` completed a warp-synchronous call together
    void (*warp_done)(int warp, unsigned mask) = nullptr;
};
Hooks& hooks();

// The running block's thread as one number (threadIdx.x + blockDim.x * (y + blockDim.y * z)),
// -1 outside a kernel; and the running launch (nullptr outside one).
int current_thread();
const Launch* current_launch();
// The running block's shared variables so far.
const SharedRegion* shared_regions(int* count);

// Stop the running launch with a fault reported at file:line in the current block and thread.
// Called from inside a kernel (a fiber): does not return.
[[noreturn]] void fault(const char* kind, const std::string& detail, const char* file, int line);
// A race at file:line in the current thread: the block runs on (no other race is kept) until the
// barrier of this phase completes, which reports it, or turns out divergent (some threads skipped
// it, the race's likely cause), which is reported as such with the race beside it. Returns.
void race(const char* kind, const std::string& detail, const char* file, int line);
// __trap(): the launch stops with a "trap" fault at file:line.
[[noreturn]] void trap(const char* file, int line);

// The error a failed launch throws: the first line names kernel.cu:line, the block and thread.
struct KernelFault : std::exception {
    std::string message;
    explicit KernelFault(std::string m) : message(std::move(m)) {}
    const char* what() const noexcept override { return message.c_str(); }
};

void run(const Launch& launch, void (*thread_main)(void*), void* context);

template <typename T>
constexpr size_t pointee_size() {
    if constexpr (std::is_void_v<std::remove_cv_t<T>>) return 1;
    else return sizeof(T);
}

// The pointers among the arguments, and every aligned, non-zero pointer-sized word of a struct
// argument: the memory checks keep those that point into a tensor (the types inside a struct are
// not known here, and an integer field is only a candidate that points nowhere).
template <typename Tuple, size_t... I>
std::vector<PointerArg> collect_pointers(const Tuple& params, std::index_sequence<I...>) {
    std::vector<PointerArg> out;
    auto one = [&](int index, const auto& value) {
        using V = std::decay_t<decltype(value)>;
        if constexpr (std::is_pointer_v<V>) {
            using E = std::remove_pointer_t<V>;
            out.push_back(PointerArg{index, static_cast<const void*>(value), pointee_size<E>(), std::is_const_v<E>});
        } else if constexpr (std::is_class_v<V> && std::is_trivially_copyable_v<V> && alignof(V) >= alignof(void*)) {
            const char* bytes = reinterpret_cast<const char*>(&value);
            for (size_t at = 0; at + sizeof(void*) <= sizeof(V); at += alignof(void*)) {
                const void* word;
                std::memcpy(&word, bytes + at, sizeof word);
                if (word != nullptr) out.push_back(PointerArg{index, word, 1, false, static_cast<int>(at)});
            }
        }
    };
    (one(static_cast<int>(I), std::get<I>(params)), ...);
    return out;
}

// kernel<<<config>>>(args...): the arguments are converted to the kernel's parameter types once,
// as CUDA copies them to the device, and every thread calls the kernel on its own copy.
template <typename... P, typename... A>
void launch(const LaunchConfig& config, const Site& site, void (*kernel)(P...), A&&... args) {
    static_assert(sizeof...(P) == sizeof...(A), "a kernel launched with a different number of arguments than it has parameters");
    using Params = std::tuple<std::decay_t<P>...>;
    Params params(std::forward<A>(args)...);
    const std::vector<PointerArg> pointers = collect_pointers(params, std::index_sequence_for<P...>{});
    struct Context {
        void (*kernel)(P...);
        Params* params;
    } context{kernel, &params};
    Launch info{site, reinterpret_cast<const void*>(kernel), site.kernel, config, pointers.data(),
                static_cast<int>(pointers.size())};
    run(info, [](void* c) {
        auto* ctx = static_cast<Context*>(c);
        std::apply(ctx->kernel, *ctx->params);
    }, &context);
}

// ---- the runtime's launch calls beside <<<>>> ---------------------------------------------------
// cudaLaunchKernel(k, grid, block, args, smem, stream) and cudaLaunchCooperativeKernel take the
// arguments as an array of pointers, which only the kernel's own type can unpack here, so a kernel
// must arrive typed: cpu_source.py takes a `(void*)` cast off a launch call's kernel, and a kernel that
// is still a void* is a fault naming the call's line. cudaLaunchKernelEx's attributes change when or where a
// kernel runs, not what it computes (launches here run one after another, each to its end:
// programmatic serialization needs nothing), except cooperative, which allows this_grid().sync().
// A cooperative grid must fit on the device at once, as on a GPU: else the call returns
// cudaErrorCooperativeLaunchTooLarge and runs nothing.
bool cooperative_fits(const LaunchConfig& config);
// Argument `index` of a call's argument list as written (top-level commas split it), kept for the
// program's life: the kernel's name in a launch call's messages.
const char* argument_text(const char* arguments, int index);

template <typename... P, size_t... I>
void launch_array(const LaunchConfig& config, const Site& site, void (*kernel)(P...), void** args,
                  std::index_sequence<I...>) {
    launch(config, site, kernel, *static_cast<std::remove_cv_t<std::remove_reference_t<P>>*>(args[I])...);
}

template <typename... P>
cudaError_t launch_with_array(const Site& site, bool cooperative, void (*kernel)(P...), dim3 grid, dim3 block,
                              void** args, size_t shared_bytes = 0, cudaStream_t stream = nullptr) {
    LaunchConfig config(grid, block, shared_bytes, stream);
    config.cooperative = cooperative;
    if (cooperative && !cooperative_fits(config)) return cudaErrorCooperativeLaunchTooLarge;
    launch_array(config, site, kernel, args, std::index_sequence_for<P...>{});
    return cudaSuccess;
}

template <typename K, typename = std::enable_if_t<!std::is_function_v<K>>>
cudaError_t launch_with_array(const Site& site, bool, const K*, dim3, dim3, void**, size_t = 0, cudaStream_t = nullptr) {
    throw KernelFault(std::string(site.file) + ":" + std::to_string(site.line) + ": unsupported on the CPU: the kernel " +
                      site.kernel + " reaches this launch call as a pointer that is not the kernel's own type, and the CPU "
                      "needs that type to unpack the argument array: pass the kernel itself (a (void*) cast written in "
                      "the call is taken off)");
}

template <typename... P, typename... A>
cudaError_t launch_ex(const Site& site, const cudaLaunchConfig_t* given, void (*kernel)(P...), A&&... args) {
    LaunchConfig config(given->gridDim, given->blockDim, given->dynamicSmemBytes, given->stream);
    for (unsigned i = 0; i < given->numAttrs; ++i) {
        const cudaLaunchAttribute& a = given->attrs[i];
        if (a.id == cudaLaunchAttributeCooperative && a.val.cooperative) config.cooperative = true;
        if (a.id == cudaLaunchAttributeClusterDimension) {
            config.cluster = dim3(a.val.clusterDim.x, a.val.clusterDim.y, a.val.clusterDim.z);
        }
    }
    if (config.cooperative && !cooperative_fits(config)) return cudaErrorCooperativeLaunchTooLarge;
    launch(config, site, kernel, std::forward<A>(args)...);
    return cudaSuccess;
}

// A grid-wide barrier of a cooperative launch (cooperative_groups' grid_group::sync), and whether the
// running launch is one (grid_group::is_valid).
void grid_sync(const char* file, int line);
bool cooperative_launch();

// ---- thread block clusters (brrr_cpu_runtime.cpp) ---------------------------------------------------
// The running launch's cluster shape, this block's index and rank in its cluster, and its cluster's
// index and rank in the grid. A launch without clusters is one of 1 x 1 x 1 blocks, as on a GPU.
dim3 cluster_dims();
uint3 cluster_block_index();
unsigned cluster_block_rank();
uint3 cluster_index();
// barrier.cluster: every thread of every block of the cluster arrives, then waits for the others.
void cluster_arrive(const char* file, int line);
void named_barrier(unsigned id, unsigned count, bool wait, const char* file, int line);
void cluster_wait(const char* file, int line);
// Distributed shared memory: `address` in this block's shared memory, as the same offset in the
// shared memory of the cluster's block `rank` (a fault while that block is not running), and the
// rank whose shared memory holds an address.
void* cluster_map_shared(const void* address, unsigned rank, const char* file, int line);
unsigned cluster_shared_rank(const void* address, const char* file, int line);
// Whether [address, address + size) lies in the shared memory of another running block of this
// block's cluster (the memory checks accept such an access as distributed shared memory).
bool in_cluster_shared(const void* address, size_t size);
// `__cluster_dims__(x, y, z)` on a kernel: cpu_source.py makes this call the kernel's first statement.
void cluster_dims_declared(dim3 dims, const char* file, int line);
// `__launch_bounds__(max_threads, ...)` on a kernel: cpu_source.py makes this call the kernel's first
// statement. A GPU refuses a launch of more threads a block than the bound ("invalid argument": its
// registers were budgeted for the bound); the CPU would run it.
void launch_bounds_declared(unsigned long long max_threads, const char* file, int line);

// ---- __shared__ -------------------------------------------------------------------------------

void* shared_storage(const void* key, size_t size, size_t align, const char* name, const char* file, int line,
                     const SharedRegion* shape = nullptr);
void* dynamic_shared_storage(const char* file, int line);

// `__shared__ T name[N];` becomes `T (&name)[N] = brrr_cpu::shared_at<T[N]>(&site, ...)`, where
// site is a static local of the declaring function: one per declaration and instantiation, as a
// __shared__ variable is one per block for each.
template <typename T>
T& shared_at(const void* key, size_t align, const char* name, const char* file, int line) {
    static_assert(std::is_trivially_default_constructible_v<std::remove_all_extents_t<T>> ||
                      std::is_trivially_copyable_v<std::remove_all_extents_t<T>>,
                  "__shared__ variables have no constructors");
    const size_t a = align > alignof(T) ? align : alignof(T);
    SharedRegion shape{};
    shape.element_size = sizeof(std::remove_all_extents_t<T>);
    using E = std::remove_all_extents_t<T>;
    shape.fields = (std::is_class_v<E> || std::is_union_v<E>) && sizeof(E) > 16;  // not float4, __half2
    shape.rank = static_cast<int>(std::rank_v<T>);
    [&]<size_t... I>(std::index_sequence<I...>) { ((shape.dims[I] = std::extent_v<T, I>), ...); }(
        std::make_index_sequence<(std::rank_v<T> < 4 ? std::rank_v<T> : 4)>{});
    return *static_cast<T*>(shared_storage(key, sizeof(T), a, name, file, line, &shape));
}

template <typename T>
T* dynamic_shared(const char* file, int line) {
    return static_cast<T*>(dynamic_shared_storage(file, line));
}

// ---- synchronisation and warp intrinsics --------------------------------------------------------

enum class Sync : int { Threads, Count, And, Or };
int barrier(Sync kind, int predicate, const char* file, int line);

enum class WarpOp : int {
    Shfl, ShflUp, ShflDown, ShflXor, Ballot, Any, All, SyncWarp, ActiveMask, MatchAny, MatchAll,
    ReduceAdd, ReduceMin, ReduceMax, ReduceAnd, ReduceOr, ReduceXor,
    Collective,  // a warp-collective of brrr's headers (tensor-core fragments, ldmatrix): see Collective
};

// A warp-collective operation the runtime does not know itself (brrr_cpu_mma.h): its lanes meet as at
// any warp intrinsic (same call, same mask, every named lane present), then `complete` runs once, on
// the last lane to arrive, with each lane's WarpCall::result (nullptr for a lane outside the mask).
// The WarpCall's `value` points at the Collective, so two different ones never meet.
struct Collective {
    const char* name;  // for messages, as the kernel wrote it: "wmma::mma_sync", "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
    void (*complete)(void* const* lanes, unsigned mask);
};

// One lane's side of a warp-synchronous call: its operand (up to 16 bytes) and where its result goes.
struct WarpCall {
    WarpOp op;
    unsigned mask;
    int param;    // source lane, delta or lane mask (shuffles); the predicate (votes)
    int width;
    const char* file;
    int line;
    const void* value;
    int size;
    bool is_signed;  // for the integer reductions
    void* result;
    unsigned aux;    // __match_all_sync's predicate
};
void warp(WarpCall& call);

// Yield to the block's other threads (a spin-wait's __nanosleep must let the awaited thread run).
void yield(const char* file, int line);

}  // namespace brrr_cpu

#define BRRR_CPU_HERE const char *brrr_file = __builtin_FILE(), int brrr_line = __builtin_LINE()

inline void __syncthreads(BRRR_CPU_HERE) { brrr_cpu::barrier(brrr_cpu::Sync::Threads, 1, brrr_file, brrr_line); }
inline int __syncthreads_count(int p, BRRR_CPU_HERE) { return brrr_cpu::barrier(brrr_cpu::Sync::Count, p != 0, brrr_file, brrr_line); }
inline int __syncthreads_and(int p, BRRR_CPU_HERE) { return brrr_cpu::barrier(brrr_cpu::Sync::And, p != 0, brrr_file, brrr_line); }
inline int __syncthreads_or(int p, BRRR_CPU_HERE) { return brrr_cpu::barrier(brrr_cpu::Sync::Or, p != 0, brrr_file, brrr_line); }

// The launch calls of the runtime API, each at its line in kernel.cu (see launch_with_array), the
// kernel named as the call writes it.
#define BRRR_CPU_CALL_SITE(kernel_argument, ...) \
    ::brrr_cpu::Site{__FILE__, __LINE__, ::brrr_cpu::argument_text(#__VA_ARGS__, kernel_argument), #__VA_ARGS__}
#define cudaLaunchKernel(...) ::brrr_cpu::launch_with_array(BRRR_CPU_CALL_SITE(0, __VA_ARGS__), false, __VA_ARGS__)
#define cudaLaunchCooperativeKernel(...) \
    ::brrr_cpu::launch_with_array(BRRR_CPU_CALL_SITE(0, __VA_ARGS__), true, __VA_ARGS__)
#define cudaLaunchKernelEx(...) ::brrr_cpu::launch_ex(BRRR_CPU_CALL_SITE(1, __VA_ARGS__), __VA_ARGS__)
// Programmatic dependent launch, device side: launches here end before the next one starts.
inline void cudaGridDependencySynchronize() {}
inline void cudaTriggerProgrammaticLaunchCompletion() {}

namespace brrr_cpu {
template <typename R, typename T>
R warp_call(WarpOp op, unsigned mask, const T& value, int param, int width, const char* file, int line) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16, "warp intrinsics move values of up to 16 bytes");
    R result{};
    WarpCall c{op, mask, param, width, file, line, &value, static_cast<int>(sizeof(T)), std::is_signed_v<T>, &result, 0};
    warp(c);
    return result;
}
}  // namespace brrr_cpu

inline void __syncwarp(unsigned mask = 0xffffffffu, BRRR_CPU_HERE) {
    brrr_cpu::warp_call<int>(brrr_cpu::WarpOp::SyncWarp, mask, 0, 0, 32, brrr_file, brrr_line);
}
template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize, BRRR_CPU_HERE) {
    return brrr_cpu::warp_call<T>(brrr_cpu::WarpOp::Shfl, mask, var, src_lane, width, brrr_file, brrr_line);
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize, BRRR_CPU_HERE) {
    return brrr_cpu::warp_call<T>(brrr_cpu::WarpOp::ShflUp, mask, var, static_cast<int>(delta), width, brrr_file, brrr_line);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize, BRRR_CPU_HERE) {
    return brrr_cpu::warp_call<T>(brrr_cpu::WarpOp::ShflDown, mask, var, static_cast<int>(delta), width, brrr_file, brrr_line);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize, BRRR_CPU_HERE) {
    return brrr_cpu::warp_call<T>(brrr_cpu::WarpOp::ShflXor, mask, var, lane_mask, width, brrr_file, brrr_line);
}
inline unsigned __ballot_sync(unsigned mask, int pred, BRRR_CPU_HERE) {
    return brrr_cpu::warp_call<unsigned>(brrr_cpu::WarpOp::Ballot, mask, 0, pred != 0, 32, brrr_file, brrr_line);
}
inline int __any_sync(unsigned mask, int pred, BRRR_CPU_HERE) {
    return brrr_cpu::warp_call<int>(brrr_cpu::WarpOp::Any, mask, 0, pred != 0, 32, brrr_file, brrr_line);
}
inline int __all_sync(unsigned mask, int pred, BRRR_CPU_HERE) {
    return brrr_cpu::warp_call<int>(brrr_cpu::WarpOp::All, mask, 0, pred != 0, 32, brrr_file, brrr_line);
}
inline unsigned __activemask(BRRR_CPU_HERE) {
    return brrr_cpu::warp_call<unsigned>(brrr_cpu::WarpOp::ActiveMask, 0, 0, 0, 32, brrr_file, brrr_line);
}
template <typename T>
unsigned __match_any_sync(unsigned mask, T value, BRRR_CPU_HERE) {
    return brrr_cpu::warp_call<unsigned>(brrr_cpu::WarpOp::MatchAny, mask, value, 0, 32, brrr_file, brrr_line);
}
template <typename T>
unsigned __match_all_sync(unsigned mask, T value, int* pred, BRRR_CPU_HERE) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 16, "warp intrinsics move values of up to 16 bytes");
    unsigned result = 0;
    brrr_cpu::WarpCall c{brrr_cpu::WarpOp::MatchAll, mask, 0, 32, brrr_file, brrr_line, &value,
                         static_cast<int>(sizeof(T)), false, &result, 0};
    brrr_cpu::warp(c);
    *pred = static_cast<int>(c.aux);
    return result;
}
#define BRRR_CPU_REDUCE(name, op, T) \
    inline T name(unsigned mask, T value, BRRR_CPU_HERE) { \
        return brrr_cpu::warp_call<T>(brrr_cpu::WarpOp::op, mask, value, 0, 32, brrr_file, brrr_line); \
    }
BRRR_CPU_REDUCE(__reduce_add_sync, ReduceAdd, unsigned)
BRRR_CPU_REDUCE(__reduce_add_sync, ReduceAdd, int)
BRRR_CPU_REDUCE(__reduce_min_sync, ReduceMin, unsigned)
BRRR_CPU_REDUCE(__reduce_min_sync, ReduceMin, int)
BRRR_CPU_REDUCE(__reduce_max_sync, ReduceMax, unsigned)
BRRR_CPU_REDUCE(__reduce_max_sync, ReduceMax, int)
BRRR_CPU_REDUCE(__reduce_and_sync, ReduceAnd, unsigned)
BRRR_CPU_REDUCE(__reduce_or_sync, ReduceOr, unsigned)
BRRR_CPU_REDUCE(__reduce_xor_sync, ReduceXor, unsigned)
#undef BRRR_CPU_REDUCE

inline void __nanosleep(unsigned, BRRR_CPU_HERE) { brrr_cpu::yield(brrr_file, brrr_line); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_signal_fence(__ATOMIC_SEQ_CST); }
// Out of line: a std::string made here would be built by kernel.cu's instrumented code, and the
// memory checks would report its heap buffer as an out-of-bounds write at a libstdc++ line.
[[noreturn]] inline void __trap(BRRR_CPU_HERE) { brrr_cpu::trap(brrr_file, brrr_line); }
inline void __brkpt() { __builtin_trap(); }
inline long long clock64() { return static_cast<long long>(__builtin_ia32_rdtsc()); }

// ---- atomics: real ones, since blocks may run on several OS threads at once -----------------------
// A checked build (pipeline/memcheck.py) leaves atomics out of its instrumentation: two threads'
// atomics on one shared element are no race. Where brrr_cpu_memcheck.cpp is linked in, their
// bounds are still checked, at the kernel's line (noinline: the return address is the call site).
extern "C" void brrr_cpu_atomic_checked(const void* address, size_t size, const void* pc) __attribute__((weak));
#define BRRR_CPU_ATOMIC __attribute__((no_sanitize_address, noinline))
#define BRRR_CPU_ATOMIC_CHECK(address) \
    if (brrr_cpu_atomic_checked) brrr_cpu_atomic_checked(address, sizeof(*(address)), __builtin_return_address(0))
namespace brrr_cpu {
// Every atomic is a poll the scheduler watches for a thread spinning on memory (a lock, a flag:
// brrr_cpu_runtime.cpp): a write if it changed the memory, a read if it did not (a failed CAS).
void watch(const void* address, bool write, const void* pc);

template <typename T, typename F>
__attribute__((no_sanitize_address)) T atomic_update(T* address, F f, const void* pc) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8, "atomics on 2, 4 or 8 bytes");
    using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
    Bits* p = reinterpret_cast<Bits*>(address);
    Bits old = __atomic_load_n(p, __ATOMIC_RELAXED);
    for (;;) {
        T value;
        std::memcpy(&value, &old, sizeof(T));
        T updated = f(value);
        Bits desired;
        std::memcpy(&desired, &updated, sizeof(T));
        if (__atomic_compare_exchange_n(p, &old, desired, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
            watch(address, desired != old, pc);
            return value;
        }
    }
}
// An integer atomic the CPU has: its old value, watched as above.
template <typename T>
T atomic_done(T* address, T old, T now, const void* pc) {
    watch(address, old != now, pc);
    return old;
}
}  // namespace brrr_cpu

#define BRRR_CPU_HERE_PC __builtin_return_address(0)
template <typename T>
BRRR_CPU_ATOMIC T atomicAdd(T* address, T val) {
    BRRR_CPU_ATOMIC_CHECK(address);
    if constexpr (std::is_integral_v<T>) {
        const T old = __atomic_fetch_add(address, val, __ATOMIC_SEQ_CST);
        return brrr_cpu::atomic_done(address, old, static_cast<T>(old + val), BRRR_CPU_HERE_PC);
    } else {
        return brrr_cpu::atomic_update(address, [val](T v) { return static_cast<T>(v + val); }, BRRR_CPU_HERE_PC);
    }
}
template <typename T>
BRRR_CPU_ATOMIC T atomicSub(T* address, T val) {
    BRRR_CPU_ATOMIC_CHECK(address);
    if constexpr (std::is_integral_v<T>) {
        const T old = __atomic_fetch_sub(address, val, __ATOMIC_SEQ_CST);
        return brrr_cpu::atomic_done(address, old, static_cast<T>(old - val), BRRR_CPU_HERE_PC);
    } else {
        return brrr_cpu::atomic_update(address, [val](T v) { return static_cast<T>(v - val); }, BRRR_CPU_HERE_PC);
    }
}
template <typename T>
BRRR_CPU_ATOMIC T atomicExch(T* address, T val) {
    BRRR_CPU_ATOMIC_CHECK(address);
    return brrr_cpu::atomic_update(address, [val](T) { return val; }, BRRR_CPU_HERE_PC);
}
template <typename T>
BRRR_CPU_ATOMIC T atomicMax(T* address, T val) {
    BRRR_CPU_ATOMIC_CHECK(address);
    return brrr_cpu::atomic_update(address, [val](T v) { return v < val ? val : v; }, BRRR_CPU_HERE_PC);
}
template <typename T>
BRRR_CPU_ATOMIC T atomicMin(T* address, T val) {
    BRRR_CPU_ATOMIC_CHECK(address);
    return brrr_cpu::atomic_update(address, [val](T v) { return val < v ? val : v; }, BRRR_CPU_HERE_PC);
}
template <typename T>
BRRR_CPU_ATOMIC T atomicAnd(T* address, T val) {
    BRRR_CPU_ATOMIC_CHECK(address);
    const T old = __atomic_fetch_and(address, val, __ATOMIC_SEQ_CST);
    return brrr_cpu::atomic_done(address, old, static_cast<T>(old & val), BRRR_CPU_HERE_PC);
}
template <typename T>
BRRR_CPU_ATOMIC T atomicOr(T* address, T val) {
    BRRR_CPU_ATOMIC_CHECK(address);
    const T old = __atomic_fetch_or(address, val, __ATOMIC_SEQ_CST);
    return brrr_cpu::atomic_done(address, old, static_cast<T>(old | val), BRRR_CPU_HERE_PC);
}
template <typename T>
BRRR_CPU_ATOMIC T atomicXor(T* address, T val) {
    BRRR_CPU_ATOMIC_CHECK(address);
    const T old = __atomic_fetch_xor(address, val, __ATOMIC_SEQ_CST);
    return brrr_cpu::atomic_done(address, old, static_cast<T>(old ^ val), BRRR_CPU_HERE_PC);
}
template <typename T>
BRRR_CPU_ATOMIC T atomicCAS(T* address, T compare, T val) {
    BRRR_CPU_ATOMIC_CHECK(address);
    const T expected = compare;
    __atomic_compare_exchange_n(address, &compare, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return brrr_cpu::atomic_done(address, compare, compare == expected ? val : compare, BRRR_CPU_HERE_PC);
}
BRRR_CPU_ATOMIC inline unsigned atomicInc(unsigned* address, unsigned limit) {
    BRRR_CPU_ATOMIC_CHECK(address);
    return brrr_cpu::atomic_update(address, [limit](unsigned v) { return v >= limit ? 0u : v + 1; }, BRRR_CPU_HERE_PC);
}
BRRR_CPU_ATOMIC inline unsigned atomicDec(unsigned* address, unsigned limit) {
    BRRR_CPU_ATOMIC_CHECK(address);
    return brrr_cpu::atomic_update(address, [limit](unsigned v) { return (v == 0 || v > limit) ? limit : v - 1; },
                                   BRRR_CPU_HERE_PC);
}
#define BRRR_CPU_SCOPED(name) \
    template <typename... A> auto name##_block(A... a) { return name(a...); } \
    template <typename... A> auto name##_system(A... a) { return name(a...); }
BRRR_CPU_SCOPED(atomicAdd) BRRR_CPU_SCOPED(atomicSub) BRRR_CPU_SCOPED(atomicExch) BRRR_CPU_SCOPED(atomicMax)
BRRR_CPU_SCOPED(atomicMin) BRRR_CPU_SCOPED(atomicAnd) BRRR_CPU_SCOPED(atomicOr) BRRR_CPU_SCOPED(atomicXor)
BRRR_CPU_SCOPED(atomicCAS)
#undef BRRR_CPU_SCOPED

// ---- loads and stores with cache hints: plain accesses here ---------------------------------------
// Always inlined, so the access is the caller's: the memory checks place a fault through one at the
// kernel's line (symbolize: the first inlined frame outside brrr's headers), and gdb steps over it.
#define BRRR_CPU_STAND_IN [[gnu::always_inline, gnu::artificial]] inline
template <typename T> BRRR_CPU_STAND_IN T __ldg(const T* p) { return *p; }
template <typename T> BRRR_CPU_STAND_IN T __ldcg(const T* p) { return *p; }
template <typename T> BRRR_CPU_STAND_IN T __ldca(const T* p) { return *p; }
template <typename T> BRRR_CPU_STAND_IN T __ldcs(const T* p) { return *p; }
template <typename T> BRRR_CPU_STAND_IN T __ldlu(const T* p) { return *p; }
template <typename T> BRRR_CPU_STAND_IN T __ldcv(const T* p) { return *p; }
template <typename T> BRRR_CPU_STAND_IN void __stcg(T* p, T v) { *p = v; }
template <typename T> BRRR_CPU_STAND_IN void __stcs(T* p, T v) { *p = v; }
template <typename T> BRRR_CPU_STAND_IN void __stwb(T* p, T v) { *p = v; }
template <typename T> BRRR_CPU_STAND_IN void __stwt(T* p, T v) { *p = v; }

// ---- math: CUDA's global overloads and intrinsics --------------------------------------------------
// <math.h> gives exp(float) etc. their float overloads in the global namespace, as CUDA does. The
// fast intrinsics (__expf, ...) are the accurate functions here: within what they promise.
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline unsigned max(int a, unsigned b) { return max(static_cast<unsigned>(a), b); }
inline unsigned max(unsigned a, int b) { return max(a, static_cast<unsigned>(b)); }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double max(double a, float b) { return fmax(a, b); }
inline int min(int a, int b) { return a < b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned min(int a, unsigned b) { return min(static_cast<unsigned>(a), b); }
inline unsigned min(unsigned a, int b) { return min(a, static_cast<unsigned>(b)); }
inline long min(long a, long b) { return a < b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline float min(float a, float b) { return fminf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double min(double a, float b) { return fmin(a, b); }

inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
inline double rcbrt(double x) { return 1.0 / cbrt(x); }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752); }
inline float sinpif(float x) { return sinf(3.14159265358979323846f * x); }
inline float cospif(float x) { return cosf(3.14159265358979323846f * x); }
inline double sinpi(double x) { return sin(3.14159265358979323846 * x); }
inline double cospi(double x) { return cos(3.14159265358979323846 * x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return exp10f(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline void __sincosf(float x, float* s, float* c) { sincosf(x, s, c); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __tanhf(float x) { return tanhf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x != x ? 0.0f : fminf(fmaxf(x, 0.0f), 1.0f); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __frcp_rn(float a) { return 1.0f / a; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }
inline float __frsqrt_rn(float a) { return 1.0f / sqrtf(a); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dsub_rn(double a, double b) { return a - b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline double __ddiv_rn(double a, double b) { return a / b; }
inline double __drcp_rn(double a) { return 1.0 / a; }
inline double __dsqrt_rn(double a) { return sqrt(a); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }

inline int __float2int_rn(float x) { return static_cast<int>(nearbyintf(x)); }
inline int __float2int_rz(float x) { return static_cast<int>(x); }
inline int __float2int_rd(float x) { return static_cast<int>(floorf(x)); }
inline int __float2int_ru(float x) { return static_cast<int>(ceilf(x)); }
inline unsigned __float2uint_rn(float x) { return static_cast<unsigned>(nearbyintf(x)); }
inline unsigned __float2uint_rz(float x) { return static_cast<unsigned>(x); }
inline long long __float2ll_rn(float x) { return static_cast<long long>(nearbyintf(x)); }
inline long long __float2ll_rz(float x) { return static_cast<long long>(x); }
inline int __double2int_rn(double x) { return static_cast<int>(nearbyint(x)); }
inline int __double2int_rz(double x) { return static_cast<int>(x); }
inline long long __double2ll_rn(double x) { return static_cast<long long>(nearbyint(x)); }
inline float __double2float_rn(double x) { return static_cast<float>(x); }
inline float __int2float_rn(int x) { return static_cast<float>(x); }
inline float __uint2float_rn(unsigned x) { return static_cast<float>(x); }
inline float __ll2float_rn(long long x) { return static_cast<float>(x); }
inline double __int2double_rn(int x) { return static_cast<double>(x); }
inline double __ll2double_rn(long long x) { return static_cast<double>(x); }

namespace brrr_cpu {
template <typename To, typename From>
To bits(From f) {
    static_assert(sizeof(To) == sizeof(From), "same size");
    To t;
    std::memcpy(&t, &f, sizeof(To));
    return t;
}
}  // namespace brrr_cpu
inline float __int_as_float(int x) { return brrr_cpu::bits<float>(x); }
inline int __float_as_int(float x) { return brrr_cpu::bits<int>(x); }
inline float __uint_as_float(unsigned x) { return brrr_cpu::bits<float>(x); }
inline unsigned __float_as_uint(float x) { return brrr_cpu::bits<unsigned>(x); }
inline double __longlong_as_double(long long x) { return brrr_cpu::bits<double>(x); }
inline long long __double_as_longlong(double x) { return brrr_cpu::bits<long long>(x); }
inline int __double2hiint(double x) { return static_cast<int>(brrr_cpu::bits<unsigned long long>(x) >> 32); }
inline int __double2loint(double x) { return static_cast<int>(brrr_cpu::bits<unsigned long long>(x) & 0xffffffffu); }
inline double __hiloint2double(int hi, int lo) {
    return brrr_cpu::bits<double>((static_cast<unsigned long long>(static_cast<unsigned>(hi)) << 32) | static_cast<unsigned>(lo));
}

inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline unsigned long long __brevll(unsigned long long x) {
    return (static_cast<unsigned long long>(__brev(static_cast<unsigned>(x))) << 32) | __brev(static_cast<unsigned>(x >> 32));
}
inline int __mulhi(int a, int b) { return static_cast<int>((static_cast<long long>(a) * b) >> 32); }
inline unsigned __umulhi(unsigned a, unsigned b) { return static_cast<unsigned>((static_cast<unsigned long long>(a) * b) >> 32); }
inline long long __mul64hi(long long a, long long b) { return static_cast<long long>((static_cast<__int128>(a) * b) >> 64); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline int __mul24(int a, int b) { return ((a << 8) >> 8) * ((b << 8) >> 8); }
inline unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
inline unsigned __sad(int a, int b, unsigned c) { return (a > b ? a - b : b - a) + c; }
inline unsigned __usad(unsigned a, unsigned b, unsigned c) { return (a > b ? a - b : b - a) + c; }
inline unsigned __funnelshift_l(unsigned lo, unsigned hi, unsigned s) {
    return static_cast<unsigned>((((static_cast<unsigned long long>(hi) << 32) | lo) << (s & 31)) >> 32);
}
inline unsigned __funnelshift_r(unsigned lo, unsigned hi, unsigned s) {
    return static_cast<unsigned>((((static_cast<unsigned long long>(hi) << 32) | lo) >> (s & 31)));
}
// The clamped forms shift by min(s, 32) instead of s & 31.
inline unsigned __funnelshift_lc(unsigned lo, unsigned hi, unsigned s) {
    return static_cast<unsigned>((((static_cast<unsigned long long>(hi) << 32) | lo) << (s < 32 ? s : 32)) >> 32);
}
inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned s) {
    return static_cast<unsigned>((((static_cast<unsigned long long>(hi) << 32) | lo) >> (s < 32 ? s : 32)));
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    const unsigned long long v = (static_cast<unsigned long long>(y) << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; ++i) r |= static_cast<unsigned>((v >> (((s >> (4 * i)) & 7) * 8)) & 0xff) << (8 * i);
    return r;
}

// ---- PTX the rewriter translates (pipeline/cpu_source.py): the instruction's result in C++ ------
namespace brrr_cpu::ptx {
inline float ftz(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }
inline float rcp_approx_f32(float x) { return 1.0f / x; }
inline float rcp_approx_ftz_f32(float x) { return ftz(1.0f / ftz(x)); }
inline double rcp_rn_f64(double x) { return 1.0 / x; }
inline float rcp_rn_f32(float x) { return 1.0f / x; }
inline float ex2_approx_f32(float x) { return exp2f(x); }
inline float ex2_approx_ftz_f32(float x) { return ftz(exp2f(ftz(x))); }
inline float lg2_approx_f32(float x) { return log2f(x); }
inline float lg2_approx_ftz_f32(float x) { return ftz(log2f(ftz(x))); }
inline float sqrt_approx_f32(float x) { return sqrtf(x); }
inline float sqrt_approx_ftz_f32(float x) { return ftz(sqrtf(ftz(x))); }
inline float rsqrt_approx_f32(float x) { return 1.0f / sqrtf(x); }
inline float rsqrt_approx_ftz_f32(float x) { return ftz(1.0f / sqrtf(ftz(x))); }
inline double rsqrt_approx_f64(double x) { return 1.0 / sqrt(x); }
inline float tanh_approx_f32(float x) { return tanhf(x); }
inline float sin_approx_f32(float x) { return sinf(x); }
inline float sin_approx_ftz_f32(float x) { return ftz(sinf(ftz(x))); }
inline float cos_approx_f32(float x) { return cosf(x); }
inline float cos_approx_ftz_f32(float x) { return ftz(cosf(ftz(x))); }
inline unsigned laneid() { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32; }

// What nvcc takes as an asm operand of each constraint: a scalar of the register's size, an integer (or
// a pointer) for h, r and l, float for f and double for d ("asm operand type size(8) does not match
// type/size implied by constraint 'r'"). The CPU rewrite asserts it of every operand, so that what
// builds on the CPU builds for a GPU.
template <char C, typename T>
constexpr bool operand_fits() {
    using U = std::remove_cvref_t<T>;
    if constexpr (C == 'f') return std::is_same_v<U, float>;
    else if constexpr (C == 'd') return std::is_same_v<U, double>;
    else {  // a pointer by conversion: std::is_pointer is false for a __restrict__ one (`&A[i]` of a restrict A)
        constexpr bool pointer = !std::is_class_v<U> && !std::is_union_v<U> && std::is_convertible_v<U, const volatile void*>;
        return (std::is_integral_v<U> || std::is_enum_v<U> || pointer) && sizeof(std::decay_t<U>) == (C == 'h' ? 2 : C == 'r' ? 4 : 8);
    }
}
}  // namespace brrr_cpu::ptx
