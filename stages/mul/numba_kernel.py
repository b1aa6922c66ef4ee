"""Mul, numba stage: one thread per element; runs in the CUDA simulator or on a GPU."""

import torch

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
BLOCK = 128


@cuda.jit
def mul_forward_kernel(a, b, y, n):
    i = cuda.grid(1)
    if i >= n:
        return
    y[i] = a[i] * b[i]


@cuda.jit
def mul_backward_kernel(grad_y, a, b, grad_a, grad_b, n):
    # Both gradients in one pass: grad_y is read once instead of once per gradient.
    i = cuda.grid(1)
    if i >= n:
        return
    g = grad_y[i]
    grad_a[i] = g * b[i]
    grad_b[i] = g * a[i]


def _check_same_shape(a: torch.Tensor, b: torch.Tensor) -> None:
    # The kernels index both flat arrays with one i: a broadcast would read past the smaller one.
    if a.shape != b.shape:
        raise ValueError(f"mul takes two tensors of one shape, got {tuple(a.shape)} and {tuple(b.shape)}")


def forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _check_same_shape(a, b)
    a, b = a.contiguous(), b.contiguous()
    y = torch.empty_like(a)
    n = a.numel()
    if n:
        launch(mul_forward_kernel, cdiv(n, BLOCK), BLOCK, a.view(-1), b.view(-1), y.view(-1), n)
    return y


def backward(grad_y: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _check_same_shape(a, b)
    _check_same_shape(grad_y, a)
    grad_y, a, b = grad_y.contiguous(), a.contiguous(), b.contiguous()
    grad_a = torch.empty_like(a)
    grad_b = torch.empty_like(b)
    n = a.numel()
    if n:
        launch(mul_backward_kernel, cdiv(n, BLOCK), BLOCK, grad_y.view(-1), a.view(-1), b.view(-1),
               grad_a.view(-1), grad_b.view(-1), n)
    return grad_a, grad_b
