"""Symmetric int8 quantization, one scale per column: forward only."""

import torch

from brrr_kernels import OpSpec, TorchModule


def make_inputs(size, dtype, device, gen):
    rows, cols = size
    x = 50 * torch.randn(rows, cols, dtype=dtype, generator=gen)
    scale = 0.5 + torch.rand(cols, dtype=dtype, generator=gen)
    return x.to(device), scale.to(device)


SPEC = OpSpec(
    name="quantize",
    inputs=("x", "scale"),
    outputs=("q",),
    make_inputs=make_inputs,
    sim_sizes=((3, 7), (5, 130)),
    gpu_sizes=((64, 1000),),
    gradcheck_size=(3, 5),
    oracle=lambda x, scale: torch.clamp(torch.round(x / scale), -127, 127),
    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32,)},
    forward_only="rounding has a zero gradient almost everywhere; an inference kernel",
    torch_module=TorchModule(forward="quantize_forward"),
)
