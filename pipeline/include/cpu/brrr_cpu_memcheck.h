// Memory checks of the CPU execution of kernel.cu (brrr_cpu_memcheck.cpp): what a checked build
// exports besides the address-sanitizer callbacks, for brrr's Python side (ctypes).
#pragma once
#include <cstddef>

extern "C" {
// Set by `brrr debug --stage cuda`'s driver around the call it stops in (a breakpoint condition).
extern int brrr_debug_armed;
// Remember, for every byte a kernel stores into a tensor argument, the last kernel, block and
// thread that stored it (`brrr debug --stage cuda --index I` finds the thread behind element I);
// on = 0 stops recording and keeps what was recorded.
void brrr_memcheck_record_writes(int on);
// The last store to `address` while recording: 1 and its kernel's name, block and thread, or 0.
int brrr_memcheck_writer(const void* address, char* kernel, std::size_t kernel_size, unsigned* block, unsigned* thread);
}
