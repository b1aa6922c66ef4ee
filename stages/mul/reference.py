"""Mul, reference stage: plain PyTorch, the contract the kernels must meet."""

import torch


def forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a * b


def backward(grad_y: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # Each input's gradient is scaled by the *other* input: the reason both are saved.
    return grad_y * b, grad_y * a
