
import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    return torch.cumsum(x.double(), dim=-1).to(x.dtype)


def backward(grad_y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.flip(torch.cumsum(torch.flip(grad_y.double(), (-1,)), dim=-1), (-1,)).to(x.dtype)
