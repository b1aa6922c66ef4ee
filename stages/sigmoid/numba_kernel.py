"""Sigmoid, numba stage: one thread per element; runs in the CUDA simulator or on a GPU."""

import math

import torch

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
BLOCK = 128


@cuda.jit
def sigmoid_forward_kernel(x, y, n):
    i = cuda.grid(1)
    if i >= n:
        return
    v = x[i]
    if v >= 0:
        y[i] = 1.0 / (1.0 + math.exp(-v))
    else:
        e = math.exp(v)
        y[i] = e / (1.0 + e)


@cuda.jit
def sigmoid_backward_kernel(grad_y, y, grad_x, n):
    i = cuda.grid(1)
    if i >= n:
        return
    grad_x[i] = float(grad_y[i]) * float(y[i]) * (1.0 - float(y[i]))


def forward(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        launch(sigmoid_forward_kernel, cdiv(n, BLOCK), BLOCK, x.view(-1), y.view(-1), n)
    return y


def backward(grad_y: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    grad_y, y = grad_y.contiguous(), y.contiguous()
    grad_x = torch.empty_like(y)
    n = y.numel()
    if n:
        launch(sigmoid_backward_kernel, cdiv(n, BLOCK), BLOCK, grad_y.view(-1), y.view(-1), grad_x.view(-1), n)
    return grad_x
