"""Softmax over the last dim: a row max, then a row sum of exponentials, reduced over each row."""

from dataclasses import dataclass

import torch

from brrr_kernels import Inputs, Layout, OpSpec, Place, Size, Terms, Widen

CUDA_V1_BLOCK = 256  # kernel.cu's kV1Threads
CUDA_MAX_ROW_THREADS = 1024  # kernel.cu's kMaxRowThreads
CUDA_MIN_BLOCK_THREADS = 128  # kernel.cu's kMinBlockThreads
# v1 gives each of its 256 threads every 256th column: from 4096 x 256 columns on, each thread's own
# running sum adds 4096 terms or more, where a 16-bit one has long stopped growing.
LONG_ROW = 4096 * CUDA_V1_BLOCK


def cuda_place(index: int, shape: tuple[int, ...], itemsize: int) -> Place:
    """kernel.cu's forward launcher, replayed: which block and thread hold element `index`.

    Rows up to 1024 x kSlots columns are held in registers by tpr threads (a multiple of 32, the
    fewest whose kSlots elements cover the row; 128 // tpr rows a block when tpr < 128); thread
    `lane` of a row owns 16-byte packs lane, lane + tpr, ... when the row is a whole number of packs
    (tensors from torch start 16-byte aligned), single elements that way otherwise. Longer rows
    take v1: one block of 256 threads per row, column c on thread c % 256.
    """
    cols = shape[-1]
    row, col = divmod(index, cols)
    slots = 8 if itemsize == 8 else 32  # kernel.cu's kSlots
    if cols > CUDA_MAX_ROW_THREADS * slots:
        return (row, 0, 0), (col % CUDA_V1_BLOCK, 0, 0)
    tpr = -(-cols // slots)
    tpr = -(-tpr // 32) * 32
    rows_per_block = CUDA_MIN_BLOCK_THREADS // tpr if tpr < CUDA_MIN_BLOCK_THREADS else 1
    pack = 16 // itemsize
    width = pack if cols % pack == 0 else 1
    return (row // rows_per_block, 0, 0), ((row % rows_per_block) * tpr + col // width % tpr, 0, 0)


@dataclass(frozen=True)
class CudaRows(Layout):
    """The forward's mapping, which depends on the dtype's size. The backward shares it, except for
    rows longer than 512 x kSlots (16384 floats, 4096 doubles), which it gives to v1."""

    def place(self, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        return cuda_place(index, shape, itemsize)


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    # Spread of 3: some rows come out nearly flat, others nearly one-hot. Rows of LONG_ROW columns and
    # more (accumulator_sizes) are drawn flat, spread 0.5: every term then counts in the row's sum, so
    # a running sum that stops growing shows (with spread 3 a few terms near the max make most of it).
    spread = 0.5 if size[-1] >= LONG_ROW else 3
    return (spread * torch.randn(size, dtype=torch.float64, generator=gen).to(device=device, dtype=dtype),)


def large_values(dtype: torch.dtype, device: torch.device) -> Inputs:
    # exp(1e4) overflows every float type, so only the max subtraction keeps these finite; the
    # all -1e4 row would be 0/0 without it. 1e4 is exact in float16, which tops out at 65504.
    rows = [
        [1e4, -1e4, 1e4, -1e4, 0.0, 9999.0],
        [1e4] * 6,
        [-1e4] * 6,
    ]
    return (torch.tensor(rows, dtype=dtype, device=device),)


def max_in_the_last_lane(dtype: torch.dtype, device: torch.device) -> Inputs:
    # The row's max in column 15 or 31 (the last lane of a 16- or 32-thread fold), all else 2e4 below:
    # a max fold that skips the last lane's partial subtracts -1e4 and exp overflows. Found by
    # `brrr mutate softmax` (range(1, BLOCK) -> range(1, BLOCK - 1) survived the other cases).
    rows = [[-1e4] * 64, [-1e4] * 64]
    rows[0][15] = rows[1][31] = 1e4
    return (torch.tensor(rows, dtype=dtype, device=device),)


def max_in_the_first_or_last_warp(dtype: torch.dtype, device: torch.device) -> Inputs:
    # Rows of 8200 span several warps on every path: float32 holds a row in 288 threads (9 warps,
    # lane = pack % 288), float64 takes v1 (8 warps, thread = column % 256). The max sits in the
    # first warp (column 0), then in float32's last (column 1024: pack 256), then in v1's last
    # (column 8191: thread 255), all else 2e4 below: a cross-warp max that starts from the wrong
    # warp's partial, or stops one warp short, subtracts -1e4 and exp overflows. Found by `brrr
    # mutate softmax` (in row_max and block_reduce_max: part[first] -> part[first + 1], the fold one
    # warp short): softmax is the same for any constant subtracted, so only overflow shows a wrong max.
    rows = [[-1e4] * 8200 for _ in range(3)]
    rows[0][0] = rows[1][1024] = rows[2][8191] = 1e4
    return (torch.tensor(rows, dtype=dtype, device=device),)


def minus_infinity(dtype: torch.dtype, device: torch.device) -> Inputs:
    # -inf is a valid logit (a masked position): its probability is exactly 0, and so is its gradient.
    inf = float("inf")
    rows = [
        [-inf, 0.5, -1.0, 2.0, 0.0, 1.0],
        [1e4, -inf, -inf, 9998.0, -1e4, 9999.0],
    ]
    return (torch.tensor(rows, dtype=dtype, device=device),)


def _exponents(t: Terms) -> tuple[torch.Tensor, torch.Tensor]:
    """|x - max| per element, and the row's y-weighted mean of it (0 where x is -inf)."""
    x = t["x"]
    gap = (x - x.amax(dim=-1, keepdim=True)).abs().nan_to_num(nan=0.0, posinf=0.0)
    return gap, (t["y"] * gap).sum(dim=-1, keepdim=True)


def exp_terms(t: Terms) -> torch.Tensor:
    # exp(x - max) inherits the rounding of x - max (eps/2 of |x - max| when x and max are not
    # within a factor 2) as a relative error of |x - max| * eps/2, and the row sum a weighted mean
    # of those: a float32 exp(-18.6) is 9 ulps off though every step rounds correctly.
    gap, mean_gap = _exponents(t)
    return t["y"] * (1 + gap + mean_gap)


def backward_terms(t: Terms) -> torch.Tensor:
    # grad_x = y * (grad_y - dot), dot = sum(grad_y * y): grad_y - dot has terms of both signs and
    # cancels where grad_y is near the row's dot; its error is measured against |grad_y| + sum|grad_y y|,
    # and the stage's y carries its forward error (exp_terms) into both.
    gap, mean_gap = _exponents(t)
    g, y = t["grad_y"], t["y"]
    return y * (g.abs() + (g * y).abs().sum(dim=-1, keepdim=True)) * (1 + gap + mean_gap)


SPEC = OpSpec(
    name="softmax",
    doc="row-wise; each row read once into registers (a warp or a block a row), warp-shuffle reductions",
    inputs=("x",),
    outputs=("y",),
    saved=("y",),
    make_inputs=make_inputs,
    # As kernel.cu's launcher maps them (numba_kernel.py mirrors it): cols 1 (most lanes idle), 37
    # and 70 a warp per row, four rows a block (the second block of (5, 70) mostly past the last
    # row); 1030 two warps a row (float64: five), reduced through shared memory and a barrier;
    # 8200 float64 columns are past 1024 threads x 8 slots, so doubles take v1 (one block of 256
    # threads a row, block_reduce_*), which no other size the simulator affords reaches: `brrr
    # mutate softmax` found every bug planted in block_reduce_max alive (float32: 288 threads a row).
    sim_sizes=((1, 1), (3, 37), (5, 70), (2, 1030), (1, 8200)),
    # Every path of kernel.cu's launchers (see cuda_place): 1, 4099 and 2051 columns take the
    # register path one element at a time (widths that are not whole packs); 1000 a warp per row,
    # four rows a block (doubles: 128 threads a row); 2048 two rows a block, with barriers; 8192,
    # the bench shape, 256 threads a row (doubles 1024 forward, v1 backward); 32768 1024 threads a
    # row forward, v1 backward (doubles v1 both); 70001 v1 for every dtype. The last two sizes
    # also run non-contiguous.
    gpu_sizes=((1, 1), (7, 1000), (33, 4099), (9, 2048), (65, 8192), (5, 32768), (1025, 2051), (3, 70001)),
    gradcheck_size=(2, 3),
    edge_cases={"large values": large_values, "minus infinity": minus_infinity, "max in the last lane": max_in_the_last_lane,
                "max in the first or last warp": max_in_the_first_or_last_warp},
    oracle=lambda x: torch.softmax(x, dim=-1),
    tolerances=(
        Widen("y", "exp(x - max) turns the rounding of x - max into a relative error of |x - max| ulps",
              scale=exp_terms),
        Widen("grad_x", "grad_y - sum(grad_y * y) cancels: measured against the size of its terms",
              scale=backward_terms),
    ),
    dtypes={
        "reference": (torch.float32, torch.float64),
        "numba": (torch.float32, torch.float64),
        "cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    },
    # The numba stage's writers are observed in the simulator; the cuda stage's are declared.
    layouts={
        "cuda": CudaRows(lambda index, shape: cuda_place(index, shape, 4),
                         "rows in registers, tpr threads a row (see cuda_place); v1 beyond 1024 x kSlots columns"),
    },
    bench_sizes=((4096, 8192),),
    # One row of LONG_ROW + 7 columns, in float16 and bfloat16: an exp sum accumulated in the 16-bit
    # type is 60x its bound there (its random sizes' rows, at most 70001 columns, leave it at 0.27).
    accumulator_sizes=((1, LONG_ROW + 7),),
    # What `brrr mutate softmax` leaves alive, and why that is no gap in the cases.
    mutants={
        "numba_kernel.py:52:13: offset = 16 -> offset = 17":
            "warp_sum's xor partners become 17, 8, 4, 2, 1: they still reach all 32 lanes, so each lane sums the "
            "same 32 values in another order. The sums differ in rounding only, inside the bound; a kernel may "
            "sum in any order (warp_max with the same change is bit for bit the same: max is exact).",
    },
)
