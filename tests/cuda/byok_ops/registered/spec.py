"""y = a * b + c from a TORCH_LIBRARY project (fma.cu registers CUDA implementations by name, fma.cpp
the schemas): the spec names the C++ functions, brrr binds them; the backward, which such projects
register in Python, is written here from the project's `mymul`."""

import torch

from brrr_kernels import OpSpec, TorchModule


def make_inputs(size, dtype, device, gen):
    return tuple(torch.randn(size, dtype=dtype, generator=gen).to(device) for _ in range(2))


def backward_from_module(m, grad_y, a, b, c):
    return m.mymul_cuda(grad_y, b), m.mymul_cuda(grad_y, a)


SPEC = OpSpec(
    name="registered",
    inputs=("a", "b"),
    outputs=("y",),
    make_inputs=make_inputs,
    sim_sizes=((3, 7), (2, 300)),
    gpu_sizes=((64, 1000),),
    gradcheck_size=(3, 5),
    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32,)},
    torch_module=TorchModule(forward="myfma_cuda", backward=backward_from_module, sources=("fma.cpp",),
                             functions=("mymul_cuda",)),
    params={"c": 0.25},
    saved=("a", "b"),
)
