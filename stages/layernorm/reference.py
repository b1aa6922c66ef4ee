"""Layer norm over the last dim, reference stage: plain PyTorch, the contract the kernels must meet.

x is [rows, cols]; weight and bias are [cols]. The statistics are float64 whatever x's dtype: a
float32 mean of values near 1e4 is off by up to half an ulp (4.9e-4), and every normalised value
inherits that error divided by the row's std. The kernels accumulate in float64 too (kernel.cu in
float for bfloat16, whose 8-bit inputs leave float's 24 bits plenty of room).
"""

import torch


def forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> tuple[torch.Tensor, ...]:
    xd = x.double()
    mean = xd.mean(dim=-1)
    centred = xd - mean[:, None]
    # Two passes: the variance of the centred row, never E[x^2] - E[x]^2, which cancels catastrophically
    # when the mean is large against the spread.
    rstd = torch.rsqrt((centred * centred).mean(dim=-1) + eps)
    y = centred * rstd[:, None] * weight.double() + bias.double()
    return y.to(x.dtype), mean, rstd


def backward(grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
             eps: float) -> tuple[torch.Tensor, ...]:
    # eps is already inside rstd; backward takes it because every stage function takes the params.
    g = grad_y.double()
    xhat = (x.double() - mean[:, None]) * rstd[:, None]
    gxhat = g * weight.double()
    # y depends on x also through the row's mean and rstd: the two row means below are those paths.
    grad_x = rstd[:, None] * (gxhat - gxhat.mean(dim=-1, keepdim=True) - xhat * (gxhat * xhat).mean(dim=-1, keepdim=True))
    grad_weight = (g * xhat).sum(dim=0)
    grad_bias = g.sum(dim=0)
    return grad_x.to(x.dtype), grad_weight.to(weight.dtype), grad_bias.to(weight.dtype)
