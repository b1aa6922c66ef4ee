"""Causal attention, reference stage: plain PyTorch, the contract the kernels must meet.

q, k, v are [batch x heads, T, D]; row i of the output attends to keys 0..i with scale 1 / sqrt(D).
Forward also returns each row's logsumexp (a stat), from which backward recomputes the
probabilities instead of saving the T x T matrix.
"""

import math

import torch


def _scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    t = q.shape[-2]
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    causal = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    return s.masked_fill(~causal, float("-inf"))


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    s = _scores(q, k)
    lse = torch.logsumexp(s, dim=-1)
    return torch.exp(s - lse.unsqueeze(-1)) @ v, lse


def backward(grad_o: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
             lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    p = torch.exp(_scores(q, k) - lse.unsqueeze(-1))  # the probabilities, recomputed
    grad_v = p.transpose(-1, -2) @ grad_o
    # softmax's backward: dS = P * (dP - rowsum(dP * P)), and rowsum(dP * P) = rowsum(grad_o * o).
    delta = (grad_o * o).sum(dim=-1, keepdim=True)
    ds = p * (grad_o @ v.transpose(-1, -2) - delta)
    scale = 1.0 / math.sqrt(q.shape[-1])
    return ds @ k * scale, ds.transpose(-1, -2) @ q * scale, grad_v
