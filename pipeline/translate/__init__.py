"""brrr translate: numba_kernel.py, mechanically, as a first kernel.cu and binding.cpp.

Layer map:

    run     the command: reads the op, writes the two files, never overwrites
    common  numba's scalar types in C, errors at a line, declarations, comments
    device  @cuda.jit kernels and device functions as CUDA C
    host    forward and backward as binding.cpp's functions on at::Tensor
    blocks  the CUDA block the launches take: spec.py's CUDA_ constants, or numba's with a warning
"""
