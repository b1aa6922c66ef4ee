// Device printf for the CPU execution: kernel.cu's printf (and std::printf) call the runtime's
// brrr_cpu_device_printf, which, inside a kernel, prefixes each line with the block and thread and
// keeps it with the launch's output (see brrr_cpu_runtime.cpp); outside one it is printf.
// Included by the rewritten kernel.cu only (pipeline/cpu_source.py), after brrr_cpu.h, so the
// macro never meets another header's declaration of printf.
#pragma once
#include <cstdio>

extern "C" int brrr_cpu_device_printf(const char* format, ...) __attribute__((format(printf, 1, 2)));
namespace std {
using ::brrr_cpu_device_printf;
}
#define printf(...) brrr_cpu_device_printf(__VA_ARGS__)
