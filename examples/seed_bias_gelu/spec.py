"""Fused bias + GELU of seed 002 (fused-bias-gelu-extension.md), in the seed's own layout:
fused_bias_gelu_cuda.cu (kernels and torch wrappers, float and float4 kernels) and
fused_bias_gelu.cpp (its PYBIND11_MODULE) are the seed's files as written. Only this spec and
reference.py are brrr's."""

import torch

from brrr_kernels import OpSpec, TorchModule


def make_inputs(size, dtype, device, gen):
    rows, cols = size
    x = 2 * torch.randn(rows, cols, dtype=dtype, generator=gen)
    bias = torch.randn(cols, dtype=dtype, generator=gen)
    return x.to(device), bias.to(device)


def backward_from_module(m, grad_y, x, bias):
    # As the seed's autograd.Function does: the kernel's grad_input, then grad_bias summed in Python.
    grad_x = m.backward(grad_y.contiguous(), x, bias)
    return grad_x, grad_x.sum(dim=tuple(range(grad_x.dim() - 1)))


SPEC = OpSpec(
    name="seed_bias_gelu",
    inputs=("x", "bias"),
    outputs=("y",),
    saved=("x", "bias"),
    make_inputs=make_inputs,
    sim_sizes=((1, 1), (3, 7), (5, 130)),
    gpu_sizes=((512, 4096), (1000, 1003)),
    gradcheck_size=(3, 5),
    oracle=lambda x, bias: torch.nn.functional.gelu(x + bias, approximate="tanh"),
    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32,)},  # the seed's kernels are float only
    torch_module=TorchModule(forward="forward", backward=backward_from_module, sources=("fused_bias_gelu.cpp",)),
)
