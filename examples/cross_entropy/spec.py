"""cross_entropy: a loss per row of logits [rows, classes] against int64 targets target [rows], one block per row
reducing a max and a sum (describe the pattern it teaches)."""

import torch

from brrr_kernels import Inputs, Layout, OpSpec, Place, Size

BLOCK = 32  # numba_kernel.py's threads per row: every simulated barrier costs every simulated thread
CUDA_BLOCK = 256  # kernel.cu's kThreads: the sim sizes hold rows longer than it, so every warp of it works


def block_per_row(threads: int) -> Layout:
    """Who computes what, so reports name a block and thread: loss [rows]: row r is block r, thread 0;
    grad_logits [rows, classes]: element [r, c] is block r, thread c % threads."""

    def locate(index: int, shape: tuple[int, ...]) -> Place:
        if len(shape) == 1:
            return (index, 0, 0), (0, 0, 0)
        cols = shape[-1]
        return (index // cols, 0, 0), (index % cols % threads, 0, 0)

    return Layout(locate, f"one block per row ({threads} threads striding), thread 0 writes the loss")


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    rows, cols = size  # sizes are (rows, classes): sim_sizes and gpu_sizes below
    scores = 3 * torch.randn(rows, cols, dtype=torch.float64, generator=gen)
    targets = torch.randint(0, max(cols, 1), (rows,), generator=gen)  # int64 whatever dtype: no gradient
    return scores.to(device=device, dtype=dtype), targets.to(device)


def large_values(dtype: torch.dtype, device: torch.device) -> Inputs:
    # Scores near +-1e4: exp without the max subtracted overflows; targets at both ends of the row.
    gen = torch.Generator().manual_seed(1)
    scores = 1e4 * torch.sign(torch.randn(4, 300, dtype=torch.float64, generator=gen))
    scores += torch.randn(4, 300, dtype=torch.float64, generator=gen)
    return scores.to(device=device, dtype=dtype), torch.tensor([0, 299, 7, 150], device=device)


SPEC = OpSpec(
    name="cross_entropy",
    doc="a loss per row with integer targets, a block per row reducing a max and a sum (describe what it teaches)",
    inputs=("logits", "target",),
    outputs=("loss",),
    saved=("logits", "target",),
    make_inputs=make_inputs,
    # Rows shorter than either block, one block and a bit, and longer than kernel.cu's block (every warp works).
    sim_sizes=((1, 1), (3, BLOCK + 3), (2, 2 * CUDA_BLOCK + 5)),
    gpu_sizes=((1, 1), (37, 1000), (65, 4099), (3, 70001)),
    gradcheck_size=(2, 5),
    edge_cases={"large values": large_values},
    oracle=lambda x, t: torch.nn.functional.cross_entropy(x, t, reduction='none'),
    layouts={"numba": block_per_row(BLOCK), "cuda": block_per_row(CUDA_BLOCK)},
)
