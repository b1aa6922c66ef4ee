import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=1)
