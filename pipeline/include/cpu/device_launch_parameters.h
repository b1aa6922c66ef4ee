// CPU stand-in for CUDA's device_launch_parameters.h: everything lives in cuda_runtime.h here.
#pragma once
#include "cuda_runtime.h"
