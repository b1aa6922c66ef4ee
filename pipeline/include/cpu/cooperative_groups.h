// CPU stand-in for CUDA's <cooperative_groups.h>: see brrr_cpu_cg.h.
#pragma once
#include "brrr_cpu_cg.h"
