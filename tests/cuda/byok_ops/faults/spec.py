"""A streaming copy (forward only) whose kernel.cu also holds two faulting kernels the tests call."""

import torch

from brrr_kernels import OpSpec


def make_inputs(size, dtype, device, gen):
    return (torch.randn(size, dtype=dtype, generator=gen).to(device),)


SPEC = OpSpec(
    name="faults",
    inputs=("x",),
    outputs=("y",),
    make_inputs=make_inputs,
    sim_sizes=(1, 1001),
    gpu_sizes=(4099,),
    gradcheck_size=3,
    oracle=lambda x: x.clone(),
    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32,)},
    forward_only="a copy for the memory checks' tests",
)
