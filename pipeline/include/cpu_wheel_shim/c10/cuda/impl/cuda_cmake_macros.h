// The CPU build of torch ships c10/cuda headers without this generated file; its CUDA build
// holds exactly this line. Used only to compile-check kernels on a machine without CUDA torch.
#pragma once
#define C10_CUDA_BUILD_SHARED_LIBS
