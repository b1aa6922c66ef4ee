// CPU stand-in for CUDA's <cooperative_groups/reduce.h>: see brrr_cpu_cg_reduce.h.
#pragma once
#include "../brrr_cpu_cg_reduce.h"
