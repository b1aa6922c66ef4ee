"""rowscan: a running sum along the last dim of x [rows, cols], one block per row scanning in
shared memory (describe the pattern it teaches)."""

import torch

from brrr_kernels import Inputs, Layout, OpSpec, Place, Size

BLOCK = 32  # numba_kernel.py's threads per row: every simulated barrier costs every simulated thread
CUDA_BLOCK = 256  # kernel.cu's kThreads: the sim sizes hold rows longer than it, so every warp of it works


def block_per_row(threads: int) -> Layout:
    """Who computes what, so reports name a block and thread: element [r, c] is block r, and
    thread c % threads (the block walks the row in chunks of `threads`)."""

    def locate(index: int, shape: tuple[int, ...]) -> Place:
        cols = shape[-1]
        return (index // cols, 0, 0), (index % cols % threads, 0, 0)

    return Layout(locate, f"one block per row, {threads} threads a chunk")


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    rows, cols = size  # sizes are (rows, cols): sim_sizes and gpu_sizes below
    return (torch.randn(rows, cols, dtype=torch.float64, generator=gen).to(device=device, dtype=dtype),)


def large_values(dtype: torch.dtype, device: torch.device) -> Inputs:
    # Values near 1e4: a running sum kept in the input's own float32 loses digits here.
    gen = torch.Generator().manual_seed(1)
    x = 1e4 + 10 * torch.randn(2, 300, dtype=torch.float64, generator=gen)
    return (x.to(device=device, dtype=dtype),)


SPEC = OpSpec(
    name="rowscan",
    doc="a running sum along each row, a block per row scanning chunks in shared memory (describe what it teaches)",
    inputs=("x",),
    outputs=("y",),
    saved=("x",),
    make_inputs=make_inputs,
    # Rows shorter than either block, one chunk and a bit, and longer than kernel.cu's block (every warp works).
    sim_sizes=((1, 1), (3, BLOCK + 3), (2, 2 * CUDA_BLOCK + 5)),
    gpu_sizes=((1, 1), (37, 1000), (65, 4099), (3, 70001)),
    gradcheck_size=(2, 5),
    edge_cases={"large values": large_values},
    oracle=lambda x: torch.cumsum(x, dim=-1),
    layouts={"numba": block_per_row(BLOCK), "cuda": block_per_row(CUDA_BLOCK)},
)
