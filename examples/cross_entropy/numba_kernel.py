"""cross_entropy, numba stage: a loss per row of logits [rows, classes] against integer targets target [rows]
(no gradient for them). One block per row: the threads stride over the row, a max and a sum are
reduced through shared memory, and thread 0 writes the row's loss; backward recomputes both and
writes the row's gradient. Runs in the CUDA simulator or on a GPU.

Fill in the lines marked "brrr: fill in" (the row's term appears in both kernels: the same line
twice), then delete the `raise` lines in forward() and backward(). Elements are read through
float(): float64 in the simulator as on a GPU.
"""

import math

import torch

from brrr_kernels import import_cuda, launch

cuda = import_cuda()
from numba import float64  # noqa: E402  (after import_cuda, which readies numpy for numba)

BLOCK = 32  # as spec.py's BLOCK: its layout names the thread of each element


@cuda.jit(device=True)
def block_max(value, partial, t):
    """The max of `value` over the block's threads, returned to every thread."""
    partial[t] = value
    cuda.syncthreads()
    result = partial[0]  # every thread folds the partials in the same order: the same result in each
    for i in range(1, BLOCK):
        result = max(result, partial[i])
    cuda.syncthreads()  # nobody may overwrite `partial` before every thread has read it
    return result


@cuda.jit(device=True)
def block_sum(value, partial, t):
    """The sum of `value` over the block's threads, returned to every thread."""
    partial[t] = value
    cuda.syncthreads()
    result = partial[0]
    for i in range(1, BLOCK):
        result += partial[i]
    cuda.syncthreads()
    return result


@cuda.jit(device=True)
def row_max_and_sum(logits, row, cols, partial, t):
    """(the row's max m, the row's sum of terms): the same in forward and backward."""
    m = -math.inf
    for c in range(t, cols, BLOCK):
        m = max(m, float(logits[row, c]))
    m = block_max(m, partial, t)  # the row's largest value: subtract it before exp, so exp never overflows
    total = 0.0
    for c in range(t, cols, BLOCK):
        v = float(logits[row, c])
        total += math.exp(v - m)
    return m, block_sum(total, partial, t)


@cuda.jit
def cross_entropy_forward_kernel(logits, target, loss, cols):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    partial = cuda.shared.array(BLOCK, dtype=float64)
    m, total = row_max_and_sum(logits, row, cols, partial, t)
    if t == 0:
        k = target[row]
        if k < 0 or k >= cols:
            loss[row] = math.nan  # a target outside the row: no loss to give
        else:
            loss[row] = math.log(total) + m - float(logits[row, k])


@cuda.jit
def cross_entropy_backward_kernel(grad_loss, logits, target, grad_logits, cols):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    partial = cuda.shared.array(BLOCK, dtype=float64)
    m, total = row_max_and_sum(logits, row, cols, partial, t)
    g = float(grad_loss[row])
    k = target[row]
    for c in range(t, cols, BLOCK):
        v = float(logits[row, c])
        hit = 1.0 if c == k else 0.0  # the target's column
        grad_logits[row, c] = g * (math.exp(v - m) / total - hit)


def forward(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    logits, target = logits.contiguous(), target.contiguous()
    rows, cols = logits.shape
    loss = torch.empty(rows, dtype=logits.dtype, device=logits.device)
    if rows:
        launch(cross_entropy_forward_kernel, rows, BLOCK, logits, target, loss, cols)
    return loss


def backward(grad_loss: torch.Tensor, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    # One gradient: target is integer and takes none.
    grad_loss, logits, target = grad_loss.contiguous(), logits.contiguous(), target.contiguous()
    rows, cols = logits.shape
    grad_logits = torch.empty_like(logits)
    if logits.numel():
        launch(cross_entropy_backward_kernel, rows, BLOCK, grad_loss, logits, target, grad_logits, cols)
    return grad_logits
