"""Bias + GELU (tanh form), reference stage: plain PyTorch, the contract the kernels must meet.

gelu(u) = u/2 * (1 + tanh z), z = K (u + C u^3). Written as u * sigmoid(2z), since
(1 + tanh z)/2 = sigmoid(2z) and 1 - tanh(z)^2 = 4 sigmoid(2z) sigmoid(-2z): each factor is
then computed directly, never as a difference of two numbers near 1.
"""

import math

import torch

K = math.sqrt(2 / math.pi)
C = 0.044715


def _sigmoids(u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    z = K * (u + C * u * u * u)
    return torch.sigmoid(2 * z), torch.sigmoid(-2 * z)


def forward(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    u = x + bias
    s, _ = _sigmoids(u)
    return u * s


def backward(grad_y: torch.Tensor, x: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # u is recomputed, not saved: one add per element is cheaper than keeping a second rows x cols tensor.
    u = x + bias
    s, s_neg = _sigmoids(u)
    grad_x = grad_y * (s + 2 * u * s * s_neg * K * (1 + 3 * C * u * u))
    # bias was broadcast over the rows, so its gradient gathers every row's share.
    return grad_x, grad_x.sum(dim=0)
