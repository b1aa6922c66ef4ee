// CPU stand-in for CUDA's vector_types.h: everything lives in cuda_runtime.h here.
#pragma once
#include "cuda_runtime.h"
