"""Softmax over the last dim, reference stage: plain PyTorch, the contract the kernels must meet."""

import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    # After subtracting the row max every exponent is <= 0: exp cannot overflow, and the largest
    # term is exactly 1, so the sum is at least 1 and the division is safe.
    m = x.amax(dim=-1, keepdim=True)
    e = torch.exp(x - m)
    return e / e.sum(dim=-1, keepdim=True)


def backward(grad_y: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    # The Jacobian is diag(y) - y y^T, so its product with grad_y needs only y and one dot per row.
    return y * (grad_y - (grad_y * y).sum(dim=-1, keepdim=True))
