"""brrr debug and trace: stop in one thread of a stage. Named debugger/, not debug/, so the public
function brrr_kernels.debug stays unshadowed.

Layer map:

    numba_stage  pdb in one simulated thread, or a trace of it; a failure's saved inputs
    cuda_stage   gdb in one fiber of the CPU execution, on kernel.cu
"""
