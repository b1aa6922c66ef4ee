// CPU stand-in for <cuda_pipeline.h>: the pipeline primitives are in brrr_cpu_async.h.
#pragma once
#include "brrr_cpu_async.h"
