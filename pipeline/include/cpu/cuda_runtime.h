// CPU stand-in for CUDA's cuda_runtime.h (see brrr_cpu.h): in a CPU build this folder comes first
// on the include path, so kernel.cu's #include <cuda_runtime.h> lands here.
#pragma once
// The runtime's version, as CUDA 13.0's cuda_runtime_api.h has it (nvcc includes cuda_runtime.h in
// every .cu, so a kernel may test it without an include): the CPU runtime follows CUDA 13.0.
#ifndef CUDART_VERSION
#define CUDART_VERSION 13000
#endif
#include "brrr_cpu_host.h"
#include "brrr_cpu.h"
#include "brrr_cpu_tma.h"  // the driver API's tensor maps (cuda.h), reached through the runtime too
