"""Square: a 2-D matrix on a 2-D grid of 2-D blocks, x saved for backward."""

from dataclasses import dataclass

import torch

from brrr_kernels import Inputs, Layout, OpSpec, Place, Size

NUMBA_BLOCK = (8, 8)  # numba_kernel.py's (x, y) block: small, so the simulator stays cheap
CUDA_BLOCK = (32, 8)  # kernel.cu's: 32 packs along a row, a warp reads one contiguous run
PACK_BYTES = 16  # kernel.cu's pack: W = 16 / itemsize consecutive columns of a row a thread
MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y; more rows than this covers are reached by looping


def grid_2d(block: tuple[int, int]) -> Layout:
    """x over columns, y over rows; rows past the grid's reach loop back to the first blocks."""
    bx, by = block

    def locate(index: int, shape: tuple[int, ...]) -> Place:
        rows, cols = shape
        row, col = divmod(index, cols)
        reach = min(-(-rows // by), MAX_GRID_Y) * by  # rows one pass of the grid covers
        row %= reach
        return (col // bx, row // by, 0), (col % bx, row % by, 0)

    return Layout(locate, f"2-D grid, x over columns and y over rows, {bx}x{by} threads a block")


def locate_pack(index: int, shape: tuple[int, ...], block: tuple[int, int], width: int) -> Place:
    """kernel.cu's thread for an element: the pack of `width` columns of its row it falls in.

    A row's packs start at its first 16-byte aligned column, head = (-row * cols) mod width;
    the head columns belong to pack 0, and a partial last pack to the thread that owns it.
    """
    bx, by = block
    rows, cols = shape
    row, col = divmod(index, cols)
    head = -(row * cols) % width
    pack = 0 if col < head else (col - head) // width
    reach = min(-(-rows // by), MAX_GRID_Y) * by  # rows one pass of the grid covers
    row %= reach
    return (pack // bx, row // by, 0), (pack % bx, row % by, 0)


@dataclass(frozen=True)
class RowPacks(Layout):
    """kernel.cu's layout. Which thread wrote an element depends on the element's size (W = 16 /
    itemsize), so `place` is the one to ask; `locate` is the scalar path's one thread per element
    (W = 1), taken for tensors whose start is not 16-byte aligned."""

    block: tuple[int, int] = CUDA_BLOCK

    def place(self, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        return locate_pack(index, shape, self.block, max(1, self.pack_bytes // itemsize))


def cuda_layout(block: tuple[int, int]) -> Layout:
    bx, by = block
    return RowPacks(lambda index, shape: locate_pack(index, shape, block, 1),
                    f"2-D grid, x over {PACK_BYTES}-byte packs of a row (from its first aligned column) and y over "
                    f"rows, {bx}x{by} threads a block", PACK_BYTES, block)


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    return (3 * torch.randn(size, dtype=dtype, generator=gen).to(device),)


def extremes(dtype: torch.dtype, device: torch.device) -> Inputs:
    info = torch.finfo(dtype)
    # From the dtype itself: a square that overflows in float32 is finite in the float64
    # expectation, and would fail for the wrong reason.
    big = 0.99 * info.max**0.5  # big * big stays finite
    values = [big, -big, info.tiny, -info.tiny / 4, 0.0, -0.0, 1.0, -1.0,
              float("inf"), float("-inf"), float("nan"), 3.0]
    return (torch.tensor(values, dtype=dtype, device=device).reshape(3, 4),)


SPEC = OpSpec(
    name="square",
    doc="2-D indexing: a 2-D grid of 2-D blocks over a matrix, bounds checked in both dimensions",
    inputs=("x",),
    outputs=("y",),
    saved=("x",),
    make_inputs=make_inputs,
    # Partial blocks in both dimensions (7x9, 11x19), an exact fit along x (17x8), and 1x1.
    sim_sizes=((1, 1), (7, 9), (17, 8), (11, 19)),
    # Odd widths give kernel.cu's rows heads and tails of every length; (1029, 1032) has every
    # row 16-byte aligned (float32 and float64) and a partial block of packs; (2**20 + 3, 1)
    # needs more than 65535 blocks of rows, so the y loop runs twice.
    gpu_sizes=((1, 1), (255, 257), (1, 2**20 + 3), (1031, 1029), (1029, 1032), (2**20 + 3, 1)),
    gradcheck_size=(2, 3),
    edge_cases={"extremes": extremes},
    oracle=torch.square,
    dtypes={
        "reference": (torch.float32, torch.float64),
        "numba": (torch.float32, torch.float64),
        "cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    },
    layouts={"numba": grid_2d(NUMBA_BLOCK), "cuda": cuda_layout(CUDA_BLOCK)},
    bench_sizes=((8192, 8192),),
)
