"""Softmax over the last dim: one block per row, block reductions for the row max and the row sum."""

import torch

from pipeline.spec import Inputs, Layout, OpSpec, Place, Size

BLOCK = 16  # numba_kernel.py's threads per row: small, since every simulated barrier costs every thread
CUDA_BLOCK = 256  # kernel.cu's kThreads


def one_block_per_row(block: int) -> Layout:
    """Row r is block r; its `block` threads stride over the columns, so column c is thread c % block."""

    def locate(index: int, shape: tuple[int, ...]) -> Place:
        cols = shape[-1]
        return (index // cols, 0, 0), (index % cols % block, 0, 0)

    return Layout(locate, f"one block per row, {block} threads striding over it")


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    # Spread of 3: some rows come out nearly flat, others nearly one-hot.
    return (3 * torch.randn(size, dtype=torch.float64, generator=gen).to(device=device, dtype=dtype),)


def large_values(dtype: torch.dtype, device: torch.device) -> Inputs:
    # exp(1e4) overflows every float type, so only the max subtraction keeps these finite; the
    # all -1e4 row would be 0/0 without it. 1e4 is exact in float16, which tops out at 65504.
    rows = [
        [1e4, -1e4, 1e4, -1e4, 0.0, 9999.0],
        [1e4] * 6,
        [-1e4] * 6,
    ]
    return (torch.tensor(rows, dtype=dtype, device=device),)


def minus_infinity(dtype: torch.dtype, device: torch.device) -> Inputs:
    # -inf is a valid logit (a masked position): its probability is exactly 0, and so is its gradient.
    inf = float("inf")
    rows = [
        [-inf, 0.5, -1.0, 2.0, 0.0, 1.0],
        [1e4, -inf, -inf, 9998.0, -1e4, 9999.0],
    ]
    return (torch.tensor(rows, dtype=dtype, device=device),)


SPEC = OpSpec(
    name="softmax",
    doc="row-wise; one block per row, shared-memory block reductions (max, then sum)",
    inputs=("x",),
    outputs=("y",),
    saved=("y",),
    make_inputs=make_inputs,
    # cols 1 (most threads idle), 37 and 70: rows longer than BLOCK, with a partial last stride.
    sim_sizes=((1, 1), (3, 37), (5, 70)),
    gpu_sizes=((1, 1), (7, 1000), (33, 4099), (1025, 2051), (3, 70001)),
    gradcheck_size=(2, 3),
    edge_cases={"large values": large_values, "minus infinity": minus_infinity},
    oracle=lambda x: torch.softmax(x, dim=-1),
    dtypes={
        "reference": (torch.float32, torch.float64),
        "numba": (torch.float32, torch.float64),
        "cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    },
    layouts={"numba": one_block_per_row(BLOCK), "cuda": one_block_per_row(CUDA_BLOCK)},
    bench_sizes=((4096, 8192),),
)
