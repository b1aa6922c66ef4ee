"""Bias + GELU (tanh form), numba stage: a thread per element, then a thread per column for
the bias gradient; runs in the CUDA simulator or on a GPU. See reference.py for the formula."""

import math

import numpy as np
import torch

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
BLOCK = 32
K = math.sqrt(2 / math.pi)
C = 0.044715


@cuda.jit(device=True)
def sigmoids(u):
    # sigmoid(2z) and sigmoid(-2z) from one exp of a non-positive number, which cannot overflow.
    z = K * (u + C * u * u * u)
    e = math.exp(-2.0 * abs(z))
    if z >= 0:
        return 1.0 / (1.0 + e), e / (1.0 + e)
    return e / (1.0 + e), 1.0 / (1.0 + e)


@cuda.jit
def bias_gelu_forward_kernel(x, bias, y, n, cols):
    i = cuda.grid(1)
    if i >= n:
        return
    u = x[i] + bias[i % cols]
    s, _ = sigmoids(u)
    y[i] = u * s


@cuda.jit
def bias_gelu_backward_kernel(grad_y, x, bias, grad_x, n, cols):
    i = cuda.grid(1)
    if i >= n:
        return
    u = x[i] + bias[i % cols]
    s, s_neg = sigmoids(u)
    grad_x[i] = grad_y[i] * (s + 2.0 * u * s * s_neg * K * (1.0 + 3.0 * C * u * u))


@cuda.jit
def column_sum_kernel(grad_x, grad_bias, rows, cols):
    # One thread walks one column, always top to bottom: the same order every run, no atomics.
    c = cuda.grid(1)
    if c >= cols:
        return
    acc = np.float64(0.0)  # float64 in every dtype: the sum is where rounding errors pile up
    for r in range(rows):
        acc += grad_x[r * cols + c]
    grad_bias[c] = acc


def _check(x: torch.Tensor, bias: torch.Tensor) -> None:
    if x.dim() != 2 or bias.dim() != 1 or bias.shape[0] != x.shape[1]:
        raise ValueError(f"bias_gelu takes x [rows, cols] and bias [cols], got {tuple(x.shape)} and {tuple(bias.shape)}")


def forward(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    _check(x, bias)
    x, bias = x.contiguous(), bias.contiguous()
    y = torch.empty_like(x)
    n, cols = x.numel(), x.shape[1]
    if n:
        launch(bias_gelu_forward_kernel, cdiv(n, BLOCK), BLOCK, x.view(-1), bias, y.view(-1), n, cols)
    return y


def backward(grad_y: torch.Tensor, x: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _check(x, bias)
    if grad_y.shape != x.shape:
        raise ValueError(f"grad_y has shape {tuple(grad_y.shape)}, x has {tuple(x.shape)}")
    grad_y, x, bias = grad_y.contiguous(), x.contiguous(), bias.contiguous()
    grad_x = torch.empty_like(x)
    grad_bias = torch.empty_like(bias)
    (rows, cols), n = x.shape, x.numel()
    if n:
        launch(bias_gelu_backward_kernel, cdiv(n, BLOCK), BLOCK, grad_y.view(-1), x.view(-1), bias, grad_x.view(-1),
               n, cols)
    if cols:  # with no rows this writes zeros: the sum of nothing
        launch(column_sum_kernel, cdiv(cols, BLOCK), BLOCK, grad_x.view(-1), grad_bias, rows, cols)
    return grad_x, grad_bias
