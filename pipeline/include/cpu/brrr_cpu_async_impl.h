// The runtime's side of asynchronous copies (brrr_cpu_async.h). Included once, at the end of
// brrr_cpu_runtime.cpp: it reads the scheduler's blocks and fibers, and it must not be instrumented
// by the memory checks (it keeps copies on the heap and reads other threads' state).
//
// Each thread of the running block has its copies not yet committed and its committed groups, oldest
// first; a cuda::barrier has the copies of its current phase. A copy's source is read when it is
// issued; its destination is written when a wait completes it (see brrr_cpu_async.h for why).
#include <deque>
#include <unordered_map>

#include "brrr_cpu_async.h"
#include "brrr_cpu_tma.h"
#include "brrr_cpu_wgmma.h"

// Defined by brrr_cpu_memcheck.cpp where a checked build links it in: an access at the kernel's
// line (bounds and races), and the destination bytes of a copy in flight and landed.
extern "C" void brrr_cpu_access_checked(const void* address, size_t size, int write, const void* pc) __attribute__((weak));
extern "C" void brrr_cpu_bounds_checked(const void* address, size_t size, int write, const void* pc) __attribute__((weak));
extern "C" void brrr_cpu_async_issued(const void* dst, size_t size, const void* pc) __attribute__((weak));
extern "C" void brrr_cpu_async_landed(const void* dst, size_t size, const void* pc, int record) __attribute__((weak));
extern "C" void brrr_cpu_async_landed_on(const brrr_cpu::async::Landing* landing) __attribute__((weak));

namespace brrr_cpu::async {

namespace {

struct Copy {
    char* dst;
    std::vector<unsigned char> data;
    const void* pc;
    int thread = -1;  // the issuing thread
};

// A wgmma.mma_async waiting for its group's wait: the op, and the shared-memory elements it reads for
// this thread (offsets, 2 bytes each) with their values at the issue.
struct Product {
    wgmma::Op op;
    std::vector<uint32_t> reads;
    std::vector<uint16_t> seen;
};

struct ThreadCopies {
    std::vector<Copy> open;                 // issued since the last commit
    std::deque<std::vector<Copy>> groups;   // committed, oldest first
    const BarrierState* waiting = nullptr;  // the cuda::barrier this thread waits on, and for which phase
    unsigned waiting_phase = 0;
    int64_t waiting_mbarrier = -1;  // the mbarrier (shared offset) this thread waits on, and for which phase
    uint64_t waiting_mbarrier_phase = 0;
    std::vector<Product> products;                // wgmma.mma_async issued since the last commit_group
    std::deque<std::vector<Product>> product_groups;  // committed, oldest first
};


// Per OS thread (a block's fibers never leave theirs): the running block's copies. A new block (its
// serial) starts empty: what an earlier block left in flight never lands in this one.
struct BlockCopies {
    uint64_t serial = 0;
    std::vector<ThreadCopies> threads;
    std::unordered_map<const BarrierState*, std::vector<Copy>> barriers;
    // For each byte of shared memory, how many issued and not yet completed wgmma's read it, and the
    // line of the last that did: a copy into such a byte races with the tensor cores.
    std::vector<uint16_t> product_reads;
    std::vector<int> product_line;
    // mbarrier objects by shared offset: a GPU's 8 bytes there are opaque, their state is kept here.
    struct Mbarrier {
        int expected, pending;
        int64_t tx;  // transaction bytes still expected this phase (negative: delivered before expected)
        uint64_t phase;
        std::vector<Copy> copies;  // tensor copies that land when the phase completes
        uint32_t id;
        uint64_t offset;  // where it is in shared memory
    };
    std::unordered_map<uint64_t, Mbarrier> mbarriers;
    // seen[id][thread]: how many phases of the block's barrier `id` (each mbarrier.init or
    // cuda::barrier init is a new one) the thread has seen complete: by its own wait or test, or
    // from a thread that had, through a __syncthreads or a warp sync they both took part in.
    std::vector<std::vector<uint64_t>> seen;
};
thread_local BlockCopies state;

Fiber& current(const char* what, const char* file, int line) {
    Fiber& f = here(what, file, line);
    Block& b = *f.block;
    if (state.serial != b.serial) {
        state.serial = b.serial;
        state.threads.assign(static_cast<size_t>(b.threads), ThreadCopies{});
        state.barriers.clear();
        state.product_reads.assign(b.arena.size(), 0);
        state.product_line.assign(b.arena.size(), 0);
        state.mbarriers.clear();
        state.seen.clear();
    }
    return f;
}

// A new barrier of the running block: its id, no phase seen by any thread yet. Past kTracked barriers
// in one block (a kernel that initialises one a loop iteration) the rest go untracked (kUntracked):
// their copies land unchecked, rather than the block's memory growing with every init.
constexpr size_t kTracked = 1024;
constexpr uint32_t kUntracked = ~0u;
uint32_t new_barrier() {
    if (state.seen.size() >= kTracked) return kUntracked;
    state.seen.emplace_back(static_cast<size_t>(running_block->threads), 0);
    return static_cast<uint32_t>(state.seen.size() - 1);
}

// Thread `thread` saw `phases` phases of barrier `id` complete.
void saw(uint32_t id, int thread, uint64_t phases) {
    if (id >= state.seen.size()) return;
    uint64_t& s = state.seen[id][static_cast<size_t>(thread)];
    if (phases > s) s = phases;
}

char* arena(const Block& b) { return const_cast<char*>(b.arena.data()); }

void land(Copy& c, bool record) {
    std::memcpy(c.dst, c.data.data(), c.data.size());
    if (brrr_cpu_async_landed) brrr_cpu_async_landed(c.dst, c.data.size(), c.pc, record ? 1 : 0);
}

// The phase a copy onto a barrier lands with: barrier `id` (at shared `offset`) has completed `phases`.
struct Phase {
    uint32_t id;
    uint64_t phases;
    uint64_t offset;
    bool mbarrier;
};

// The checked build then holds a read of the copy's bytes by a thread that has not seen that phase.
void land_on_phase(Copy& c, bool record, const Phase& p) {
    land(c, record);
    if (!brrr_cpu_async_landed_on || p.id >= state.seen.size()) return;
    const Landing l{c.dst, c.data.size(), c.pc, c.thread, p.id, p.phases, p.offset, p.mbarrier};
    brrr_cpu_async_landed_on(&l);
}

std::string pointer_text(const void* p) {
    std::ostringstream s;
    s << p;
    return s.str();
}

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::CpAsync: return "cp.async";
        case Kind::Pipeline: return "__pipeline_memcpy_async";
        case Kind::Memcpy: return "cuda::memcpy_async";
    }
    return "an asynchronous copy";
}

// An asynchronous copy into [at, at + size) of shared memory, issued while a wgmma.mma_async that reads
// some of it has not completed: the copy may land while the tensor cores read.
void not_read_by_products(const char* what, size_t at, size_t size, const Where& where) {
    for (size_t i = at; i < at + size && i < state.product_reads.size(); ++i) {
        if (!state.product_reads[i]) continue;
        fault("race on shared memory", std::string(what) + " into shared memory at offset " + std::to_string(i) +
                  ", which a wgmma.mma_async issued at line " + std::to_string(state.product_line[i]) +
                  " reads and no wgmma.wait_group has completed yet: the copy may land while the tensor cores read it",
              where.file, where.line);
    }
}

}  // namespace

size_t shared_offset(const void* p, const char* file, int line) {
    Fiber& f = here("__cvta_generic_to_shared", file, line);
    const char* lo = arena(*f.block);
    const char* at = static_cast<const char*>(p);
    if (at < lo || at >= lo + f.block->arena.size()) {
        fault("shared memory", "__cvta_generic_to_shared(" + pointer_text(p) + "): not an address of the block's shared memory",
              file, line);
    }
    return static_cast<size_t>(at - lo);
}

void* shared_pointer(uint64_t address, const char* file, int line) {
    Fiber& f = here("a .shared address", file, line);
    char* lo = arena(*f.block);
    const uint64_t size = f.block->arena.size();
    if (address < size) return lo + address;  // an offset of the shared window (__cvta_generic_to_shared)
    const uintptr_t base = reinterpret_cast<uintptr_t>(lo);
    if (address >= base && address < base + size) return reinterpret_cast<void*>(address);  // a generic pointer into it
    std::ostringstream m;
    m << "the .shared address 0x" << std::hex << address << " is neither an offset of the block's shared memory "
      << "(__cvta_generic_to_shared) nor a pointer into it";
    fault("shared memory", m.str(), file, line);
}

uint64_t seen_phases(uint32_t id, int thread) {
    if (!running_block || state.serial != running_block->serial || id >= state.seen.size()) return 0;
    return state.seen[id][static_cast<size_t>(thread)];
}

// A __syncthreads (warp -1) or a warp's sync over `mask` completed: each thread that took part has now
// seen every phase any of them had seen.
void share_seen(int warp, unsigned mask) {
    if (!running_block || state.serial != running_block->serial) return;
    for (std::vector<uint64_t>& threads : state.seen) {
        const size_t lo = warp < 0 ? 0 : static_cast<size_t>(warp) * 32;
        const size_t hi = warp < 0 ? threads.size() : std::min(threads.size(), lo + 32);
        const auto takes_part = [&](size_t t) { return warp < 0 || (mask >> (t - lo)) & 1u; };
        uint64_t most = 0;
        for (size_t t = lo; t < hi; ++t) {
            if (takes_part(t) && threads[t] > most) most = threads[t];
        }
        for (size_t t = lo; t < hi; ++t) {
            if (takes_part(t)) threads[t] = most;
        }
    }
}

bool is_shared(const void* p) {
    if (!running_block) return false;
    const char* lo = arena(*running_block);
    const char* at = static_cast<const char*>(p);
    return at >= lo && at < lo + running_block->arena.size();
}

void copy(Kind kind, void* dst, const void* src, size_t size, size_t src_size, size_t align, const void* barrier,
          const Where& where) {
    Fiber& f = current(kind_name(kind), where.file, where.line);
    std::ostringstream m;
    if (kind != Kind::Memcpy && size != 4 && size != 8 && size != 16) {
        m << kind_name(kind) << " copies 4, 8 or 16 bytes, not " << size;
    } else if (src_size > size) {
        m << kind_name(kind) << " reads " << src_size << " source bytes into a " << size << "-byte copy";
    } else if (reinterpret_cast<uintptr_t>(dst) % align || reinterpret_cast<uintptr_t>(src) % align) {
        m << "misaligned address: " << kind_name(kind) << " of " << size << " bytes from " << src << " to " << dst
          << " needs both aligned to " << align << " bytes";
    } else if (kind != Kind::Memcpy && !is_shared(dst)) {
        m << kind_name(kind) << "'s destination " << dst << " is not in the block's shared memory";
    }
    if (!m.str().empty()) fault("asynchronous copy", m.str(), where.file, where.line);
    if (brrr_cpu_access_checked) {
        if (src_size) brrr_cpu_access_checked(src, src_size, 0, where.pc);
        brrr_cpu_access_checked(dst, size, 1, where.pc);
    }
    if (is_shared(dst)) not_read_by_products(kind_name(kind), static_cast<const char*>(dst) - arena(*f.block), size, where);
    Copy c{static_cast<char*>(dst), std::vector<unsigned char>(size, 0), where.pc, f.linear};
    if (src_size) std::memcpy(c.data.data(), src, src_size);
    if (kind == Kind::Memcpy && !is_shared(dst)) {  // CUDA copies synchronously where it cannot copy asynchronously
        land(c, false);
        return;
    }
    if (brrr_cpu_async_issued) brrr_cpu_async_issued(dst, size, where.pc);
    if (barrier) state.barriers[static_cast<const BarrierState*>(barrier)].push_back(std::move(c));
    else state.threads[f.linear].open.push_back(std::move(c));
}

void commit(const char* file, int line) {
    Fiber& f = current("cp.async.commit_group", file, line);
    ThreadCopies& t = state.threads[f.linear];
    t.groups.push_back(std::move(t.open));  // an empty group too, as PTX says
    t.open.clear();
}

void wait_prior(int n, const char* file, int line) {
    Fiber& f = current("cp.async.wait_group", file, line);
    if (n < 0) fault("asynchronous copy", "wait for all but the newest " + std::to_string(n) + " groups", file, line);
    ThreadCopies& t = state.threads[f.linear];
    while (t.groups.size() > static_cast<size_t>(n)) {
        for (Copy& c : t.groups.front()) land(c, true);
        t.groups.pop_front();
    }
}

void wait_oldest(const char* file, int line) {
    Fiber& f = current("consumer_wait", file, line);
    ThreadCopies& t = state.threads[f.linear];
    if (t.groups.empty()) return;
    for (Copy& c : t.groups.front()) land(c, true);
    t.groups.pop_front();
}

// ---- cuda::barrier --------------------------------------------------------------------------------

constexpr int kInitialised = 0x62727272;

static void check_barrier(const BarrierState* b, const char* what, const char* file, int line) {
    if (!is_shared(b)) fault("cuda::barrier", std::string(what) + " on a cuda::barrier that is not in shared memory", file, line);
    if (b->initialised != kInitialised) {
        fault("cuda::barrier", std::string(what) + " on a cuda::barrier before init() (or the __syncthreads after it)", file, line);
    }
}

void barrier_init(BarrierState* b, int expected, const char* file, int line) {
    current("init(cuda::barrier)", file, line);
    if (expected < 1 || expected > running_block->threads) {
        fault("cuda::barrier", "init with an expected count of " + std::to_string(expected) + ": a block of " +
                                   std::to_string(running_block->threads) + " threads can arrive 1 to " +
                                   std::to_string(running_block->threads) + " times a phase",
              file, line);
    }
    *b = BarrierState{expected, expected, 0, kInitialised, 0, new_barrier()};
    state.barriers.erase(b);
}

// The phase completes when its arrivals are made and its expected bytes delivered.
static void complete_if_done(BarrierState* b) {
    if (b->pending == 0 && b->tx == 0) {  // the phase completes: its copies land, visible to every participant
        auto it = state.barriers.find(b);
        if (it != state.barriers.end()) {
            const uint64_t offset = static_cast<uint64_t>(reinterpret_cast<const char*>(b) - arena(*running_block));
            for (Copy& c : it->second) land_on_phase(c, false, {b->id, b->phase + 1ull, offset, false});
            state.barriers.erase(it);
        }
        b->pending = b->expected;
        ++b->phase;
        // The phase orders shared-memory accesses as __syncthreads does, for the race checks: for every
        // thread of the block, also one that does not take part (a race between those is not seen;
        // ordering only the participants would report races the barrier rules out).
        if (hooks().barrier_done) hooks().barrier_done(++running_block->epoch);
    }
}

unsigned barrier_arrive(BarrierState* b, int count, bool drop, const char* file, int line) {
    current("cuda::barrier::arrive", file, line);
    check_barrier(b, "arrive", file, line);
    if (count < 1 || count > b->pending) {
        fault("cuda::barrier", "arrive(" + std::to_string(count) + ") with " + std::to_string(b->pending) +
                                   " arrivals left in this phase", file, line);
    }
    const unsigned phase = b->phase;
    b->pending -= count;
    if (drop) b->expected -= count;
    complete_if_done(b);
    return phase;
}

void barrier_expect_tx(BarrierState* b, int64_t bytes, const char* file, int line) {
    current("cuda::device::barrier_expect_tx", file, line);
    check_barrier(b, "expect_tx", file, line);
    b->tx += bytes;
}


void barrier_wait(BarrierState* b, unsigned phase, const char* file, int line) {
    Fiber& f = current("cuda::barrier::wait", file, line);
    check_barrier(b, "wait", file, line);
    ThreadCopies& me = state.threads[f.linear];
    while (b->phase == phase) {
        // Stuck when no other thread can arrive: each has returned, waits at __syncthreads or a warp
        // intrinsic, or waits on a barrier phase that has not completed either.
        bool stuck = true;
        for (const Fiber& g : running_block->fibers) {
            if (&g == &f || g.state == State::Exited || g.state == State::Barrier || g.state == State::Warp) continue;
            const ThreadCopies& t = state.threads[g.linear];
            if (!(t.waiting && t.waiting->phase == t.waiting_phase)) stuck = false;
        }
        if (stuck) {
            fault("deadlock", "this thread waits on a cuda::barrier whose phase still needs " + std::to_string(b->pending) +
                                  " of its " + std::to_string(b->expected) + " arrivals, and no other thread of the "
                                  "block can arrive (each has returned or waits)",
                  file, line);
        }
        me.waiting = b;
        me.waiting_phase = phase;
        yield(file, line);
        me.waiting = nullptr;
    }
    saw(b->id, f.linear, b->phase);
}

}  // namespace brrr_cpu::async

// ---- wgmma.mma_async ------------------------------------------------------------------------------
namespace brrr_cpu::wgmma {

namespace {

using brrr_cpu::async::Product;

// Where the op reads, for the calling thread: its two rows of A and its columns of B, 16 k each.
std::vector<uint32_t> operand_reads(const Op& op, int linear) {
    const int warp = linear / 32 % 4, lane = linear % 32;
    const Descriptor a = decode(op.desc_a), b = decode(op.desc_b);
    if (a.base_offset || b.base_offset) {
        fault("wgmma", "a matrix descriptor with a base offset (bits 49-51): brrr emulates base offset 0, a "
                       "swizzle pattern that starts at a multiple of its repeat", op.file, op.line);
    }
    std::vector<uint32_t> at;
    at.reserve(32 + 4 * op.n);
    for (int h = 0; h < 2; ++h) {
        for (int k = 0; k < 16; ++k) at.push_back(element_address(a, op.trans_a, 16 * warp + lane / 4 + 8 * h, k));
    }
    for (int i = 0; i < op.n / 2; i += 4) {  // each n8 tile's registers 4j, 4j + 1 hold its two columns
        for (int q = 0; q < 2; ++q) {
            const int col = accumulator_at(warp, lane, i + q).col;
            for (int k = 0; k < 16; ++k) at.push_back(element_address(b, op.trans_b, col, k));
        }
    }
    return at;
}

uint16_t value_at(uint32_t offset, const Op& op) {
    return *static_cast<const uint16_t*>(brrr_cpu::async::shared_pointer(offset, op.file, op.line));
}

// The product, for the calling thread (its element order is operand_reads'), into its registers.
void run(const Product& p, const char* file, int line) {
    const Op& op = p.op;
    auto& counts = brrr_cpu::async::state.product_reads;
    std::vector<float> v(p.reads.size());
    for (size_t i = 0; i < p.reads.size(); ++i) {
        const uint16_t now = value_at(p.reads[i], op);
        if (now != p.seen[i]) {
            fault("race on shared memory", "the wgmma.mma_async issued at line " + std::to_string(op.line) +
                                                " reads shared memory at offset " + std::to_string(p.reads[i]) +
                                                ", which changed before this wgmma.wait_group completed it: the "
                                                "tensor cores may read an operand at any time until then",
                  file, line);
        }
        v[i] = brrr_cpu::mma::widen(op.ab, now);
        for (uint32_t b = p.reads[i]; b < p.reads[i] + 2 && b < counts.size(); ++b) counts[b] -= counts[b] > 0;
    }
    for (int i = 0; i < op.n / 2; ++i) {
        const float* row = &v[16 * ((i >> 1) & 1)];
        const float* col = &v[32 + 16 * ((i >> 2) * 2 + (i & 1))];
        float sum = op.accumulate ? *op.d[i] : 0.0f;
        for (int k = 0; k < 16; ++k) sum = sum + (op.scale_a * row[k]) * (op.scale_b * col[k]);
        *op.d[i] = sum;
    }
}

}  // namespace

void issue(const Op& op) {
    Fiber& f = brrr_cpu::async::current("wgmma.mma_async", op.file, op.line);
    if (f.linear / 128 * 128 + 128 > f.block->threads) {
        fault("wgmma", "wgmma.mma_async in thread " + std::to_string(f.linear) + " of a block of " +
                           std::to_string(f.block->threads) + " threads: its warpgroup (4 whole warps, the first a "
                           "multiple of 4) is not complete", op.file, op.line);
    }
    Product p{op, operand_reads(op, f.linear), {}};
    auto& st = brrr_cpu::async::state;
    p.seen.reserve(p.reads.size());
    for (uint32_t at : p.reads) {
        // The checked build sees the tensor cores' reads as the issuing thread's: a tile a copy has not
        // landed in, or that another thread wrote with no barrier between, is named there.
        if (brrr_cpu_access_checked) brrr_cpu_access_checked(brrr_cpu::async::shared_pointer(at, op.file, op.line), 2, 0, op.pc);
        p.seen.push_back(value_at(at, op));
        for (uint32_t b = at; b < at + 2 && b < st.product_reads.size(); ++b) {
            ++st.product_reads[b];
            st.product_line[b] = op.line;
        }
    }
    st.threads[f.linear].products.push_back(std::move(p));
}

void commit(const char* file, int line) {
    Fiber& f = brrr_cpu::async::current("wgmma.commit_group", file, line);
    auto& t = brrr_cpu::async::state.threads[f.linear];
    t.product_groups.push_back(std::move(t.products));
    t.products.clear();
}

void wait(int newest, const char* file, int line) {
    Fiber& f = brrr_cpu::async::current("wgmma.wait_group", file, line);
    if (newest < 0) fault("wgmma", "wait for all but the newest " + std::to_string(newest) + " groups", file, line);
    auto& t = brrr_cpu::async::state.threads[f.linear];
    while (t.product_groups.size() > static_cast<size_t>(newest)) {
        for (const Product& p : t.product_groups.front()) run(p, file, line);
        t.product_groups.pop_front();
    }
}

}  // namespace brrr_cpu::wgmma

// ---- mbarrier and tensor copies ---------------------------------------------------------------------
namespace brrr_cpu::mbarrier {

namespace {

using brrr_cpu::async::state;
using Mbarrier = brrr_cpu::async::BlockCopies::Mbarrier;

// The barrier at a .shared address: its offset, checked 8-byte aligned and inside the window.
uint64_t offset_of(uint64_t address, const char* file, int line) {
    char* p = static_cast<char*>(brrr_cpu::async::shared_pointer(address, file, line));
    const uint64_t at = static_cast<uint64_t>(p - const_cast<char*>(running_block->arena.data()));
    if (at % 8) fault("mbarrier", "an mbarrier at shared offset " + std::to_string(at) + ", not 8-byte aligned", file, line);
    return at;
}

Mbarrier& find(uint64_t address, const char* what, const char* file, int line) {
    brrr_cpu::async::current(what, file, line);
    const uint64_t at = offset_of(address, file, line);
    auto it = state.mbarriers.find(at);
    if (it == state.mbarriers.end()) {
        fault("mbarrier", std::string(what) + " on shared offset " + std::to_string(at) +
                              ", where no mbarrier.init ran in this block (or no barrier between it and this thread)",
              file, line);
    }
    return it->second;
}

// The phase completes when every arrival is made and every expected byte delivered: its copies land,
// visible to every thread that then sees the phase change (as __syncthreads orders, for the race checks).
void complete_if_done(Mbarrier& b) {
    if (b.pending > 0 || b.tx != 0) return;
    for (auto& c : b.copies) brrr_cpu::async::land_on_phase(c, true, {b.id, b.phase + 1, b.offset, true});
    b.copies.clear();
    b.pending = b.expected;
    ++b.phase;
    if (hooks().barrier_done) hooks().barrier_done(++running_block->epoch);
}

}  // namespace

void init(uint64_t address, int count, const char* file, int line) {
    brrr_cpu::async::current("mbarrier.init", file, line);
    if (count < 1 || count > (1 << 20) - 1) {
        fault("mbarrier", "mbarrier.init with an expected arrival count of " + std::to_string(count) + " (1 to 2^20 - 1)",
              file, line);
    }
    const uint64_t at = offset_of(address, file, line);
    state.mbarriers[at] = Mbarrier{count, count, 0, 0, {}, brrr_cpu::async::new_barrier(), at};
}

uint64_t arrive(uint64_t address, int count, int64_t expect, const char* file, int line) {
    Mbarrier& b = find(address, "mbarrier.arrive", file, line);
    if (count < 1 || count > b.pending) {
        fault("mbarrier", "mbarrier.arrive with a count of " + std::to_string(count) + " when " + std::to_string(b.pending) +
                              " arrivals are left in this phase (more arrivals than mbarrier.init's count)",
              file, line);
    }
    const uint64_t token = b.phase;
    b.tx += expect;
    b.pending -= count;
    complete_if_done(b);
    return token;
}

void expect_tx(uint64_t address, int64_t bytes, const char* file, int line) {
    Mbarrier& b = find(address, "mbarrier.expect_tx", file, line);
    b.tx += bytes;
}

namespace {

// A wait or test that found its phase complete: the running thread has seen every phase so far, so
// it may read what their copies landed (the checked build's landed_check).
bool seen_if(const Mbarrier& b, bool complete) {
    if (complete) brrr_cpu::async::saw(b.id, running_fiber->linear, b.phase);
    return complete;
}

}  // namespace

bool test_parity(uint64_t address, uint32_t parity, bool yield_if_not, const char* file, int line) {
    Mbarrier* b = &find(address, "mbarrier.try_wait.parity", file, line);
    if (b->phase % 2 != (parity & 1u)) return seen_if(*b, true);
    if (!yield_if_not) return false;
    yield(file, line);
    b = &find(address, "mbarrier.try_wait.parity", file, line);
    return seen_if(*b, b->phase % 2 != (parity & 1u));
}

bool test_token(uint64_t address, uint64_t token, bool yield_if_not, const char* file, int line) {
    Mbarrier* b = &find(address, "mbarrier.try_wait", file, line);
    if (b->phase != token) return seen_if(*b, true);
    if (!yield_if_not) return false;
    yield(file, line);
    b = &find(address, "mbarrier.try_wait", file, line);
    return seen_if(*b, b->phase != token);
}

void wait_parity(uint64_t address, uint32_t parity, const char* file, int line) {
    Fiber& f = brrr_cpu::async::current("mbarrier.try_wait.parity", file, line);
    const uint64_t at = offset_of(address, file, line);
    auto& me = state.threads[f.linear];
    while (true) {
        Mbarrier& b = find(address, "mbarrier.try_wait.parity", file, line);
        if (b.phase % 2 != (parity & 1u)) {
            seen_if(b, true);
            return;
        }
        // Stuck when no other thread can arrive or deliver: each has returned, waits at __syncthreads
        // or a warp intrinsic, or waits on an mbarrier phase that has not completed either.
        bool stuck = true;
        for (const Fiber& g : running_block->fibers) {
            if (&g == &f || g.state == State::Exited || g.state == State::Barrier || g.state == State::Warp) continue;
            const auto& t = state.threads[g.linear];
            const auto other = t.waiting_mbarrier >= 0 ? state.mbarriers.find(static_cast<uint64_t>(t.waiting_mbarrier))
                                                       : state.mbarriers.end();
            if (!(other != state.mbarriers.end() && other->second.phase % 2 == t.waiting_mbarrier_phase)) stuck = false;
        }
        if (stuck) {
            fault("deadlock", "this thread waits on the mbarrier at shared offset " + std::to_string(at) + " (phase parity " +
                                  std::to_string(parity & 1u) + "), which still needs " + std::to_string(b.pending) +
                                  " arrivals and " + std::to_string(b.tx) + " transaction bytes, and no other thread of "
                                  "the block can deliver them (each has returned or waits)",
                  file, line);
        }
        me.waiting_mbarrier = static_cast<int64_t>(at);
        me.waiting_mbarrier_phase = parity & 1u;
        yield(file, line);
        me.waiting_mbarrier = -1;
    }
}

namespace {

// A copy of `bytes` onto shared offset `at` (a tensor copy's box or a bulk copy's bytes): inside the
// block's shared memory and not under a wgmma that has yet to complete, else a fault of `kind` naming
// the copy (`what`) and its line; in the checked build also inside one __shared__ variable (an
// out-of-bounds write naming it, where a copy runs on into the next).
void check_destination(const char* kind, const std::string& what, uint64_t at, uint64_t bytes,
                       const brrr_cpu::async::Where& where) {
    if (at + bytes > running_block->arena.size()) {
        fault(kind, what + " of " + std::to_string(bytes) + " bytes at shared offset " + std::to_string(at) +
                        " runs past the block's " + std::to_string(running_block->arena.size()) + " bytes of shared memory",
              where.file, where.line);
    }
    if (brrr_cpu_bounds_checked) brrr_cpu_bounds_checked(brrr_cpu::async::arena(*running_block) + at, bytes, 1, where.pc);
    brrr_cpu::async::not_read_by_products(what.c_str(), at, bytes, where);
}

// A tensor map as cuTensorMapEncodeTiled wrote it, for a copy of `rank` dimensions (`what` names it).
brrr_cpu::tma::Map checked_map(const CUtensorMap* map, int rank, const char* what, const char* file, int line) {
    brrr_cpu::tma::Map m;
    std::memcpy(&m, map, sizeof(m));
    if (m.magic != brrr_cpu::tma::kMagic) {
        fault("tensor copy", std::string(what) + " with a tensor map cuTensorMapEncodeTiled did not write (or that "
                             "did not reach the kernel as a __grid_constant__ parameter or in global memory)", file, line);
    }
    if (rank != m.rank) {
        fault("tensor copy", std::string(what) + " of " + std::to_string(rank) + " dimensions with a tensor map of rank " +
                                 std::to_string(m.rank), file, line);
    }
    return m;
}

// The box's shared offset for `address`, aligned as the map's swizzle needs.
uint64_t box_offset(const brrr_cpu::tma::Map& m, uint64_t address, const char* what, const char* file, int line) {
    char* p = static_cast<char*>(brrr_cpu::async::shared_pointer(address, file, line));
    const uint64_t at = static_cast<uint64_t>(p - const_cast<char*>(running_block->arena.data()));
    const uint64_t repeat = m.swizzle_bits ? 128u << m.swizzle_bits : 128u;
    if (at % repeat) {
        fault("tensor copy", std::string(what) + " at shared offset " + std::to_string(at) + ": the box must be " +
                                 std::to_string(repeat) + "-byte aligned" +
                                 (m.swizzle_bits ? " (the repeat of the map's swizzle)" : ""), file, line);
    }
    return at;
}

uint64_t box_bytes(const brrr_cpu::tma::Map& m) {
    uint64_t count = 1;
    for (int d = 0; d < m.rank; ++d) count *= m.box[d];
    return count * m.elem_bytes;
}

// Each element of the box at `coords`, in row-major order (dimension 0 fastest): its place in the
// box's shared bytes (16-byte units swizzled as the map says) and, inside the tensor, its address there
// (nullptr outside: a load fills zero or NaN, a store skips it).
template <typename Each>
void walk_box(const brrr_cpu::tma::Map& m, const int32_t* coords, uint64_t at, Each&& each) {
    const uint64_t count = box_bytes(m) / m.elem_bytes;
    for (uint64_t e = 0; e < count; ++e) {
        uint64_t rest = e, offset = 0;
        bool inside = true;
        for (int d = 0; d < m.rank; ++d) {
            const int64_t c = static_cast<int64_t>(coords[d]) + static_cast<int64_t>(rest % m.box[d]);
            rest /= m.box[d];
            if (c < 0 || static_cast<uint64_t>(c) >= m.dim[d]) inside = false;
            else offset += static_cast<uint64_t>(c) * m.stride[d];
        }
        uint64_t place = at + e * m.elem_bytes;
        if (m.swizzle_bits) place ^= ((place >> 7) & ((1u << m.swizzle_bits) - 1)) << 4;
        each(place - at, inside ? m.base + offset : nullptr);
    }
}

// A tensor copy's box, read now: checked against the map and shared memory.
brrr_cpu::async::Copy read_box(uint64_t dst, const CUtensorMap* map, const int32_t* coords, int rank, const void* pc,
                               const char* file, int line) {
    const brrr_cpu::tma::Map m = checked_map(map, rank, "cp.async.bulk.tensor", file, line);
    const uint64_t at = box_offset(m, dst, "cp.async.bulk.tensor", file, line);
    const uint64_t bytes = box_bytes(m);
    check_destination("tensor copy", "cp.async.bulk.tensor", at, bytes, {pc, file, line});
    std::vector<unsigned char> box(bytes, 0);
    const unsigned char nan_bits[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    walk_box(m, coords, at, [&](uint64_t place, const char* from) {
        if (from) {
            if (brrr_cpu_access_checked) brrr_cpu_access_checked(from, m.elem_bytes, 0, pc);
            std::memcpy(box.data() + place, from, m.elem_bytes);
        } else if (m.nan_fill) {
            std::memcpy(box.data() + place, nan_bits, m.elem_bytes);
        }
    });
    char* to = brrr_cpu::async::arena(*running_block) + at;
    if (brrr_cpu_async_issued) brrr_cpu_async_issued(to, bytes, pc);
    return brrr_cpu::async::Copy{to, std::move(box), pc};
}

// The shared bytes a store (cp.async.bulk{.tensor} to global) reads: inside the block's shared memory,
// and in the checked build inside one __shared__ variable.
const char* store_source(uint64_t at, uint64_t bytes, const std::string& what, const brrr_cpu::async::Where& where) {
    if (at + bytes > running_block->arena.size()) {
        fault("bulk copy", what + " reads " + std::to_string(bytes) + " bytes at shared offset " + std::to_string(at) +
                               ", past the block's " + std::to_string(running_block->arena.size()) + " bytes of shared memory",
              where.file, where.line);
    }
    const char* from = brrr_cpu::async::arena(*running_block) + at;
    if (brrr_cpu_bounds_checked) brrr_cpu_bounds_checked(from, bytes, 0, where.pc);
    return from;
}

}  // namespace

void tensor_load(uint64_t dst, const CUtensorMap* map, const int32_t* coords, int rank, uint64_t barrier, const void* pc,
                 const char* file, int line) {
    Mbarrier& b = find(barrier, "cp.async.bulk.tensor", file, line);
    brrr_cpu::async::Copy c = read_box(dst, map, coords, rank, pc, file, line);
    c.thread = running_fiber->linear;
    b.tx -= static_cast<int64_t>(c.data.size());
    b.copies.push_back(std::move(c));
    complete_if_done(b);
}

// A bulk copy's bytes, read now: 16-byte aligned at both ends, a whole number of 16 bytes (the PTX
// ISA's rules for cp.async.bulk), inside the block's shared memory; the source checked as a read. It
// counts toward the barrier as a tensor copy does.
void bulk_load(uint64_t dst, const void* src, int64_t bytes, uint64_t barrier, const void* pc, const char* file, int line) {
    Mbarrier& b = find(barrier, "cp.async.bulk", file, line);
    char* to = static_cast<char*>(brrr_cpu::async::shared_pointer(dst, file, line));
    const uint64_t at = static_cast<uint64_t>(to - const_cast<char*>(running_block->arena.data()));
    const std::string copy = "cp.async.bulk of " + std::to_string(bytes) + " bytes to shared offset " + std::to_string(at);
    if (bytes <= 0 || bytes % 16) fault("bulk copy", copy + ": the size must be a positive multiple of 16", file, line);
    if (at % 16 || reinterpret_cast<uintptr_t>(src) % 16) {
        fault("bulk copy", copy + (at % 16 ? ": the destination" : ": the source") + " must be 16-byte aligned", file, line);
    }
    check_destination("bulk copy", "cp.async.bulk", at, static_cast<uint64_t>(bytes), {pc, file, line});
    if (brrr_cpu_access_checked) brrr_cpu_access_checked(src, static_cast<size_t>(bytes), 0, pc);
    std::vector<unsigned char> data(static_cast<size_t>(bytes));
    std::memcpy(data.data(), src, data.size());
    if (brrr_cpu_async_issued) brrr_cpu_async_issued(to, data.size(), pc);
    b.tx -= bytes;
    b.copies.push_back(brrr_cpu::async::Copy{to, std::move(data), pc, running_fiber->linear});
    complete_if_done(b);
}

// The stores (shared to global, completed through bulk groups), made when issued: one order a GPU may
// run them in, since the kernel may change the shared source only after cp.async.bulk.wait_group.read.
void tensor_store(const CUtensorMap* map, const int32_t* coords, int rank, uint64_t src, const void* pc, const char* file,
                  int line) {
    const char* what = "cp.async.bulk.tensor (a store)";
    const brrr_cpu::tma::Map m = checked_map(map, rank, what, file, line);
    const uint64_t at = box_offset(m, src, what, file, line);
    const char* from = store_source(at, box_bytes(m), what, {pc, file, line});
    walk_box(m, coords, at, [&](uint64_t place, const char* to) {
        if (!to) return;  // outside the tensor: not written
        if (brrr_cpu_access_checked) brrr_cpu_access_checked(to, m.elem_bytes, 1, pc);
        std::memcpy(const_cast<char*>(to), from + place, m.elem_bytes);
    });
}

void bulk_store(void* dst, uint64_t src, int64_t bytes, const void* pc, const char* file, int line) {
    const char* from = static_cast<const char*>(brrr_cpu::async::shared_pointer(src, file, line));
    const uint64_t at = static_cast<uint64_t>(from - brrr_cpu::async::arena(*running_block));
    const std::string copy = "cp.async.bulk of " + std::to_string(bytes) + " bytes from shared offset " + std::to_string(at);
    if (bytes <= 0 || bytes % 16) fault("bulk copy", copy + ": the size must be a positive multiple of 16", file, line);
    if (at % 16 || reinterpret_cast<uintptr_t>(dst) % 16) {
        fault("bulk copy", copy + (at % 16 ? ": the source" : ": the destination") + " must be 16-byte aligned", file, line);
    }
    store_source(at, static_cast<uint64_t>(bytes), copy, {pc, file, line});
    if (brrr_cpu_access_checked) brrr_cpu_access_checked(dst, static_cast<size_t>(bytes), 1, pc);
    std::memcpy(dst, from, static_cast<size_t>(bytes));
}

void tensor_load_onto(uint64_t dst, const CUtensorMap* map, const int32_t* coords, int rank,
                      brrr_cpu::async::BarrierState* barrier, const void* pc, const char* file, int line) {
    brrr_cpu::async::current("cp_async_bulk_tensor_global_to_shared", file, line);
    brrr_cpu::async::Copy c = read_box(dst, map, coords, rank, pc, file, line);
    c.thread = running_fiber->linear;
    barrier->tx -= static_cast<int64_t>(c.data.size());
    brrr_cpu::async::state.barriers[barrier].push_back(std::move(c));
    brrr_cpu::async::complete_if_done(barrier);
}

}  // namespace brrr_cpu::mbarrier
