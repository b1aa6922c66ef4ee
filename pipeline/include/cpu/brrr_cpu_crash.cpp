// A crash of the op's own code (a segfault or abort in binding.cpp, a kernel overflowing its fiber's
// stack, a wild pointer) in the child process brrr runs the CPU execution in (cuda/isolated.py).
// The process is lost either way; this handler, on an alternate stack, first writes one line of facts
// to a pipe brrr reads: the signal, the faulting address, the launch and thread it was in (or the last
// launch entered), whether the address is the running fiber's guard page (a stack overflow), and the
// return addresses of the stack as library+offset, which brrr turns into kernel.cu or binding.cpp lines
// with addr2line. Only async-signal-safe calls after install (backtrace is warmed up there).
//
// Linked into every CPU build of an op; nothing happens until brrr_cpu_crash_install is called.

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "brrr_cpu.h"

namespace {

int report_fd = -1;
// The last launch entered (copied: the Launch lives on its launcher's stack) and the running fiber's stack.
char last_kernel[256];
char last_site[512];
thread_local const char* fiber_lo = nullptr;
thread_local const char* fiber_hi = nullptr;
void (*next_launch_begin)(const brrr_cpu::Launch&) = nullptr;
void (*next_thread_resumed)(int, const char*, const char*) = nullptr;
void (*next_block_begin)(const brrr_cpu::Launch&, uint3) = nullptr;

void copy(char* out, size_t size, const char* text) {
    size_t i = 0;
    for (; text && text[i] && i + 1 < size; ++i) out[i] = text[i];
    out[i] = '\0';
}

// A line built in a fixed buffer with no allocation (the handler may run with the heap corrupt).
struct Line {
    char text[8192];
    size_t used = 0;
    Line& add(const char* s) {
        while (s && *s && used + 1 < sizeof text) text[used++] = *s++;
        return *this;
    }
    Line& num(uint64_t v, int base = 10) {
        char digits[24];
        int n = 0;
        do {
            digits[n++] = "0123456789abcdef"[v % base];
            v /= base;
        } while (v && n < 24);
        if (base == 16) add("0x");
        while (n) {
            const char c[2] = {digits[--n], 0};
            add(c);
        }
        return *this;
    }
    Line& triple(uint3 v) { return num(v.x).add(",").num(v.y).add(",").num(v.z); }
};

void on_launch(const brrr_cpu::Launch& launch) {
    copy(last_kernel, sizeof last_kernel, launch.name.c_str());
    Line site;
    site.add(launch.site.file).add(":").num(static_cast<uint64_t>(launch.site.line));
    site.text[site.used] = '\0';
    copy(last_site, sizeof last_site, site.text);
    if (next_launch_begin) next_launch_begin(launch);
}

void on_resume(int thread, const char* lo, const char* hi) {
    fiber_lo = lo;
    fiber_hi = hi;
    if (next_thread_resumed) next_thread_resumed(thread, lo, hi);
}

// Each OS thread that runs blocks needs its own alternate stack, or an overflowing fiber kills it unreported.
struct AltStack {
    void* memory = nullptr;
    AltStack() {
        const size_t size = 1 << 16;
        memory = std::malloc(size);
        stack_t s{};
        s.ss_sp = memory;
        s.ss_size = size;
        sigaltstack(&s, nullptr);
    }
    ~AltStack() {
        stack_t s{};
        s.ss_flags = SS_DISABLE;
        sigaltstack(&s, nullptr);
        std::free(memory);
    }
};

void ensure_altstack() { static thread_local AltStack stack; }

void on_block(const brrr_cpu::Launch& launch, uint3 block) {
    ensure_altstack();
    if (next_block_begin) next_block_begin(launch, block);
}

void on_crash(int sig, siginfo_t* info, void* context) {
    Line line;
    const char* addr = static_cast<const char*>(info->si_addr);
    line.add("brrr-crash\tsignal=").num(static_cast<uint64_t>(sig));
    line.add("\taddr=").num(reinterpret_cast<uintptr_t>(addr), 16);
    const long page = sysconf(_SC_PAGESIZE);
    if (sig == SIGSEGV && fiber_lo && addr < fiber_lo && addr >= fiber_lo - 4 * page) {
        line.add("\toverflow=").num(static_cast<uint64_t>(fiber_hi - fiber_lo));
    }
    const brrr_cpu::Launch* launch = brrr_cpu::current_launch();
    if (launch && brrr_cpu::current_thread() >= 0) {
        line.add("\tblock=").triple(blockIdx).add("\tthread=").triple(threadIdx);
    }
    if (last_kernel[0]) line.add(launch ? "\tkernel=" : "\tlast=").add(last_kernel).add("\tsite=").add(last_site);
    // The faulting instruction first (the return addresses backtrace gives are each one past a call).
    void* frames[48];
    int n = backtrace(frames, 48);
#if defined(__x86_64__)
    void* pc = reinterpret_cast<void*>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
    void* pc = reinterpret_cast<void*>(static_cast<ucontext_t*>(context)->uc_mcontext.pc);
#else
    void* pc = nullptr;
    (void)context;
#endif
    line.add("\tframes=");
    for (int i = -1; i < n; ++i) {
        void* at = i < 0 ? pc : frames[i];
        Dl_info where{};
        if (!at || dladdr(at, &where) == 0 || !where.dli_fname) continue;
        const uintptr_t offset = reinterpret_cast<uintptr_t>(at) - reinterpret_cast<uintptr_t>(where.dli_fbase);
        line.add(i < 0 ? "pc:" : "").add(where.dli_fname).add("+").num(i < 0 ? offset : offset - 1, 16).add(";");
    }
    line.add("\n");
    for (size_t done = 0; done < line.used;) {
        const ssize_t w = write(report_fd, line.text + done, line.used - done);
        if (w <= 0) break;
        done += static_cast<size_t>(w);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

}  // namespace

// Report crashes to `fd` from now on (called once, by the child process brrr runs the library in).
extern "C" __attribute__((visibility("default"))) void brrr_cpu_crash_install(int fd) {
    report_fd = fd;
    void* warm[2];
    backtrace(warm, 2);  // loads libgcc's unwinder now: in the handler it must not call dlopen
    ensure_altstack();
    auto& h = brrr_cpu::hooks();
    next_launch_begin = h.launch_begin;
    next_thread_resumed = h.thread_resumed;
    next_block_begin = h.block_begin;
    h.launch_begin = on_launch;
    h.thread_resumed = on_resume;
    h.block_begin = on_block;
    struct sigaction act {};
    act.sa_sigaction = on_crash;
    act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESETHAND;
    sigemptyset(&act.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP}) sigaction(sig, &act, nullptr);
}
