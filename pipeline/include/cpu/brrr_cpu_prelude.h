// What every rewritten kernel.cu opens with (cpu_source.rewrite): the runtime, the tensor-core
// stand-ins and printf. One header, so the CPU build can precompile it once per set of flags
// (cpu_build.prelude_job): parsing these is most of a small kernel's compile. A guard, not #pragma
// once: the op's own headers open with this include too, and gcc looks for a header it took from a
// precompiled one, under #pragma once, beside the .gch, where there is none.
#ifndef BRRR_CPU_PRELUDE_H
#define BRRR_CPU_PRELUDE_H
#include "brrr_cpu.h"
#include "brrr_cpu_ldst.h"
#include "brrr_cpu_alu.h"
#include "brrr_cpu_ptx_warp.h"
#include "brrr_cpu_fp8.h"
#include "brrr_cpu_mma.h"
#include "brrr_cpu_tma.h"
#include "brrr_cpu_wgmma.h"
#include "brrr_cpu_printf.h"
#endif
