"""The op library: one folder per op, each holding spec.py, reference.py, numba_kernel.py and kernel.cu."""
