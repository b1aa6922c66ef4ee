"""Tensor-core matrix product, reference stage: plain PyTorch, the contract the kernels must meet.

In bfloat16 and float16, c is the product of the 16-bit inputs as exact as float32 accumulation makes
it, rounded once to the 16-bit type: torch's own matmul there, and what the tensor cores compute.
"""

import torch


def forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def backward(grad_c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # c[i, j] = sum_k a[i, k] b[k, j]: grad_a pairs grad_c's rows with b's rows, grad_b a's columns
    # with grad_c's columns.
    return grad_c @ b.T, a.T @ grad_c
