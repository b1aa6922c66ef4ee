"""The built-in op library, installed as brrr_kernels.stages: one folder per op, each holding
spec.py, reference.py, numba_kernel.py, kernel.cu and binding.cpp, and bugs/ with the op's
planted bugs (NAME.bug files, see brrr_kernels.mutate.bug_files)."""
