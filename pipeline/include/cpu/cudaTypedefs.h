// CPU stand-in for CUDA's cudaTypedefs.h: the driver entry points' types (PFN_cuTensorMapEncodeTiled)
// live in brrr_cpu_tma.h here.
#pragma once
#include "cuda_runtime.h"
