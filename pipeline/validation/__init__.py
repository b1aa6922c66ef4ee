"""What brrr validate runs: the plan (the README's table of checks, as data), the one executor, one
call of a stage on one case, folding cases into rows, and many ops in worker processes.

Layer map:

    plan            the checks of each stage, as data
    executor        runs any check of the plan on one op and makes its row
    trial           one call on one case: outputs poisoned, inputs checked for writes
    rows            a check's many cases folded into its one report row
    layouts         a failing strided or permuted case's cause, and a stage's refusal of a layout
    function        one autograd.Function for every stage
    gpu_fault       a kernel's fault on the GPU: one row, not the end of brrr (CUDA's errors are sticky)
    unfinished      a stage still as its template left it, told apart from a failing one
    huge            validate --huge: more than 2**31 elements
    library_checks  the torch.library rows: opcheck and torch.compile
    torch_library   an op's stages as real PyTorch ops (ops.register's implementation)
    native_library  what a registered op does each call, in C++: its autograd, its call into the extension
    runner          many ops, each in its own process when asked
    durations       each op's last validation time here: the longest started first
    estimate        how long the simulator will take, said before it starts
"""
