// CPU stand-in for CUDA's cuda_runtime.h (see brrr_cpu.h): in a CPU build this folder comes first
// on the include path, so kernel.cu's #include <cuda_runtime.h> lands here.
#pragma once
#include "brrr_cpu_host.h"
#include "brrr_cpu.h"
#include "brrr_cpu_tma.h"  // the driver API's tensor maps (cuda.h), reached through the runtime too
