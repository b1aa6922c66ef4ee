"""The numba stage simulated: numba's CUDA simulator run one thread at a time, with warp functions and
checks a GPU does not make. It knows nothing of ops; install is the one module that patches numba.

Layer map:

    numba_env      import numba.cuda in simulator or GPU mode; launch kernels on torch tensors
    scheduler      threads, blocks and warps taking turns; the findings (races, divergence, time limits)
    install        puts the scheduler, warp functions and tracked memory into numba's simulator
    shared_memory  shared memory that remembers who touched it: races, unwritten reads
    writers        which simulated thread wrote each element of a tensor, observed
    jit_source     which functions of numba_kernel.py are @cuda.jit kernels or device functions
    numba_internals  every private piece of numba's simulator brrr uses, listed once
    floats         where the simulator and a GPU compute in different precisions
    gpu_rules      what numba's GPU compiler refuses and its simulator runs
"""
