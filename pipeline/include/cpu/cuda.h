// CPU stand-in for CUDA's cuda.h: everything lives in cuda_runtime.h here.
#pragma once
#include "cuda_runtime.h"
// The driver API's version, as CUDA 13.0's cuda.h has it: code that picks a path by it
// (`#if CUDA_VERSION >= 12000`, a 16-bit conversion) takes the path a GPU build takes with it.
#ifndef CUDA_VERSION
#define CUDA_VERSION 13000
#endif
