"""rowscan, numba stage: a running sum along each row of x [rows, cols]. One block per row walks
the row in chunks of BLOCK elements: each thread's term goes through a scan in shared memory
(log2(BLOCK) steps, each between barriers), and the chunk's total is carried into the next chunk.
Backward runs the same scan from the row's end. Runs in the CUDA simulator or on a GPU.

Fill in the lines marked "brrr: fill in", then delete the `raise` lines in forward() and
backward(): the launches below them are already wired. Terms are read through float(): float64
in the simulator as on a GPU; the sums are float64 (shared arrays of float64), rounded once at the store.
"""

import math  # noqa: F401  (for the math you fill in: math.exp, math.log, ...)

import torch

from brrr_kernels import import_cuda, launch

cuda = import_cuda()
from numba import float64  # noqa: E402  (after import_cuda, which readies numpy for numba)

BLOCK = 32  # as spec.py's BLOCK (a power of two, for the scan's steps)


@cuda.jit(device=True)
def block_scan(value, buf, t):
    """(the inclusive running sum of `value` over the block's threads up to t, the block's total)."""
    buf[t] = value
    cuda.syncthreads()
    offset = 1
    while offset < BLOCK:
        add = 0.0
        if t >= offset:
            add = buf[t - offset]
        cuda.syncthreads()  # every read of this step before any write
        buf[t] += add
        cuda.syncthreads()
        offset *= 2
    inclusive = buf[t]
    total = buf[BLOCK - 1]
    cuda.syncthreads()  # nobody may overwrite `buf` before every thread has read it
    return inclusive, total


@cuda.jit
def rowscan_forward_kernel(x, y, cols):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    buf = cuda.shared.array(BLOCK, dtype=float64)
    carry = 0.0
    for start in range(0, cols, BLOCK):
        c = start + t
        term = 0.0
        if c < cols:
            term = float(x[row, c])
        s, total = block_scan(term, buf, t)
        if c < cols:
            y[row, c] = carry + s
        carry += total


@cuda.jit
def rowscan_backward_kernel(grad_y, x, grad_x, cols):
    # The same scan from the row's end: element c gets the sum over the elements c..cols-1.
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    buf = cuda.shared.array(BLOCK, dtype=float64)
    carry = 0.0
    for start in range(0, cols, BLOCK):
        c = cols - 1 - (start + t)
        term = 0.0
        if c >= 0:
            term = float(grad_y[row, c])
        s, total = block_scan(term, buf, t)
        if c >= 0:
            grad_x[row, c] = carry + s
        carry += total


def forward(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    if x.numel():
        launch(rowscan_forward_kernel, rows, BLOCK, x, y, cols)
    return y


def backward(grad_y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    grad_y, x = grad_y.contiguous(), x.contiguous()
    rows, cols = x.shape
    grad_x = torch.empty_like(x)
    if x.numel():
        launch(rowscan_backward_kernel, rows, BLOCK, grad_y, x, grad_x, cols)
    return grad_x
