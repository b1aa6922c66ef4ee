"""rowscale, reference stage: plain PyTorch, the contract the kernels must meet.

x is [rows, cols] and weight [cols]; forward returns y [rows, cols] and the per-row statistic
rstd [rows], which the spec saves for backward. Compute the statistic in float64 whatever x's
dtype (x.double()), and return it as float64: the kernels accumulate in double too.
The op is RMS normalization: y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps).
"""

import torch


def forward(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    rstd = torch.rsqrt(x.double().pow(2).mean(dim=-1) + eps)
    return (x.double() * rstd[:, None] * weight.double()).to(x.dtype), rstd


def backward(grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor,
             eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    # Every stage function takes the params last, backward too, even where they are already in rstd.
    g, xd, r = grad_y.double() * weight.double(), x.double(), rstd[:, None]
    row_sum = (g * xd).sum(dim=-1, keepdim=True)
    grad_x = r * g - xd * r.pow(3) * row_sum / x.shape[-1]
    grad_weight = (grad_y.double() * xd * r).sum(dim=0)
    return grad_x.to(x.dtype), grad_weight.to(weight.dtype)
