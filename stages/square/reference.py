"""Square, reference stage: plain PyTorch, the contract the kernels must meet."""

import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    return x * x


def backward(grad_y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return 2 * x * grad_y
