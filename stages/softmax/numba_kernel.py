"""Softmax over the last dim, numba stage: one block per row, shared-memory block reductions.

Each block's threads stride over its row, so rows of any length fit one block. Accumulation is in
float64 for float32 and float64 inputs alike. Elements are read through float(): in the simulator a
Python float meeting a numpy float32 gives a float32 (NumPy 2's promotion rules), so a float32 row would
otherwise be summed in float32 there, though numba types the same code as float64 on a GPU.
"""

import math

import torch

from brrr_kernels import import_cuda, launch

cuda = import_cuda()
from numba import float64  # noqa: E402  (after import_cuda, which readies numpy for numba)

BLOCK = 16


@cuda.jit(device=True)
def block_max(value, partial, t):
    partial[t] = value
    cuda.syncthreads()
    # Every thread folds all the partials in the same order, so each gets the same result
    # without a second round through shared memory (kernel.cu folds one partial per warp).
    result = partial[0]
    for i in range(1, BLOCK):
        result = max(result, partial[i])
    # No thread may write `partial` for the next reduction until every thread has read this one.
    cuda.syncthreads()
    return result


@cuda.jit(device=True)
def block_sum(value, partial, t):
    partial[t] = value
    cuda.syncthreads()
    result = partial[0]
    for i in range(1, BLOCK):
        result += partial[i]
    cuda.syncthreads()
    return result


@cuda.jit
def softmax_forward_kernel(x, y, cols):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    partial = cuda.shared.array(BLOCK, dtype=float64)
    m = -math.inf  # threads past the end of a short row contribute the identity of max
    for c in range(t, cols, BLOCK):
        m = max(m, float(x[row, c]))
    m = block_max(m, partial, t)
    total = 0.0
    for c in range(t, cols, BLOCK):
        total += math.exp(float(x[row, c]) - m)
    total = block_sum(total, partial, t)
    for c in range(t, cols, BLOCK):
        y[row, c] = math.exp(float(x[row, c]) - m) / total


@cuda.jit
def softmax_backward_kernel(grad_y, y, grad_x, cols):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    partial = cuda.shared.array(BLOCK, dtype=float64)
    dot = 0.0
    for c in range(t, cols, BLOCK):
        dot += float(grad_y[row, c]) * float(y[row, c])
    dot = block_sum(dot, partial, t)
    for c in range(t, cols, BLOCK):
        grad_x[row, c] = float(y[row, c]) * (float(grad_y[row, c]) - dot)


def _check_rows(t: torch.Tensor, name: str) -> None:
    # The kernels index [row, col]: any other rank would be misread, not broadcast.
    if t.dim() != 2:
        raise ValueError(f"softmax takes {name} as [rows, cols], got shape {tuple(t.shape)}")


def forward(x: torch.Tensor) -> torch.Tensor:
    _check_rows(x, "x")
    x = x.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    if x.numel():
        launch(softmax_forward_kernel, rows, BLOCK, x, y, cols)
    return y


def backward(grad_y: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    _check_rows(y, "y")
    if grad_y.shape != y.shape:
        raise ValueError(f"grad_y and y must have one shape, got {tuple(grad_y.shape)} and {tuple(y.shape)}")
    grad_y, y = grad_y.contiguous(), y.contiguous()
    grad_x = torch.empty_like(y)
    rows, cols = y.shape
    if y.numel():
        launch(softmax_backward_kernel, rows, BLOCK, grad_y, y, grad_x, cols)
    return grad_x
