import torch


def forward(x, scale):
    return torch.clamp(torch.round(x / scale), -127, 127)
