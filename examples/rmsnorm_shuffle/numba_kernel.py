"""rmsnorm_shuffle, numba stage: one block per row for y and grad_x (threads stride over the row and reduce
through shared memory). Runs in the CUDA simulator or on a GPU.
grad_weight: one thread per column, walking down the rows.

Fill in the lines marked "brrr: fill in" in the three kernels, then delete the `raise` lines in
forward() and backward(): the launches below them are already wired.

Elements are read through float(): in the simulator a numpy float32 element times a Python float
stays float32 (NumPy 2's rules), while numba on a GPU computes it in float64; float() makes both
compute in float64.
"""

import math  # noqa: F401  (for the math you fill in: math.sqrt, math.exp, ...)

import torch

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
from numba import float64  # noqa: E402  (after import_cuda, which readies numpy for numba)

BLOCK = 16  # as spec.py's BLOCK: its layout names the thread of each element


@cuda.jit(device=True)
def block_sum(value, partial, t):
    """The sum of `value` over the block's threads, returned to every thread."""
    partial[t] = value
    cuda.syncthreads()
    result = partial[0]  # every thread folds the partials in the same order: the same result in each
    for i in range(1, BLOCK):
        result += partial[i]
    cuda.syncthreads()  # nobody may overwrite `partial` before every thread has read it
    return result


@cuda.jit
def rmsnorm_shuffle_forward_kernel(x, weight, y, rstd, cols, eps):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    partial = cuda.shared.array(BLOCK, dtype=float64)
    total = 0.0
    for c in range(t, cols, BLOCK):
        v = float(x[row, c])
        total += v * v
    r = 1.0 / math.sqrt(block_sum(total, partial, t) / cols + eps)
    for c in range(t, cols, BLOCK):
        y[row, c] = float(x[row, c]) * r * float(weight[c])
    if t == 0:
        rstd[row] = r


@cuda.jit
def rmsnorm_shuffle_backward_x_kernel(grad_y, x, weight, rstd, grad_x, cols):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    partial = cuda.shared.array(BLOCK, dtype=float64)
    r = rstd[row]
    total = 0.0
    for c in range(t, cols, BLOCK):
        g = float(grad_y[row, c]) * float(weight[c])
        total += g * float(x[row, c]) * r
    row_sum = block_sum(total, partial, t)
    for c in range(t, cols, BLOCK):
        g = float(grad_y[row, c]) * float(weight[c])
        grad_x[row, c] = r * (g - float(x[row, c]) * r * row_sum / cols)


@cuda.jit
def rmsnorm_shuffle_backward_weight_kernel(grad_y, x, rstd, grad_weight, rows, cols):
    # One thread owns a column and walks down the rows: a sum in a fixed order, no atomics.
    c = cuda.grid(1)
    if c >= cols:
        return
    total = 0.0
    for row in range(rows):
        total += float(grad_y[row, c]) * float(x[row, c]) * rstd[row]
    grad_weight[c] = total


def forward(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    x, weight = x.contiguous(), weight.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    rstd = torch.empty(rows, dtype=torch.float64, device=x.device)
    if x.numel():
        launch(rmsnorm_shuffle_forward_kernel, rows, BLOCK, x, weight, y, rstd, cols, eps)
    return y, rstd


def backward(grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor,
             eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    grad_y, x = grad_y.contiguous(), x.contiguous()
    rows, cols = x.shape
    grad_x = torch.empty_like(x)
    grad_weight = torch.empty_like(weight.contiguous())
    if x.numel():
        launch(rmsnorm_shuffle_backward_x_kernel, rows, BLOCK, grad_y, x, weight, rstd, grad_x, cols)
        launch(rmsnorm_shuffle_backward_weight_kernel, cdiv(cols, BLOCK), BLOCK, grad_y, x, rstd, grad_weight, rows, cols)
    elif cols:
        grad_weight.zero_()  # no rows: the column sums are empty sums
    return grad_x, grad_weight
