"""Matrix product c = a @ b: the shared-memory tiled kernel, reused through strides for both gradients."""

import math

import torch

from pipeline.spec import Inputs, Layout, OpSpec, Place, Size
from pipeline.tolerances import Tolerance

NUMBA_TILE = 4  # numba_kernel.py's TILE: sim_sizes leave a partial tile in every dimension
CUDA_TILE = 16  # kernel.cu's kTile
MAX_GRID_Y = 65535  # both kernels cap gridDim.y here and loop over the remaining row tiles


def tiled(tile: int) -> Layout:
    """2-D grid of tile x tile blocks over the [rows, cols] output, threadIdx.x along columns."""

    def locate(index: int, shape: tuple[int, ...]) -> Place:
        row, col = divmod(index, shape[-1])
        return (col // tile, (row // tile) % MAX_GRID_Y, 0), (col % tile, row % tile, 0)

    return Layout(locate, f"one thread per output element, {tile}x{tile} tiles, x along columns")


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    m, k, n = size
    # The runner's upstream gradients are N(0, 1). Scaling a by 1/sqrt(M) and b by 1/sqrt(N) makes
    # grad_a = g @ b^T and grad_b = a^T @ g sums of unit variance, and c's elements of size
    # sqrt(K/(MN)), at most 1 at these sizes: no output is large, so one atol fits all three.
    a = torch.randn(m, k, dtype=dtype, generator=gen) / math.sqrt(max(m, 1))
    b = torch.randn(k, n, dtype=dtype, generator=gen) / math.sqrt(max(n, 1))
    return a.to(device), b.to(device)


def outer_product(dtype: torch.dtype, device: torch.device) -> Inputs:
    """K = 1: a single, partial k-tile."""
    return make_inputs((5, 1, 3), dtype, device, torch.Generator().manual_seed(1))


def empty_sum(dtype: torch.dtype, device: torch.device) -> Inputs:
    """K = 0: c is all zeros, and a kernel skipped for it would leave the poisoned NaNs."""
    return torch.empty(3, 0, dtype=dtype, device=device), torch.empty(0, 2, dtype=dtype, device=device)


def huge_mixed_sign(dtype: torch.dtype, device: torch.device) -> Inputs:
    """Magnitudes near 1e18, both signs, every result exact in float32, cancellations included.

    Column p of a and row p of b each hold one nonzero, small integers times 2^60 and 2^40, so
    every product is an integer times 2^100 (~1e30, float32 reaches 3e38) and every sum of them
    is exact in any order: c must match exactly, zeros from cancellation too, and a stale or
    garbage tile element would show at this scale. With one term per sum, the gradients are one
    rounded product each, so float32's relative tolerance holds for them as well.
    """
    m, k, n = 5, 6, 3
    a = torch.zeros(m, k, dtype=torch.float64)
    b = torch.zeros(k, n, dtype=torch.float64)
    # (row of a, column of b, a's integer, b's integer) for each p. p = 0, 1 cancel at c[0, 0];
    # p = 3, 5 cancel at the corner c[4, 2], in the partial tiles of all three dimensions; p = 2, 4
    # add up at c[1, 2]. The rest of c, rows 2 and 3 whole, is exactly zero.
    terms = [(0, 0, 3, 5), (0, 0, -3, 5), (1, 2, -7, 3), (4, 2, 11, -2), (1, 2, 13, -6), (4, 2, -11, -2)]
    for p, (i, j, x, y) in enumerate(terms):
        a[i, p] = x * 2.0**60
        b[p, j] = y * 2.0**40
    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


SPEC = OpSpec(
    name="matmul",
    doc="shared-memory tiled matrix product; both gradients reuse the kernel on strided transposes",
    inputs=("a", "b"),
    outputs=("c",),
    saved=("a", "b"),
    make_inputs=make_inputs,
    # (M, K, N): every dimension ends in a partial 4-wide tile; (6, 5, 7) spans two in all three.
    sim_sizes=((1, 1, 1), (5, 7, 3), (6, 5, 7)),
    gpu_sizes=((1, 1, 1), (33, 65, 17), (257, 511, 129), (1000, 1027, 999)),
    gradcheck_size=(2, 3, 2),
    edge_cases={"K=1, outer product": outer_product, "K=0, empty sum": empty_sum,
                "huge mixed-sign, exact": huge_mixed_sign},
    oracle=torch.matmul,
    tolerances={
        # One thread sums K products in float32, rounding at each add by up to eps/2 of the partial
        # sum (eps 1.2e-7): a random walk of ~0.15 eps sqrt(K) |s| = 6e-7 for O(1) sums of K ~ 1000
        # terms (gpu_sizes' largest inner dimension, for c and both gradients), several times that
        # at the worst of their 3e6 elements. Emulating the kernel's sequential sums at
        # (1000, 1027, 999), with and without FMA, gave errors up to 7.5e-6, near-zero elements
        # 2.8x past the default tolerance (atol 1e-6); this one they fill to 0.33 at most.
        torch.float32: Tolerance(rtol=1e-5, atol=1e-5,
                                 why="eps 1.2e-7; float32 sums of K~1000 O(1) terms err ~0.15 eps sqrt(K) = 6e-7 "
                                     "each, 7.5e-6 at worst in an emulation of the kernel (0.33x this tolerance)"),
    },
    layouts={"numba": tiled(NUMBA_TILE), "cuda": tiled(CUDA_TILE)},
    bench_sizes=((4096, 4096, 4096),),
)
