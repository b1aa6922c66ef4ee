"""Sigmoid: the numerically stable form, one input, one output, y saved for backward."""

import torch

from brrr_kernels import Inputs, OpSpec, Size, Terms, Widen, one_per_thread, stored_magnitude

BLOCK = 128  # numba_kernel.py's threads per block; the simulator sizes straddle it


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    # Spread of 8 so both branches and the flat tails of the curve are exercised.
    return (8 * torch.randn(size, dtype=dtype, generator=gen).to(device),)


def extremes(dtype: torch.dtype, device: torch.device) -> Inputs:
    values = [1e5, -1e5, 0.0, -0.0, 1e-30, -1e-30, float("inf"), float("-inf"), 88.0, -88.0, 710.0, -710.0]
    return (torch.tensor(values, dtype=dtype, device=device),)


def one_minus_y_terms(t: Terms) -> torch.Tensor:
    # grad_x = grad_y * y * (1 - y) from the stage's own y, rounded to its dtype: where y is near 1,
    # 1 - y keeps only the rounding of y (eps * y), so grad_x is off by up to |grad_y| * y * eps
    # however small it is (at x = 20 in float32, y rounds to 1 and grad_x to 0). And y, saved in the
    # stage's dtype, is rounded to a step of tiny * eps where it is subnormal (float16: x < -9.7), many
    # ulps of y: grad_x inherits |grad_y| tiny eps/2 (stored_magnitude says why).
    return t["grad_y"].abs() * stored_magnitude(t["y"], t)


def huge(device: torch.device, gen: torch.Generator) -> Inputs:
    # 2^31 + 2^20 + 7 elements: past the int32 range, with a ragged end.
    return (8 * torch.randn(2**31 + 2**20 + 7, device=device, generator=gen),)


SPEC = OpSpec(
    name="sigmoid",
    doc="elementwise; the stable two-branch form so exp never overflows",
    inputs=("x",),
    outputs=("y",),
    saved=("y",),
    make_inputs=make_inputs,
    sim_sizes=(1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17),
    gpu_sizes=(1, 255, 257, 4099, 2**20 + 3),
    gradcheck_size=9,
    edge_cases={"extremes": extremes},
    oracle=torch.sigmoid,
    tolerances=(Widen("grad_x", "1 - y cancels where y is near 1, and a subnormal y is saved to a step of tiny * eps: "
                      "measured against |grad_y| * max(y, tiny)",
                      scale=one_minus_y_terms),),
    layouts={"numba": one_per_thread(BLOCK), "cuda": one_per_thread(256, pack_bytes=16)},
    huge=huge,
    dtypes={
        "reference": (torch.float32, torch.float64),
        "numba": (torch.float32, torch.float64),
        "cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    },
    bench_sizes=(2**28,),  # 1 GiB a float32 tensor: far past L2
)
