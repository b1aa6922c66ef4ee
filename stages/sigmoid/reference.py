"""Sigmoid, reference stage: plain PyTorch, the contract the kernels must meet."""

import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    pos = x >= 0
    # For x >= 0, exp(-x) <= 1; for x < 0, exp(x) < 1: neither branch can overflow.
    y[pos] = 1 / (1 + torch.exp(-x[pos]))
    e = torch.exp(x[~pos])
    y[~pos] = e / (1 + e)
    return y


def backward(grad_y: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return grad_y * y * (1 - y)
