"""rmsnorm_shuffle: row-wise over the last dim of x [rows, cols] with weight [cols], a parameter eps and a
per-row statistic rstd [rows] that forward saves for backward (describe the pattern it teaches)."""

import torch

from brrr_kernels import Inputs, Layout, OpSpec, Place, Size

BLOCK = 16  # numba_kernel.py's threads per row: every simulated barrier costs every simulated thread
CUDA_BLOCK = 256  # kernel.cu's kThreads: the sim sizes hold rows longer than it, so every warp of it works


def rows_then_columns(row_block: int) -> Layout:
    """Who computes what, so reports name a block and thread: y and grad_x [rows, cols]: row r is
    block r and column c thread c % row_block (the threads stride over the row).
    grad_weight [cols]: column c is thread c % row_block of block c // row_block (a thread per column).
    """

    def locate(index: int, shape: tuple[int, ...]) -> Place:
        if len(shape) == 1:
            return (index // row_block, 0, 0), (index % row_block, 0, 0)
        cols = shape[-1]
        return (index // cols, 0, 0), (index % cols % row_block, 0, 0)

    return Layout(locate, f"one block per row ({row_block} threads striding), then one thread per column")


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    rows, cols = size  # sizes are (rows, cols): sim_sizes and gpu_sizes below
    # Each row gets its own scale, so a kernel that mixes up rows' statistics shows.
    scale = 0.5 + 2 * torch.rand(rows, 1, dtype=torch.float64, generator=gen)
    x = scale * torch.randn(rows, cols, dtype=torch.float64, generator=gen)
    weight = 1 + 0.5 * torch.randn(cols, dtype=torch.float64, generator=gen)
    return tuple(t.to(device=device, dtype=dtype) for t in (x, weight))


def zero_rows(dtype: torch.dtype, device: torch.device) -> Inputs:
    # Rows of zeros: only eps keeps the statistic finite.
    cols = 40
    x = torch.zeros(3, cols, dtype=dtype, device=device)
    return x, torch.linspace(0.5, 1.5, cols, dtype=dtype, device=device)


def large_values(dtype: torch.dtype, device: torch.device) -> Inputs:
    # Values near 1e4: a statistic summed in the input's own float32 loses digits here.
    cols = 40
    gen = torch.Generator().manual_seed(1)
    x = 1e4 + 10 * torch.randn(2, cols, dtype=torch.float64, generator=gen)
    return x.to(device=device, dtype=dtype), torch.linspace(0.5, 1.5, cols, dtype=dtype, device=device)


SPEC = OpSpec(
    name="rmsnorm_shuffle",
    doc="row-wise over the last dim, a block per row, a saved per-row statistic (describe what it teaches)",
    inputs=("x", "weight",),
    outputs=("y",),
    stats=("rstd",),  # extra forward results that only backward sees (float64, whatever x's dtype)
    saved=("x", "weight", "rstd"),  # what backward gets after the upstream gradient, in this order
    params={"eps": 1e-5},  # non-tensor arguments: the last arguments of forward and backward, with defaults
    make_inputs=make_inputs,
    # Rows shorter than either block, and longer than kernel.cu's (every warp of it works, a partial last stride).
    sim_sizes=((1, 1), (3, BLOCK - 1), (4, 2 * CUDA_BLOCK + 5)),
    gpu_sizes=((1, 1), (37, 1000), (65, 4099), (3, 70001)),
    gradcheck_size=(2, 3),
    edge_cases={"zero rows": zero_rows, "large values": large_values},
    oracle=lambda x, w, eps: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps),
    layouts={"numba": rows_then_columns(BLOCK), "cuda": rows_then_columns(CUDA_BLOCK)},
)
