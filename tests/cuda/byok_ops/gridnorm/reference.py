import torch


def forward(x, eps):
    return x / torch.sqrt((x * x).mean() + eps)
