"""Bias + GELU (tanh form), fused: a bias broadcast over rows forward, its gradient summed over rows backward."""

import math
from dataclasses import dataclass

import torch

from brrr_kernels import Inputs, Layout, OpSpec, Place, Size, Terms, Widen, cdiv

NUMBA_BLOCK = 32  # numba_kernel.py: one warp a block keeps the simulator cheap at these small sizes

# kernel.cu's tiling, of its backward and of the forward where rows are not whole 16-byte packs (the
# forward of whole packs is flat: FLAT_THREADS, one pack a thread): each thread owns PACKS vectors
# of VEC consecutive columns, BLOCK_X * VEC apart (so each vector access of a warp is one
# contiguous run), of ROWS_PER_THREAD (or more) consecutive rows. A vector is 16 bytes: VEC is 4
# for float (and double, in two accesses) and 8 for the 16-bit types (vec_of).
VEC, PACKS, BLOCK_X, BLOCK_Y, ROWS_PER_THREAD, MAX_GRID_Y, FINALIZE_COLUMNS = 4, 2, 32, 8, 4, 65535, 32
FLAT_THREADS = 256  # kFlatThreads: v7's forward, one 16-byte pack a thread
MAX_BACKWARD_ROWS, MIN_BACKWARD_BLOCK_ROWS = 16, 64  # kMaxBackwardRows, kMinBackwardBlockRows (v8)
PACK = VEC * PACKS


def vec_of(itemsize: int) -> int:
    return 8 if itemsize == 2 else VEC

GPU_SIZES = (
    (1, 1),
    (3, 5),
    (67, 1028),  # whole float vectors (1028 % 4 == 0): vector path plus a 4-column scalar tail; 16-bit: scalar
    (129, 8200),  # vector path, an 8-column scalar tail; 129 rows leave a partial block of rows
    (257, 4099),  # odd width: the scalar path; over 2**20 elements
    (4100, 40),  # the backward's threads take 8 rows (v8), a partial last group; scalar path (40 < 2 vectors)
    (8200, 520),  # the backward's threads take 16 rows (v8), vector path and a scalar tail
)
MAX_GPU_ROWS = max(rows for rows, _ in GPU_SIZES)


def rows_per_thread(rows: int, at_least: int = ROWS_PER_THREAD) -> int:
    """kernel.cu's rows per thread: `at_least`, or more where gridDim.y would pass its limit."""
    return max(at_least, -(-rows // (MAX_GRID_Y * BLOCK_Y)))


def backward_rows_per_thread(rows: int) -> int:
    """kernel.cu's backward (v8): ROWS_PER_THREAD doubled up to MAX_BACKWARD_ROWS while the grid keeps
    MIN_BACKWARD_BLOCK_ROWS block rows, then rows_per_thread's limit."""
    per = ROWS_PER_THREAD
    while per < MAX_BACKWARD_ROWS and cdiv(cdiv(rows, 2 * per), BLOCK_Y) >= MIN_BACKWARD_BLOCK_ROWS:
        per *= 2
    return rows_per_thread(rows, per)


def numba_layout() -> Layout:
    def locate(index: int, shape: tuple[int, ...]) -> Place:
        # The flat index is the element for y and grad_x and the column for grad_bias: the
        # elementwise kernels and the column-sum kernel both give each its own thread.
        return (index // NUMBA_BLOCK, 0, 0), (index % NUMBA_BLOCK, 0, 0)

    return Layout(locate, f"y, grad_x: a thread per element (flat); grad_bias: a thread per column; "
                          f"{NUMBA_BLOCK} threads a block")


@dataclass(frozen=True)
class Tiles(Layout):
    """kernel.cu's layout: which thread wrote an element depends on the element's size (a vector is
    16 bytes), so `place` is the one to ask; `locate` is float's."""

    def place(self, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        return locate_tile(index, shape, vec_of(itemsize))

    def place_in(self, output: str, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        # v7's forward is flat where rows are whole 16-byte packs (and the tensors aligned, which a
        # shape cannot say: a misaligned y took the tiles): one pack a thread, FLAT_THREADS a block.
        per_pack = 16 // itemsize
        if output == "y" and len(shape) == 2 and shape[1] % per_pack == 0:
            pack = index // per_pack
            return (pack // FLAT_THREADS, 0, 0), (pack % FLAT_THREADS, 0, 0)
        if output == "grad_x" and len(shape) == 2:
            return locate_tile(index, shape, vec_of(itemsize), backward_rows_per_thread(shape[0]))
        return self.place(index, shape, itemsize)


def locate_tile(index: int, shape: tuple[int, ...], vec: int, per_thread: int = 0) -> Place:
    """The tile's thread for element `index`; `per_thread` rows a thread (0: the forward's)."""
    if len(shape) == 1:  # grad_bias, written by the column-sum kernel
        return (index // FINALIZE_COLUMNS, 0, 0), (index % FINALIZE_COLUMNS, 0, 0)
    rows, cols = shape
    row, col = divmod(index, cols)
    # A block row of threads spans BLOCK_X * PACKS * vec columns; within it, thread x owns the vec
    # columns from x * vec and again BLOCK_X * vec columns further right.
    span, offset = divmod(col, BLOCK_X * PACKS * vec)
    lane, group = offset % (BLOCK_X * vec) // vec, row // (per_thread or rows_per_thread(rows))
    return (span, group // BLOCK_Y, 0), (lane, group % BLOCK_Y, 0)


def cuda_layout() -> Layout:
    return Tiles(lambda index, shape: locate_tile(index, shape, VEC),
                 f"y of rows that are whole 16-byte packs: one pack a thread, {FLAT_THREADS} threads a block; "
                 f"other y, grad_x: {PACKS} x 16-byte vectors ({VEC} floats or 8 16-bit values, {BLOCK_X} vectors apart) x "
                 f"{ROWS_PER_THREAD}+ rows a thread (grad_x: up to {MAX_BACKWARD_ROWS} while {MIN_BACKWARD_BLOCK_ROWS} "
                 f"block rows remain), {BLOCK_X}x{BLOCK_Y} threads a block; "
                 f"grad_bias: a thread (x) per column, its parts split over 8 (y), "
                 f"{FINALIZE_COLUMNS} columns a block")


K, C = (2 / math.pi) ** 0.5, 0.044715  # reference.py's constants


def _parts(t: Terms) -> tuple[torch.Tensor, ...]:
    """u, 2|z|, and the two terms of gelu'(u) = s + 2 u s s_neg K (1 + 3 C u^2), in float64."""
    u = t["x"] + t["bias"]
    z = K * (u + C * u**3)
    s, s_neg = torch.sigmoid(2 * z), torch.sigmoid(-2 * z)
    return u, 2 * z.abs(), s, 2 * u * s * s_neg * K * (1 + 3 * C * u * u)


def _second_derivative(u: torch.Tensor) -> torch.Tensor:
    u = u.detach().requires_grad_(True)
    z = K * (u + C * u**3)
    s, s_neg = torch.sigmoid(2 * z), torch.sigmoid(-2 * z)
    (d2,) = torch.autograd.grad((s + 2 * u * s * s_neg * K * (1 + 3 * C * u * u)).sum(), u)
    return d2.detach()


# A stage rounds u = x + bias to its dtype (eps/2 of u), and sigmoid(2z) turns the rounding of z
# into a relative error of |2z| ulps; in gelu's left tail (u < -3) both grow as u^2, so a
# float32 y of 1e-12 at u = -5.1 is 44 ulps of itself off while every step rounds correctly.
# y's error is measured against |y| (1 + 2|z|) + |u gelu'(u)|, grad_x's against
# |grad_y| ((|s| + |2 u s s_neg K (1 + 3Cu^2)|)(1 + 2|z|) + |u gelu''(u)|): gelu' has a zero
# at u = -0.75 where its two terms cancel. grad_bias, a column sum of grad_x, against the sum of
# those. The oracle, torch's tanh GELU, computes 1 + tanh z and 1 - tanh^2 z, which cancel in the
# left tail: against it the reference is also allowed eps |u| (y) and eps |grad_y| |u| K (1 + 3Cu^2).
def y_terms(t: Terms, oracle: bool = False) -> torch.Tensor:
    u, z2, a, b = _parts(t)
    scale = (u * a).abs() * (1 + z2) + u.abs() * (a.abs() + b.abs())
    return scale + u.abs() if oracle else scale


def grad_x_terms(t: Terms, oracle: bool = False) -> torch.Tensor:
    u, z2, a, b = _parts(t)
    g = t["grad_y"].abs()
    scale = g * ((a.abs() + b.abs()) * (1 + z2) + (u * _second_derivative(u)).abs())
    return scale + g * (1 + u.abs() * K * (1 + 3 * C * u * u)) if oracle else scale


def grad_bias_terms(t: Terms, oracle: bool = False) -> torch.Tensor:
    return grad_x_terms(t, oracle).sum(dim=0)


def flushed_reciprocal(t: Terms) -> torch.Tensor:
    # kernel.cu's forward computes y = u * (1 / (1 + exp(-2z))) with PTX's rcp.approx.ftz, which
    # flushes a reciprocal below float's smallest normal to 0 (1 + exp(-2z) > 2^126, u < -9.3):
    # y then loses up to |u| tiny. A deliberate trade for one instruction; measured on an H100:
    # -1.17e-37 computed as -0 at u = -10.
    return (t["x"] + t["bias"]).abs() * t["tiny"] / t["eps"]


def widenings() -> tuple[Widen, ...]:
    why = {"y": "u = x + bias is rounded and gelu's left tail magnifies it as u^2",
           "grad_x": "gelu'(u) has two terms that cancel near u = -0.75, and the left tail magnifies u's rounding",
           "grad_bias": "a column sum of grad_x: terms of both signs"}
    scales = {"y": y_terms, "grad_x": grad_x_terms, "grad_bias": grad_bias_terms}
    found = []
    for name, scale in scales.items():
        found.append(Widen(name, why[name], scale=scale))
        found.append(Widen(name, why[name] + "; the oracle's 1 + tanh z cancels in the left tail",
                           scale=lambda t, f=scale: f(t, oracle=True), stages=("reference",)))
    found.append(Widen("y", "kernel.cu's reciprocal flushes results below the smallest normal to 0: "
                            "y = u / d loses up to |u| tiny", scale=flushed_reciprocal, ulps=1, stages=("cuda",)))
    return tuple(found)


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    rows, cols = size
    # A spread of 3 reaches both flat tails of GELU and the bend between them.
    x = 3 * torch.randn(rows, cols, dtype=dtype, generator=gen)
    bias = torch.randn(cols, dtype=dtype, generator=gen)
    return x.to(device), bias.to(device)


def saturated(dtype: torch.dtype, device: torch.device) -> Inputs:
    # u = x + bias reaches +-1e4 and -2e4, where tanh is saturated and exp(2z) overflows in
    # every dtype; 0 and -0, one of them from 1e4 - 1e4 in column 0; and +-5.5, where
    # 1 + tanh(z) is below float32's resolution but the sigmoid form keeps its digits.
    x = [[1e4, -1e4, -0.0, -5.5, 5.5],
         [-1e4, 1e4, 0.0, 3.0, -3.0],
         [2e4, 0.0, 30.0, -30.0, 0.5]]
    bias = [-1e4, 0.0, -0.0, 0.0, 0.0]
    return torch.tensor(x, dtype=dtype, device=device), torch.tensor(bias, dtype=dtype, device=device)


def huge(device: torch.device, gen: torch.Generator) -> Inputs:
    cols = 4104  # a multiple of 8 (the vector path) whose rows still end past 2^31 elements
    rows = 2**31 // cols + 3
    x = torch.randn(rows, cols, device=device, generator=gen)
    return x, torch.randn(cols, device=device, generator=gen)


SPEC = OpSpec(
    name="bias_gelu",
    doc="fusion with broadcast: bias add and GELU in one pass, the broadcast's gradient a deterministic column sum",
    inputs=("x", "bias"),
    outputs=("y",),
    saved=("x", "bias"),
    make_inputs=make_inputs,
    # Flat sizes straddle NUMBA_BLOCK (33, 70, 153 elements); 35 columns need two column blocks.
    sim_sizes=((1, 1), (3, 11), (2, 35), (9, 17)),
    gpu_sizes=GPU_SIZES,
    gradcheck_size=(2, 3),
    edge_cases={"saturated": saturated},
    oracle=lambda x, bias: torch.nn.functional.gelu(x + bias, approximate="tanh"),
    dtypes={
        "reference": (torch.float32, torch.float64),
        "numba": (torch.float32, torch.float64),
        "cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    },
    tolerances=widenings(),
    layouts={"numba": numba_layout(), "cuda": cuda_layout()},
    huge=huge,
    bench_sizes=((8192, 8192),),
)
