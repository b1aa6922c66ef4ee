"""x scaled by its root mean square over the whole tensor, the cuda stage one cooperative launch with a
grid-wide barrier: forward only."""

import torch

from brrr_kernels import OpSpec


def make_inputs(size, dtype, device, gen):
    return (torch.randn(size, dtype=dtype, generator=gen).to(device),)


SPEC = OpSpec(
    name="gridnorm",
    inputs=("x",),
    outputs=("y",),
    params={"eps": 1e-6},
    make_inputs=make_inputs,
    sim_sizes=((1,), (300,), (20000,)),
    gpu_sizes=((1000003,),),
    gradcheck_size=(5,),
    oracle=lambda x, eps: x / torch.sqrt((x * x).mean() + eps),
    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32, torch.float64)},
    forward_only="a test of cooperative launches, not of gradients",
)
