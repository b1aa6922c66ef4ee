"""y = 2 x + 1 from a module of three sources: kernel.cu, shift.cu and bind.cpp (the wrapper and module)."""

import torch

from brrr_kernels import OpSpec, TorchModule


def make_inputs(size, dtype, device, gen):
    return (torch.randn(size, dtype=dtype, generator=gen).to(device),)


SPEC = OpSpec(
    name="multi",
    inputs=("x",),
    outputs=("y",),
    make_inputs=make_inputs,
    sim_sizes=(1, 300),
    gpu_sizes=(1000,),
    gradcheck_size=5,
    oracle=lambda x: 2 * x + 1,
    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32,)},
    forward_only="a test of the module's build and link",
    torch_module=TorchModule(forward="forward", sources=("shift.cu", "bind.cpp")),
)
