"""Layer norm over the last dim, numba stage: one block per row for y and grad_x, one thread per
column for grad_weight and grad_bias. Runs in the CUDA simulator or on a GPU.

Statistics and sums are float64 for float32 and float64 inputs alike (see reference.py for why).
Elements are read through float(): in the simulator a Python float meeting a numpy float32 gives
a float32 (NumPy 2's promotion rules), so a float32 row would otherwise be summed in float32 there,
though numba types the same code as float64 on a GPU.
"""

import math

import torch

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
from numba import float64  # noqa: E402  (after import_cuda, which readies numpy for numba)

BLOCK = 16


@cuda.jit(device=True)
def block_sum(value, partial, t):
    partial[t] = value
    cuda.syncthreads()
    # Every thread folds all the partials in the same order, so each gets the same result
    # without a second round through shared memory (kernel.cu folds one partial per warp).
    result = partial[0]
    for i in range(1, BLOCK):
        result += partial[i]
    # No thread may write `partial` for the next reduction until every thread has read this one.
    cuda.syncthreads()
    return result


@cuda.jit
def layernorm_forward_kernel(x, weight, bias, y, mean, rstd, cols, eps):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    partial = cuda.shared.array(BLOCK, dtype=float64)
    total = 0.0
    for c in range(t, cols, BLOCK):
        total += float(x[row, c])
    mu = block_sum(total, partial, t) / cols
    # Second pass over the row for the centred sum of squares: E[x^2] - E[x]^2 would cancel.
    squares = 0.0
    for c in range(t, cols, BLOCK):
        d = float(x[row, c]) - mu
        squares += d * d
    r = 1.0 / math.sqrt(block_sum(squares, partial, t) / cols + eps)
    for c in range(t, cols, BLOCK):
        y[row, c] = (float(x[row, c]) - mu) * r * float(weight[c]) + float(bias[c])
    if t == 0:
        mean[row] = mu
        rstd[row] = r


@cuda.jit
def layernorm_backward_x_kernel(grad_y, x, weight, mean, rstd, grad_x, cols):
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    partial = cuda.shared.array(BLOCK, dtype=float64)
    mu = mean[row]
    r = rstd[row]
    sum_g = 0.0
    sum_gx = 0.0
    for c in range(t, cols, BLOCK):
        gxhat = float(grad_y[row, c]) * float(weight[c])
        sum_g += gxhat
        sum_gx += gxhat * (float(x[row, c]) - mu) * r
    mean_g = block_sum(sum_g, partial, t) / cols
    mean_gx = block_sum(sum_gx, partial, t) / cols
    for c in range(t, cols, BLOCK):
        xhat = (float(x[row, c]) - mu) * r
        grad_x[row, c] = r * (float(grad_y[row, c]) * float(weight[c]) - mean_g - xhat * mean_gx)


@cuda.jit
def layernorm_backward_weight_kernel(grad_y, x, mean, rstd, grad_weight, grad_bias, rows, cols):
    # One thread owns a column and walks down the rows: a sum in a fixed order, no atomics, so the
    # result is the same bits on every run.
    c = cuda.grid(1)
    if c >= cols:
        return
    gw = 0.0
    gb = 0.0
    for row in range(rows):
        g = float(grad_y[row, c])
        gw += g * (float(x[row, c]) - mean[row]) * rstd[row]
        gb += g
    grad_weight[c] = gw
    grad_bias[c] = gb


def _check_shapes(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> None:
    # The kernels index x[row, col] and weight[col]: other shapes would be misread, not broadcast.
    if x.dim() != 2 or weight.shape != (x.shape[1],) or bias.shape != weight.shape:
        raise ValueError(f"layernorm takes x [rows, cols] and weight, bias [cols], got {tuple(x.shape)}, "
                         f"{tuple(weight.shape)}, {tuple(bias.shape)}")


def forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> tuple[torch.Tensor, ...]:
    _check_shapes(x, weight, bias)
    x, weight, bias = x.contiguous(), weight.contiguous(), bias.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float64, device=x.device)
    rstd = torch.empty(rows, dtype=torch.float64, device=x.device)
    if x.numel():
        launch(layernorm_forward_kernel, rows, BLOCK, x, weight, bias, y, mean, rstd, cols, eps)
    return y, mean, rstd


def backward(grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
             eps: float) -> tuple[torch.Tensor, ...]:
    _check_shapes(x, weight, weight)
    if grad_y.shape != x.shape or mean.shape != (x.shape[0],) or rstd.shape != mean.shape:
        raise ValueError(f"layernorm backward takes grad_y like x {tuple(x.shape)} and mean, rstd [rows], got "
                         f"{tuple(grad_y.shape)}, {tuple(mean.shape)}, {tuple(rstd.shape)}")
    grad_y, x, weight = grad_y.contiguous(), x.contiguous(), weight.contiguous()
    mean, rstd = mean.contiguous(), rstd.contiguous()
    rows, cols = x.shape
    grad_x = torch.empty_like(x)
    grad_weight = torch.empty_like(weight)
    grad_bias = torch.empty_like(weight)
    if x.numel():
        launch(layernorm_backward_x_kernel, rows, BLOCK, grad_y, x, weight, mean, rstd, grad_x, cols)
    if cols:
        # With no rows the column sums are empty sums: the kernel writes their zeros.
        launch(layernorm_backward_weight_kernel, cdiv(cols, BLOCK), BLOCK, grad_y, x, mean, rstd, grad_weight, grad_bias,
               rows, cols)
    return grad_x, grad_weight, grad_bias
