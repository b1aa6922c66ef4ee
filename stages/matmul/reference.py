"""Matrix product, reference stage: plain PyTorch, the contract the kernels must meet."""

import torch


def forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def backward(grad_c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # c[i, j] = sum_k a[i, k] b[k, j], so dc/da[i, k] pairs grad_c's row i with b's row k, and
    # dc/db[k, j] pairs a's column k with grad_c's column j.
    return grad_c @ b.T, a.T @ grad_c
