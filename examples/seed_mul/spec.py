"""The elementwise multiply of seed 004 (custom-kernel-setup-py.md), in the seed's own single-.cu
layout: elementwise_mult.cu is the seed's file as written. Only this spec and reference.py are brrr's."""

import torch

from brrr_kernels import OpSpec, TorchModule


def make_inputs(size, dtype, device, gen):
    return (4 * torch.randn(size, dtype=dtype, generator=gen)).to(device), \
        (4 * torch.randn(size, dtype=dtype, generator=gen)).to(device)


def forward_from_module(m, a, b):
    # The seed's function writes into an output it is given (elementwise_mult(a, b, result)).
    result = torch.empty_like(a)
    m.elementwise_mult(a, b, result)
    return result


def backward_from_module(m, grad_y, a, b):
    # The seed computes the gradients in Python (its autograd.Function), with the same kernel.
    grad_a, grad_b = torch.empty_like(a), torch.empty_like(b)
    m.elementwise_mult(grad_y, b, grad_a)
    m.elementwise_mult(grad_y, a, grad_b)
    return grad_a, grad_b


SPEC = OpSpec(
    name="seed_mul",
    inputs=("a", "b"),
    outputs=("y",),
    saved=("a", "b"),
    make_inputs=make_inputs,
    sim_sizes=(1, 255, 257),
    gpu_sizes=(4099, 2**20 + 3),
    gradcheck_size=3,
    oracle=torch.mul,
    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32,)},  # the seed's kernel is float only
    torch_module=TorchModule(forward=forward_from_module, backward=backward_from_module),
)
