// CPU stand-in for CUDA's cuda_runtime_api.h: everything lives in cuda_runtime.h here.
#pragma once
#include "cuda_runtime.h"
