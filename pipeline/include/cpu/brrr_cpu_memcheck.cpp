// Memory checks of the CPU execution of kernel.cu: an access outside every tensor passed to the
// launch, and a race on shared memory, each reported as a fault at kernel.cu:line with the block
// and thread (brrr_cpu::fault), before the access happens, so brrr itself never crashes.
//
// How: a checked build compiles the rewritten kernel.cu with gcc's outline address-sanitizer
// instrumentation (-fsanitize=kernel-address with calls for every access, see
// pipeline/memcheck.py), so each load and store of kernel code first calls
// __asan_load<N>_noabort(address) or __asan_store<N>_noabort(address). Those are defined here,
// not by libasan. Each address is classified, cheapest first: the running thread's own stack
// (its locals), the OS thread's stack (the launch's glue), a tensor argument's allocation (from
// the registry in brrr_cpu_alloc.cpp), the block's __shared__ variables (kept in a shadow that
// finds races), the loaded images (constant tables, string literals, globals). Anything else is
// out of bounds. The scheduler (brrr_cpu_runtime.cpp) is compiled without the instrumentation and
// tells this file about launches, blocks, threads, barriers and warp syncs through its hooks.
//
// This file is compiled without -g, so gdb's `step` never enters the callbacks.
#include "brrr_cpu_memcheck.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "brrr_cpu.h"
#include "brrr_cpu_async.h"

namespace {

using brrr_cpu::Launch;

struct Argument {
    int index;
    uintptr_t value;      // the pointer passed
    uintptr_t lo, hi;     // the allocation it points into
    std::size_t element;  // sizeof(*pointer)
    int offset;           // -1: the argument; else the pointer's byte offset in a struct argument
};

struct Range {
    uintptr_t lo, hi;
};

// The launch running now (launches do not nest): read-only while its blocks run.
struct LaunchState {
    const Launch* launch = nullptr;
    std::vector<Argument> args;
    std::vector<Range> images;
    unsigned long image_generation = ~0ul;
    bool bounds = false;  // every pointer argument's allocation is known
    uint64_t serial = 0;
    // The launching OS thread's stack, where the launch keeps the kernel's arguments: blocks on other
    // OS threads (started beside a block that waits on memory) read them from there.
    uintptr_t glue_lo = 0, glue_hi = 0;
};
LaunchState L;

// One access to a byte of shared memory, as the shadow keeps it.
struct Access {
    int32_t thread = -1;  // linear in the block, -1: none
    uint32_t wsync = 0;   // the thread's count of warp syncs at the access
    const void* pc = nullptr;
};

// The last copy onto a barrier that landed in an element: by whom, where, and at which of the
// barrier's phases (its count of completed phases once the copy's completed).
struct Landed {
    static constexpr uint32_t kNone = ~0u;
    uint32_t barrier = kNone;
    int32_t thread = -1;
    uint64_t phase = 0;
    uint64_t offset = 0;  // the barrier's, in shared memory
    bool mbarrier = false;
    const void* pc = nullptr;
};

// A byte of shared memory between two barriers (its epoch): the last writer and up to two
// distinct readers, enough to find a conflicting pair whenever there is one (see read()).
struct Cell {
    uint64_t epoch = 0;
    Access writer, reader1, reader2;
};

struct Shared {
    const char* name;
    uintptr_t lo, hi;
    std::size_t element;
    int rank;
    std::size_t dims[4];
    // One per element (per byte where the type is unknown): an access covers the elements it
    // touches, so a 16-byte pack of floats is 4 cells, and two threads writing different bytes
    // of one element count as touching the same element.
    std::vector<Cell> cells;
    // The bytes a cell covers: an element, or 1 for a struct or union element (a CUB TempStorage, a
    // union of them), whose fields are separate memory that different threads may write.
    std::size_t cell = 1;
    int cell_shift = 0;  // log2(cell) where cell is a power of two, else -1 (cell_of)
    // Elements an asynchronous copy (cp.async, brrr_cpu_async_impl.h) will write when its wait lands
    // it: the issuing thread and line, kept across barriers (a barrier does not complete a copy).
    std::vector<Access> flights;
    std::size_t in_flight = 0;
    // Elements a copy onto a barrier landed in when one of the barrier's phases completed: a thread
    // may read or write them once it has seen that phase (brrr_cpu::async::seen_phases). Kept until
    // a thread that has seen it writes the element. barrier == kNone: no such copy.
    std::vector<Landed> landings;
    std::size_t landed = 0;
};

// Per OS thread: the block it runs (blocks may run on several OS threads at once).
struct BlockState {
    bool running = false;  // a thread of a checked launch is running
    uintptr_t stack_lo = 0, stack_hi = 0;
    uintptr_t host_lo = 0, host_hi = 0;
    int32_t thread = -1;
    uint64_t epoch = 0;
    std::vector<Shared> shared;
    std::vector<uint32_t> wsync;  // per thread of the block
    bool raced = false;  // a race is held by the scheduler for this block: later ones go unnamed (and unsymbolized)
    // An index past an array of known size (-fsanitize=bounds), held until that thread's next access to
    // its stack: into __shared__ memory the access itself is named better (the variable, the element).
    const struct UbsanOutOfBounds* past = nullptr;
    uintptr_t past_index = 0;
    const void* past_pc = nullptr;
    int32_t past_thread = -1;
};
// A pointer, so the hot path reads a plain thread-local word (no TLS init wrapper).
thread_local BlockState* B = nullptr;

uint64_t next_epoch() {
    static std::atomic<uint64_t> epochs{1};
    return epochs.fetch_add(1);
}

// --- writes recorded for the debugger ------------------------------------------------------------

struct Writer {
    const void* kernel;
    uint3 block, thread;
};
std::mutex writers_mutex;
std::unordered_map<uintptr_t, Writer> writers;
std::unordered_map<const void*, std::string> kernel_names;
bool recording = false;

// --- where things are ---------------------------------------------------------------------------

using FindFn = int (*)(const void*, const void**, std::size_t*);

// The allocation registry is a library of its own, loaded once per process with RTLD_GLOBAL
// (pipeline/memcheck.py) before the tensors are made.
FindFn find_allocation() {
    static FindFn fn = reinterpret_cast<FindFn>(dlsym(RTLD_DEFAULT, "brrr_alloc_find"));
    return fn;
}

int add_image(struct dl_phdr_info* info, std::size_t, void* out) {
    auto* images = static_cast<std::vector<Range>*>(out);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const auto& ph = info->dlpi_phdr[i];
        if (ph.p_type != PT_LOAD) continue;
        const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
        images->push_back({lo, lo + ph.p_memsz});
    }
    return 0;
}

int count_images(struct dl_phdr_info* info, std::size_t, void* out) {
    *static_cast<unsigned long*>(out) = info->dlpi_adds + info->dlpi_subs;
    return 1;
}

void host_stack(uintptr_t& lo, uintptr_t& hi) {
    pthread_attr_t attr;
    lo = hi = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void* base = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &base, &size) == 0) {
        lo = reinterpret_cast<uintptr_t>(base);
        hi = lo + size;
    }
    pthread_attr_destroy(&attr);
}

// --- symbolizing, only when reporting ------------------------------------------------------------

struct Place {
    std::string file;
    int line = 0;
};

std::string run_command(const std::string& command) {
    std::string out;
    if (FILE* p = popen(command.c_str(), "r")) {
        char buf[4096];
        std::size_t n;
        while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
        pclose(p);
    }
    return out;
}

// Where brrr's own headers are (this file's folder): a frame there is brrr's stand-in, not the user's code.
const std::string& brrr_include_dir() {
    static const std::string dir = [] {
        const std::string file = __FILE__;
        return file.substr(0, file.rfind('/') + 1);
    }();
    return dir;
}

bool brrr_header(const std::string& file) {
    const std::string base = file.substr(file.rfind('/') + 1);
    return (!brrr_include_dir().empty() && file.rfind(brrr_include_dir(), 0) == 0) || base.rfind("brrr_cpu", 0) == 0;
}

// kernel.cu:line of the access whose call returns to `pc`: addr2line on the library's line table
// (-gdwarf-4: binutils 2.40's addr2line misreads gcc 12's DWARF 5 file table after #line). With -i
// it lists the inlined calls too, innermost first: an access made inside one of brrr's stand-ins
// (__ldcs, __stcs, __ldg: always inlined) is placed at the user's line that called it.
Place symbolize(const void* pc) {
    Dl_info info{};
    if (dladdr(pc, &info) == 0 || info.dli_fname == nullptr) return {"?", 0};
    const uintptr_t offset = reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase) - 1;
    char address[32];
    snprintf(address, sizeof address, "0x%" PRIxPTR, offset);
    const std::string out = run_command(std::string("addr2line -i -e '") + info.dli_fname + "' " + address + " 2>/dev/null");
    Place first{"?", 0};
    for (std::size_t at = 0; at < out.size();) {
        const std::size_t end = std::min(out.find('\n', at), out.size());
        const std::string frame = out.substr(at, end - at);
        at = end + 1;
        const auto colon = frame.rfind(':');
        if (colon == std::string::npos) continue;
        Place p{frame.substr(0, colon), std::atoi(frame.c_str() + colon + 1)};
        if (p.line <= 0) continue;
        if (!brrr_header(p.file)) return p;
        if (first.line == 0) first = p;
    }
    return first;
}

std::string triple(uint3 v) {
    return "(" + std::to_string(v.x) + ", " + std::to_string(v.y) + ", " + std::to_string(v.z) + ")";
}

uint3 thread_of(int32_t linear) {
    const dim3 d = L.launch->config.block;
    const unsigned t = static_cast<unsigned>(linear);
    return {t % d.x, t / d.x % d.y, t / (d.x * d.y)};
}

std::string read_file(const std::string& path) {
    std::string text;
    if (FILE* f = fopen(path.c_str(), "r")) {
        char buf[4096];
        std::size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
        fclose(f);
    }
    return text;
}

bool ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The parameters of `__global__ ... name(...)` in kernel.cu, by their names.
std::vector<std::string> parameter_names(const std::string& file, const std::string& kernel) {
    std::string base = kernel.substr(0, kernel.find_first_of("<("));
    if (const auto colon = base.rfind("::"); colon != std::string::npos) base = base.substr(colon + 2);
    const std::string text = read_file(file);
    for (std::size_t at = text.find("__global__"); at != std::string::npos; at = text.find("__global__", at + 1)) {
        std::size_t name_at = text.find(base, at);
        while (name_at != std::string::npos &&
               ((name_at > 0 && ident(text[name_at - 1])) || ident(text[name_at + base.size()])))
            name_at = text.find(base, name_at + 1);
        if (name_at == std::string::npos) break;
        std::size_t open = text.find_first_not_of(" \t\n", name_at + base.size());
        if (open == std::string::npos || text[open] != '(') continue;
        std::vector<std::string> names;
        int depth = 0;
        std::string current;
        for (std::size_t i = open + 1; i < text.size(); ++i) {
            const char c = text[i];
            if (c == '(' || c == '<' || c == '[') ++depth;
            if (c == ')' && depth == 0) {
                names.push_back(current);
                break;
            }
            if (c == ')' || c == '>' || c == ']') --depth;
            if (c == ',' && depth == 0) {
                names.push_back(current);
                current.clear();
                continue;
            }
            current += c;
        }
        for (std::string& n : names) {
            if (const auto eq = n.find('='); eq != std::string::npos) n.resize(eq);
            const std::size_t e = n.find_last_not_of(" \t\n");
            std::size_t b = e == std::string::npos ? 0 : e + 1;
            while (b > 0 && ident(n[b - 1])) --b;
            n = e == std::string::npos ? "" : n.substr(b, e + 1 - b);
        }
        return names;
    }
    return {};
}

// The file defining the launched kernel, from its address: its parameters are named there. An access
// inside a helper of a header (llm.c's common.h) is placed in that header, which has no such kernel.
std::string kernel_file() {
    static std::mutex mutex;  // two blocks' threads may report at once
    static std::unordered_map<const void*, std::string> files;
    std::lock_guard<std::mutex> lock(mutex);
    const void* kernel = L.launch->kernel;
    if (!files.count(kernel))  // symbolize steps back one byte from a return address: the entry's own line
        files[kernel] = symbolize(static_cast<const char*>(kernel) + 1).file;
    return files[kernel];
}

std::string argument_name(const Argument& a, const Place& place) {
    std::vector<std::string> names = parameter_names(kernel_file(), L.launch->name);
    for (const std::string& file : {place.file, std::string(L.launch->site.file)})  // where addr2line has no line
        if (names.empty()) names = parameter_names(file, L.launch->name);
    const std::string name = a.index < static_cast<int>(names.size()) && !names[a.index].empty()
                                 ? names[a.index] : "argument " + std::to_string(a.index + 1);
    return a.offset < 0 ? name : name + "@" + std::to_string(a.offset);
}

[[noreturn]] void report(const char* kind, const std::string& detail, const Place& place) {
    B->running = false;  // the report itself must not be checked
    static std::string file;  // fault() keeps the pointer until the launch throws
    file = place.file;
    brrr_cpu::fault(kind, detail, file.c_str(), place.line);
}

// --- out of bounds -------------------------------------------------------------------------------

std::string plural(uint64_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// What an out-of-bounds address is measured against: a tensor argument or a __shared__ variable.
struct Extent {
    std::string name;
    uintptr_t value, hi;  // where indices start, and the end
    std::size_t element;
    const char* unit = "element";  // "byte" where the element type is unknown (a pointer inside a struct)
};

[[noreturn]] void out_of_bounds(uintptr_t addr, std::size_t size, bool write, const void* pc) {
    const Place place = symbolize(pc);
    // The nearest extent: the access ran past its end or before its start.
    std::vector<Extent> extents;
    // A pointer inside a struct argument is named NAME@OFFSET (the struct, the pointer's byte offset in it).
    for (const Argument& a : L.args) {
        extents.push_back({argument_name(a, place), a.value, a.hi, a.element, a.offset < 0 ? "element" : "byte"});
    }
    for (const Shared& s : B->shared) {
        if (s.hi > s.lo) extents.push_back({std::string("__shared__ ") + s.name, s.lo, s.hi, s.element});
    }
    const Extent* best = nullptr;
    uintptr_t best_gap = UINTPTR_MAX;
    for (const Extent& x : extents) {
        const uintptr_t gap = addr >= x.hi ? addr - x.hi : addr < x.value ? x.value - addr : 0;
        if (best == nullptr || gap < best_gap) best = &x, best_gap = gap;
    }
    const std::string access = plural(size, "byte");
    std::string detail;
    std::string empties;  // the 0-element tensors (null data_ptr) an access near address 0 may mean
    for (const Extent& x : extents) {
        if (best != nullptr && best->value == 0 && x.value == 0 && x.hi == 0) empties += (empties.empty() ? "" : " or ") + x.name;
    }
    if (!empties.empty()) {
        detail = access + " at element " + std::to_string(addr / best->element) + " of " + empties +
                 " (0 elements: a 0-element tensor's data_ptr() is null)";
    } else if (best == nullptr) {
        char hex[32];
        snprintf(hex, sizeof hex, "0x%" PRIxPTR, addr);
        detail = access + " at " + hex + ", and the launch has no tensor argument";
    } else {
        const std::string& name = best->name;
        const std::string bare = name.substr(name.rfind(' ') + 1);
        const std::size_t e = best->element;
        const uint64_t elements = (best->hi - best->value) / e;
        const char* unit = best->unit;
        const std::string extent = name + " (" + plural(elements, unit) + ")";
        if (addr >= best->hi) {
            const uint64_t index = (addr - best->value) / e;
            detail = access + " at " + bare + "[" + std::to_string(index) + "], " +
                     plural(index + 1 - elements, unit) + " past the last " + unit + " of " + extent;
        } else if (addr >= best->value) {  // starts inside, ends outside: a wide access at the end
            const uint64_t index = (addr - best->value) / e;
            detail = access + " from " + bare + "[" + std::to_string(index) + "], which ends " +
                     plural(addr + size - best->hi, "byte") + " past the end of " + extent;
        } else {
            const uint64_t before = (best->value - addr + e - 1) / e;
            detail = access + " " + plural(before, unit) + " before the start of " + extent;
        }
    }
    report(write ? "out-of-bounds write" : "out-of-bounds read", detail, place);
}

// --- shared memory ---------------------------------------------------------------------------------

std::string element_name(const Shared& s, uintptr_t addr) {
    std::size_t flat = (addr - s.lo) / s.element;
    // A byte of a struct element: which one, then the element as usual.
    const std::string field = s.cell == s.element ? "" : "byte " + std::to_string((addr - s.lo) % s.element) + " of ";
    if (s.rank == 0 && !field.empty()) return field + s.name;
    if (s.rank <= 1) return field + s.name + "[" + std::to_string(flat) + "]";
    std::string index;
    for (int k = s.rank; k-- > 0;) {
        index = "[" + std::to_string(flat % s.dims[k]) + "]" + index;
        flat /= s.dims[k];
    }
    return field + s.name + index;
}

bool conflicts(const Access& a, int32_t thread, uint32_t wsync) {
    if (a.thread < 0 || a.thread == thread) return false;
    // Two lanes of one warp are ordered by a warp sync between their accesses.
    return a.thread / 32 != thread / 32 || a.wsync == wsync;
}

void race(const Shared& s, uintptr_t addr, const Access& first, bool first_write, bool write, const void* pc) {
    if (B->raced) return;
    B->raced = true;
    const Place now = symbolize(pc), then = symbolize(first.pc);
    const bool warp = first.thread / 32 == B->thread / 32;
    const std::string detail = std::string(write ? "writes " : "reads ") + element_name(s, addr) + ", which thread " +
                               triple(thread_of(first.thread)) + (first_write ? " wrote at " : " read at ") + then.file +
                               ":" + std::to_string(then.line) + " with no __syncthreads" +
                               (warp ? " or __syncwarp" : "") + " between the two";
    // Held back, not a stop: a barrier some threads skipped shows as a race first (brrr_cpu::race).
    B->running = false;  // the report itself must not be checked
    brrr_cpu::race("race on shared memory", detail, now.file.c_str(), now.line);
    B->running = true;
}

// The cell holding byte `addr`: a shift for a power-of-two cell (every scalar and vector type), a
// division otherwise. The two 64-bit divisions an access took were half of a checked matmul's time.
inline std::size_t cell_of(const Shared& s, uintptr_t addr) {
    const uintptr_t offset = addr - s.lo;
    return s.cell_shift >= 0 ? offset >> s.cell_shift : offset / s.cell;
}

// An access to an element an asynchronous copy has yet to land: the copy's line and this one.
void in_flight_check(const Shared& s, uintptr_t addr, std::size_t size, bool write, const void* pc) {
    const std::size_t first = cell_of(s, addr), last = cell_of(s, addr + size - 1);
    for (std::size_t i = first; i <= last; ++i) {
        const Access& f = s.flights[i];
        if (f.thread < 0) continue;
        const Place now = symbolize(pc), copy = symbolize(f.pc);
        const std::string detail = std::string(write ? "writes " : "reads ") + element_name(s, s.lo + i * s.cell) +
                                   ", which the asynchronous copy thread " + triple(thread_of(f.thread)) +
                                   " issued at " + copy.file + ":" + std::to_string(copy.line) +
                                   " has not landed: no cp.async.wait_group, __pipeline_wait_prior or pipeline/barrier "
                                   "wait of that thread completed it before this access";
        report(write ? "write before an asynchronous copy landed" : "read before an asynchronous copy landed", detail, now);
    }
}

// An access to an element a copy onto a barrier landed in, by a thread that has not seen the phase
// that landed it: on a GPU the bytes need not be there yet (nor, for a write, stay this thread's).
// The race checks cannot see it, since a phase's completion orders the block like a barrier.
void landed_check(const BlockState& b, Shared& s, uintptr_t addr, std::size_t size, bool write, const void* pc) {
    const std::size_t first = cell_of(s, addr), last = cell_of(s, addr + size - 1);
    uint32_t asked = Landed::kNone;
    uint64_t seen = 0;
    for (std::size_t i = first; i <= last; ++i) {
        Landed& l = s.landings[i];
        if (l.barrier == Landed::kNone) continue;
        if (l.barrier != asked) {
            asked = l.barrier;
            seen = brrr_cpu::async::seen_phases(l.barrier, b.thread);
        }
        if (seen >= l.phase) {
            if (write) {  // overwritten by a thread the landing is ordered before: no longer the copy's
                l = Landed{};
                --s.landed;
            }
            continue;
        }
        const Place now = symbolize(pc), copy = symbolize(l.pc);
        const uint64_t completed = l.phase - 1;
        const std::string barrier = std::string(l.mbarrier ? "the mbarrier" : "the cuda::barrier") + " at shared offset " +
                                    std::to_string(l.offset);
        const std::string detail =
            std::string(write ? "writes " : "reads ") + element_name(s, s.lo + i * s.cell) + ", where the copy thread " +
            triple(thread_of(l.thread)) + " issued at " + copy.file + ":" + std::to_string(copy.line) + " landed as phase " +
            std::to_string(completed) + " (parity " + std::to_string(completed % 2) + ") of " + barrier +
            " completed; this thread has not waited for that phase (mbarrier.try_wait / test_wait, cuda::barrier::wait), "
            "nor passed a __syncthreads or __syncwarp after a thread that did";
        report(write ? "write before an asynchronous copy landed" : "read before an asynchronous copy landed", detail, now);
    }
}

// b: the OS thread's BlockState, read once an access (a thread-local read is a call in a library).
void shared_access(BlockState& b, Shared& s, uintptr_t addr, std::size_t size, bool write, const void* pc) {
    if (s.in_flight) in_flight_check(s, addr, size, write, pc);
    if (s.landed) landed_check(b, s, addr, size, write, pc);
    const uint32_t ws = b.wsync[b.thread];
    const Access me{b.thread, ws, pc};
    const std::size_t first = cell_of(s, addr), last = cell_of(s, addr + size - 1);
    for (std::size_t i = first; i <= last; ++i) {
        Cell& c = s.cells[i];
        if (c.epoch != b.epoch) c = Cell{b.epoch, {}, {}, {}};
        if (write) {
            if (conflicts(c.writer, b.thread, ws)) race(s, s.lo + i * s.cell, c.writer, true, true, pc);
            if (conflicts(c.reader1, b.thread, ws)) race(s, s.lo + i * s.cell, c.reader1, false, true, pc);
            if (conflicts(c.reader2, b.thread, ws)) race(s, s.lo + i * s.cell, c.reader2, false, true, pc);
            c.writer = me;
        } else {
            if (conflicts(c.writer, b.thread, ws)) race(s, s.lo + i * s.cell, c.writer, true, false, pc);
            // Two distinct readers suffice: a writer is not both of them. A reader of this warp from
            // before a warp sync is replaced first, since it no longer conflicts with its lanes.
            if (c.reader1.thread < 0 || c.reader1.thread == b.thread) c.reader1 = me;
            else if (c.reader2.thread < 0 || c.reader2.thread == b.thread) c.reader2 = me;
            else if (c.reader1.thread / 32 == b.thread / 32 && c.reader1.wsync != ws) c.reader1 = me;
            else if (c.reader2.thread / 32 == b.thread / 32 && c.reader2.wsync != ws) c.reader2 = me;
        }
    }
}

// --- every access ------------------------------------------------------------------------------------

void record_write(uintptr_t addr, std::size_t size) {
    const uint3 block = blockIdx, thread = threadIdx;
    std::lock_guard<std::mutex> lock(writers_mutex);
    for (std::size_t i = 0; i < size; ++i) writers[addr + i] = Writer{L.launch->kernel, block, thread};
    kernel_names.emplace(L.launch->kernel, L.launch->name);
}

// Within a page of a __shared__ variable: an overrun of shared memory, whatever the tensors.
bool near_shared(uintptr_t addr) {
    for (const Shared& s : B->shared) {
        if (addr + 4096 >= s.lo && addr < s.hi + 4096) return true;
    }
    return false;
}

// atomic: bounds only; atomics on a shared element are no race with each other.
inline void check(BlockState* b, uintptr_t addr, std::size_t size, bool write, const void* pc, bool atomic = false) {
    if (b == nullptr || !b->running) return;  // host code of kernel.cu, or a launch that is not checked
    if (addr - b->stack_lo < b->stack_hi - b->stack_lo) {  // the thread's locals: a write there is progress
        if (write && !atomic) brrr_cpu::watch(reinterpret_cast<const void*>(addr), true, pc);
        return;
    }
    if (addr - b->host_lo < b->host_hi - b->host_lo) return;    // the launch's glue reads its arguments there
    if (addr - L.glue_lo < L.glue_hi - L.glue_lo) return;      // ... on the launching thread's stack
    // A poll the scheduler watches for a thread spinning on memory (an atomic watches itself).
    if (!atomic) brrr_cpu::watch(reinterpret_cast<const void*>(addr), write, pc);
    for (const Argument& a : L.args) {
        if (addr >= a.lo && addr + size <= a.hi) {
            if (write && recording) record_write(addr, size);
            return;
        }
    }
    for (Shared& s : b->shared) {
        if (addr >= s.lo && addr < s.hi) {
            if (addr + size > s.hi) out_of_bounds(addr, size, write, pc);
            if (!atomic) shared_access(*b, s, addr, size, write, pc);
            return;
        }
    }
    for (const Range& r : L.images) {
        if (addr >= r.lo && addr + size <= r.hi) return;
    }
    // Another block's shared memory through its cluster (distributed shared memory): bounds only.
    if (brrr_cpu::in_cluster_shared(reinterpret_cast<const void*>(addr), size)) return;
    // Without a known allocation for every argument only the shared variables bound an access.
    if (L.bounds || near_shared(addr)) out_of_bounds(addr, size, write, pc);
}

// --- the scheduler's hooks ---------------------------------------------------------------------------

void on_launch_begin(const Launch& launch) {
    L.launch = &launch;
    thread_local uintptr_t glue_lo = 0, glue_hi = 0;  // once an OS thread: the main thread's reads /proc/self/maps
    if (glue_hi == 0) host_stack(glue_lo, glue_hi);
    L.glue_lo = glue_lo;
    L.glue_hi = glue_hi;
    L.args.clear();
    L.bounds = find_allocation() != nullptr;
    ++L.serial;
    unsigned long generation = 0;
    dl_iterate_phdr(count_images, &generation);
    if (generation != L.image_generation) {
        L.images.clear();
        dl_iterate_phdr(add_image, &L.images);
        L.image_generation = generation;
    }
    for (int i = 0; i < launch.pointer_count; ++i) {
        const brrr_cpu::PointerArg& p = launch.pointers[i];
        if (p.address == nullptr) {
            // A 0-element tensor's data_ptr() is null: kept as an empty extent at 0, so a write through
            // it is named after it ("y[0], 1 element past the last element of y (0 elements)").
            if (p.offset < 0) L.args.push_back({p.index, 0, 0, 0, p.element_size, p.offset});
            continue;
        }
        const void* lo = nullptr;
        std::size_t bytes = 0;
        if (find_allocation() == nullptr || find_allocation()(p.address, &lo, &bytes) == 0) {
            // A pointer argument to memory torch did not allocate (or before the registry): no
            // bounds to hold. A word of a struct that points nowhere is an integer field.
            if (p.offset < 0) L.bounds = false;
            continue;
        }
        const auto l = reinterpret_cast<uintptr_t>(lo);
        L.args.push_back({p.index, reinterpret_cast<uintptr_t>(p.address), l, l + bytes, p.element_size, p.offset});
    }
}

void on_launch_end(const Launch&) {
    L.launch = nullptr;
    if (B != nullptr) B->running = false;
}

BlockState& state() {
    if (B == nullptr) {
        B = new BlockState();  // one per OS thread that runs blocks, kept
        host_stack(B->host_lo, B->host_hi);  // once: for the main thread it reads /proc/self/maps
    }
    return *B;
}

// The scheduler announces the extern dynamic region before the block itself.
void on_block_begin(const Launch& launch, uint3) {
    state();
    const dim3 d = launch.config.block;
    B->wsync.assign(static_cast<std::size_t>(d.x) * d.y * d.z, 0);
    B->epoch = next_epoch();
    B->raced = false;
    B->past = nullptr;
}

void on_block_end(const Launch&, uint3) {
    B->running = false;
    B->shared.clear();
}

void on_barrier_done(uint64_t) { B->epoch = next_epoch(); }

void on_shared_allocated(const brrr_cpu::SharedRegion& r) {
    const auto lo = reinterpret_cast<uintptr_t>(r.data);
    Shared s{r.name, lo, lo + r.size, r.element_size ? r.element_size : 1, r.rank, {}, {}};
    for (int k = 0; k < r.rank && k < 4; ++k) s.dims[k] = r.dims[k];
    s.cell = r.fields ? 1 : s.element;
    s.cell_shift = std::has_single_bit(s.cell) ? std::countr_zero(s.cell) : -1;
    s.cells.resize((r.size + s.cell - 1) / s.cell);
    state().shared.push_back(std::move(s));
}

void on_thread_resumed(int thread, const char* lo, const char* hi) {
    B->thread = thread;
    B->stack_lo = reinterpret_cast<uintptr_t>(lo);
    B->stack_hi = reinterpret_cast<uintptr_t>(hi);
    B->running = L.launch != nullptr;
}

void on_warp_done(int warp, unsigned mask) {
    for (int l = 0; l < 32; ++l) {
        const std::size_t t = static_cast<std::size_t>(warp) * 32 + l;
        if ((mask & (1u << l)) && t < B->wsync.size()) ++B->wsync[t];
    }
}

// A checked build installs the hooks when the library loads.
struct Install {
    Install() {
        brrr_cpu::Hooks& h = brrr_cpu::hooks();
        h.launch_begin = on_launch_begin;
        h.launch_end = on_launch_end;
        h.block_begin = on_block_begin;
        h.block_end = on_block_end;
        h.barrier_done = on_barrier_done;
        h.shared_allocated = on_shared_allocated;
        h.thread_resumed = on_thread_resumed;
        h.warp_done = on_warp_done;
    }
} install;

// --- misaligned accesses ---------------------------------------------------------------------------------

// -fsanitize=alignment (memcheck.py): gcc calls this where a typed access's address is not a multiple
// of its type's alignment (a float4 at 4 bytes past a multiple of 16). A GPU faults there ("misaligned
// address"); a CPU would read it and go on. The layout is gcc's libubsan's (TypeMismatchData v1).
struct UbsanLocation {
    const char* file;
    uint32_t line, column;
};
struct UbsanType {
    uint16_t kind, info;
    char name[1];
};
struct UbsanMismatch {
    UbsanLocation location;
    const UbsanType* type;
    unsigned char log_alignment, check_kind;
};

// gcc writes a type's name in quotes: 'float [4]'.
std::string ubsan_type_name(const UbsanType* t) {
    std::string name = t != nullptr ? t->name : "array";
    if (name.size() > 2 && name.front() == '\'' && name.back() == '\'') name = name.substr(1, name.size() - 2);
    return name;
}

[[noreturn]] void misaligned(const UbsanMismatch* d, uintptr_t addr, const void* pc) {
    Place place = symbolize(pc);
    if (place.line == 0 && d->location.file != nullptr) place = {d->location.file, static_cast<int>(d->location.line)};
    const uintptr_t align = uintptr_t(1) << d->log_alignment;
    const std::string type = d->type != nullptr ? ubsan_type_name(d->type) : "value";
    std::string where;
    for (const Argument& a : L.args) {
        if (addr >= a.lo && addr < a.hi) {
            where = ", " + std::to_string(addr - a.value) + " bytes from the start of " + argument_name(a, place);
            break;
        }
    }
    // gcc's kinds: 0 a load, 1 a store, others a use of the object (a member access, a copy).
    const char* kind = d->check_kind == 1 ? "misaligned write" : d->check_kind == 0 ? "misaligned read" : "misaligned access";
    report(kind,
           "a " + type + " (" + std::to_string(align) + "-byte aligned) at an address " + std::to_string(addr % align) +
               " bytes past a multiple of " + std::to_string(align) + where + " (a GPU faults: misaligned address)",
           place);
}

// --- indices past a local array ---------------------------------------------------------------------------

// -fsanitize=bounds (memcheck.py): gcc checks each index into an array whose size it knows (a local
// register array, a Pack<T, W>'s v[W]) and calls this past the end. Those live on the fiber's stack,
// which the address checks let pass: on a GPU they are registers or local memory, and an index past
// them is undefined behaviour that reads or writes whatever lies beside. Layout: libubsan's OutOfBoundsData.
struct UbsanOutOfBounds {
    UbsanLocation location;
    const UbsanType* array;
    const UbsanType* index;
};

// An integer ValueHandle held inline (gcc passes index types up to the pointer's width by value):
// info's low bit says signed, the rest log2 of the bit width.
std::string ubsan_integer(const UbsanType* t, uintptr_t value) {
    const unsigned bits = t != nullptr && t->kind == 0 ? 1u << (t->info >> 1) : 64u;
    if (t != nullptr && (t->info & 1) && bits <= 64) {
        const int64_t v = bits == 64 ? static_cast<int64_t>(value)
                                     : static_cast<int64_t>(value << (64 - bits)) >> (64 - bits);
        return std::to_string(v);
    }
    return std::to_string(value);
}

[[noreturn]] void index_out_of_bounds(const UbsanOutOfBounds* d, uintptr_t index, const void* pc) {
    Place place = symbolize(pc);
    if (place.line == 0 && d->location.file != nullptr) place = {d->location.file, static_cast<int>(d->location.line)};
    report("out-of-bounds index",
           "index " + ubsan_integer(d->index, index) + " into a local " + ubsan_type_name(d->array) +
               " (a register array, or an array member of a local struct such as Pack<T, W>'s v): past its end, "
               "where a GPU reads or writes whatever lies beside it",
           place);
}

}  // namespace

extern "C" void __ubsan_handle_out_of_bounds(UbsanOutOfBounds* d, uintptr_t index) {
    if (B == nullptr || !B->running || B->past != nullptr) return;  // host code, an unchecked launch, or held already
    B->past = d;
    B->past_index = index;
    B->past_pc = __builtin_return_address(0);
    B->past_thread = B->thread;
}

extern "C" void __ubsan_handle_out_of_bounds_abort(UbsanOutOfBounds* d, uintptr_t index) {
    __ubsan_handle_out_of_bounds(d, index);
}

extern "C" void __ubsan_handle_type_mismatch_v1(UbsanMismatch* d, uintptr_t addr) {
    if (B == nullptr || !B->running) return;  // host code of kernel.cu, or a launch that is not checked
    misaligned(d, addr, __builtin_return_address(0));
}

extern "C" void __ubsan_handle_type_mismatch_v1_abort(UbsanMismatch* d, uintptr_t addr) {
    __ubsan_handle_type_mismatch_v1(d, addr);
}

// --- the callbacks gcc's instrumentation calls ---------------------------------------------------------

// Every instrumented access of kernel.cu: checked, then an index past a local array this thread made
// is reported at this thread's next access to its own stack, where local arrays live (an index past a
// __shared__ array is named by check() at the access itself, with the variable and the element).
namespace {
void access(uintptr_t addr, std::size_t size, bool write, const void* pc) {
    BlockState* const b = B;  // once: each thread-local read is a call in a library
    const UbsanOutOfBounds* past = b != nullptr ? b->past : nullptr;
    if (past == nullptr) return check(b, addr, size, write, pc);
    b->past = nullptr;  // a report's own accesses (its strings) come through here too
    check(b, addr, size, write, pc);
    if (b->running && b->past_thread == b->thread && addr >= b->stack_lo && addr < b->stack_hi) {
        index_out_of_bounds(past, b->past_index, b->past_pc);
    }
    b->past = past;
}
}  // namespace

#define BRRR_ACCESS(size)                                                                                     \
    extern "C" void __asan_load##size##_noabort(uintptr_t addr) { access(addr, size, false, __builtin_return_address(0)); } \
    extern "C" void __asan_store##size##_noabort(uintptr_t addr) { access(addr, size, true, __builtin_return_address(0)); }
BRRR_ACCESS(1)
BRRR_ACCESS(2)
BRRR_ACCESS(4)
BRRR_ACCESS(8)
BRRR_ACCESS(16)
#undef BRRR_ACCESS

extern "C" void __asan_loadN_noabort(uintptr_t addr, std::size_t size) { access(addr, size, false, __builtin_return_address(0)); }
extern "C" void __asan_storeN_noabort(uintptr_t addr, std::size_t size) { access(addr, size, true, __builtin_return_address(0)); }
extern "C" void __asan_handle_no_return() {}

// The atomics of brrr_cpu.h, which the instrumentation leaves out, report here.
extern "C" void brrr_cpu_atomic_checked(const void* address, std::size_t size, const void* pc) {
    check(B, reinterpret_cast<uintptr_t>(address), size, true, pc, true);
}

// Bounds only, no access recorded (as for an atomic): the destination of a bulk or tensor copy when it
// is issued, whose write the landing records.
extern "C" void brrr_cpu_bounds_checked(const void* address, std::size_t size, int write, const void* pc) {
    check(B, reinterpret_cast<uintptr_t>(address), size, write != 0, pc, true);
}

// Accesses brrr's headers make for the kernel, outside the instrumentation (wmma loads and stores,
// ldmatrix rows, an asynchronous copy's source and destination): checked as the kernel's, at pc.
extern "C" void brrr_cpu_access_checked(const void* address, std::size_t size, int write, const void* pc) {
    check(B, reinterpret_cast<uintptr_t>(address), size, write != 0, pc);
}

// An asynchronous copy into shared memory issued (its bytes in flight) and landed: `record` makes
// the landing a write by the running thread at pc (a thread's own wait), so another thread that
// reads it without a barrier races; a barrier's phase lands its copies for every participant.
extern "C" void brrr_cpu_async_issued(const void* dst, std::size_t size, const void* pc) {
    if (B == nullptr || !B->running) return;
    const auto addr = reinterpret_cast<uintptr_t>(dst);
    for (Shared& s : B->shared) {
        if (addr < s.lo || addr + size > s.hi) continue;
        if (s.flights.empty()) s.flights.resize(s.cells.size());
        for (std::size_t i = cell_of(s, addr), last = cell_of(s, addr + size - 1); i <= last; ++i) {
            if (s.flights[i].thread < 0) ++s.in_flight;
            s.flights[i] = Access{B->thread, 0, pc};
        }
    }
}

extern "C" void brrr_cpu_async_landed(const void* dst, std::size_t size, const void* pc, int record) {
    if (B == nullptr || !B->running) return;
    const auto addr = reinterpret_cast<uintptr_t>(dst);
    for (Shared& s : B->shared) {
        if (addr < s.lo || addr + size > s.hi || s.flights.empty()) continue;
        for (std::size_t i = cell_of(s, addr), last = cell_of(s, addr + size - 1); i <= last; ++i) {
            if (s.flights[i].thread >= 0) --s.in_flight;
            s.flights[i] = Access{};
            // The new bytes are not an earlier copy's: a copy onto a barrier tags them again after this.
            if (s.landed && s.landings[i].barrier != Landed::kNone) {
                s.landings[i] = Landed{};
                --s.landed;
            }
        }
        if (record) shared_access(*B, s, addr, size, true, pc);
    }
}

// The copy just landed was onto a barrier (after brrr_cpu_async_landed): its elements are readable
// by the threads that see the landing phase.
extern "C" void brrr_cpu_async_landed_on(const brrr_cpu::async::Landing* l) {
    if (B == nullptr || !B->running) return;
    const auto addr = reinterpret_cast<uintptr_t>(l->dst);
    for (Shared& s : B->shared) {
        if (addr < s.lo || addr + l->size > s.hi) continue;
        if (s.landings.empty()) s.landings.resize(s.cells.size());
        for (std::size_t i = cell_of(s, addr), last = cell_of(s, addr + l->size - 1); i <= last; ++i) {
            if (s.landings[i].barrier == Landed::kNone) ++s.landed;
            s.landings[i] = Landed{l->barrier, l->thread, l->phase, l->offset, l->mbarrier, l->pc};
        }
    }
}

// --- for brrr's Python side ----------------------------------------------------------------------------

extern "C" __attribute__((visibility("default"))) int brrr_debug_armed = 0;

extern "C" __attribute__((visibility("default"))) void brrr_memcheck_record_writes(int on) {
    std::lock_guard<std::mutex> lock(writers_mutex);
    if (on) writers.clear();  // a new recording; stopping keeps what was recorded for the lookups
    recording = on != 0;
}

extern "C" __attribute__((visibility("default"))) int brrr_memcheck_writer(const void* address, char* kernel, std::size_t kernel_size, unsigned* block,
                                    unsigned* thread) {
    std::lock_guard<std::mutex> lock(writers_mutex);
    const auto it = writers.find(reinterpret_cast<uintptr_t>(address));
    if (it == writers.end()) return 0;
    const Writer& w = it->second;
    snprintf(kernel, kernel_size, "%s", kernel_names[w.kernel].c_str());
    block[0] = w.block.x, block[1] = w.block.y, block[2] = w.block.z;
    thread[0] = w.thread.x, thread[1] = w.thread.y, thread[2] = w.thread.z;
    return 1;
}
