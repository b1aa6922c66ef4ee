"""Mul: two inputs of one shape, both saved for backward, and a gradient for each."""

import torch

from brrr_kernels import Inputs, OpSpec, Size, one_per_thread

BLOCK = 128  # numba_kernel.py's threads per block; the simulator sizes straddle it


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    # Independent draws, so a gradient scaled by the wrong input cannot agree by accident.
    a = 4 * torch.randn(size, dtype=dtype, generator=gen)
    b = 4 * torch.randn(size, dtype=dtype, generator=gen)
    return a.to(device), b.to(device)


def special_products(dtype: torch.dtype, device: torch.device) -> Inputs:
    info = torch.finfo(dtype)
    # The extremes come from the dtype itself: a product that overflows in float32 would be
    # finite in the float64 expectation and fail for the wrong reason.
    big = 0.9 * info.max**0.5  # big * big stays finite
    tiny = info.tiny  # smallest normal: tiny * tiny underflows, tiny * 0.5 is subnormal
    inf, nan = float("inf"), float("nan")
    pairs = [
        (inf, 0.0), (0.0, -inf), (inf, -inf), (nan, 2.0),  # NaN in the oracle too: agreement
        (-0.0, 3.0), (0.0, -3.0), (-0.0, -0.0),  # signed zeros
        (big, big), (-big, big), (big, 1.0 / big),
        (tiny, tiny), (tiny, 0.5), (-tiny, 3.0),
    ]
    a, b = zip(*pairs)
    return torch.tensor(a, dtype=dtype, device=device), torch.tensor(b, dtype=dtype, device=device)


def huge(device: torch.device, gen: torch.Generator) -> Inputs:
    n = 2**31 + 2**20 + 7  # past the int32 range, with a ragged end
    return (4 * torch.randn(n, device=device, generator=gen), 4 * torch.randn(n, device=device, generator=gen))


SPEC = OpSpec(
    name="mul",
    doc="elementwise with two inputs; backward returns one gradient per input from one fused kernel",
    inputs=("a", "b"),
    outputs=("y",),
    saved=("a", "b"),
    make_inputs=make_inputs,
    sim_sizes=(1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17),
    gpu_sizes=(1, 255, 257, 4099, 2**20 + 3),
    gradcheck_size=3,
    edge_cases={"special products": special_products},
    oracle=torch.mul,
    dtypes={
        "reference": (torch.float32, torch.float64),
        "numba": (torch.float32, torch.float64),
        "cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    },
    layouts={"numba": one_per_thread(BLOCK), "cuda": one_per_thread(256, pack_bytes=16)},
    huge=huge,
    bench_sizes=(2**28,),  # 1 GiB a float32 tensor
)
