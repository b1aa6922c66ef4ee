"""Row sums in brrr's layout, the block reduction in the op folder's common.h: forward only."""

import torch

from brrr_kernels import OpSpec


def make_inputs(size, dtype, device, gen):
    return (torch.randn(size, dtype=dtype, generator=gen).to(device),)


SPEC = OpSpec(
    name="rowsum",
    inputs=("x",),
    outputs=("out",),
    make_inputs=make_inputs,
    sim_sizes=((3, 7), (2, 300)),
    gpu_sizes=((64, 1000),),
    gradcheck_size=(3, 5),
    oracle=lambda x: x.sum(dim=1),
    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32, torch.float64)},
    forward_only="a test of the build, not of gradients",
)
