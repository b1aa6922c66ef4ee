"""Sigmoid, reference stage: plain PyTorch, the contract the kernels must meet."""

import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    # exp(-|x|) lies in (0, 1]: it cannot overflow, and neither ratio can become inf/inf.
    # torch.where instead of boolean-mask indexing keeps shapes data-independent (torch.compile).
    e = torch.exp(-x.abs())
    return torch.where(x >= 0, 1 / (1 + e), e / (1 + e))


def backward(grad_y: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return grad_y * y * (1 - y)
