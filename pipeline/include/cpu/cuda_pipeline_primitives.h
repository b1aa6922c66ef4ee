// CPU stand-in for <cuda_pipeline_primitives.h>: the pipeline primitives are in brrr_cpu_async.h.
#pragma once
#include "brrr_cpu_async.h"
