"""Tensor-core matrix product c = a @ b in bfloat16 or float16: mma.sync fragments staged by cp.async and ldmatrix."""

import math
from collections.abc import Callable

import torch

from brrr_kernels import Inputs, Layout, OpSpec, Place, Size, Terms, Widen
from brrr_kernels.op.tolerances import tensor_core_bound

# kernel.cu's TcTiling (v3, forward_v3, and the kernel for operands cp.async cannot move): a block of
# 2 x 4 warps computes a 128 x 128 tile of c, each warp a 64 x 32 part; blocks go through the tiles in
# groups of 8 row tiles.
CUDA_TILE = (128, 128)
CUDA_WARPS = (2, 4)
CUDA_GROUP_M = 8
# kernel.cu's v5 and v4 (forward and backward where the GPU has wgmma): two warpgroups of 64 rows of a
# 128 x 256 tile (v5, TmaMatmulTiling), or of a 128 x 128 one (v4, WgmmaSmallTiling) where the large
# tiles are fewer than the GPU's SMs (132 on an H100 or H200), in the same groups of 8 row tiles.
WGMMA_TILES = ((128, 256), (128, 128))
GPU_SMS = 132


def cuda_block(tile_m: int, tile_n: int, shape: tuple[int, ...], tile: tuple[int, int] = CUDA_TILE) -> int:
    """kernel.cu's tile_of inverted: the 1-D block index that computes tile (tile_m, tile_n) of c."""
    tiles_m = -(-shape[0] // tile[0])
    tiles_n = -(-shape[-1] // tile[1])
    first = tile_m // CUDA_GROUP_M * CUDA_GROUP_M
    rows = min(tiles_m - first, CUDA_GROUP_M)
    return first * tiles_n + tile_n * rows + tile_m - first


def mma_locate(index: int, shape: tuple[int, ...]) -> Place:
    """kernel.cu's mma_pipelined_kernel: element (r, c) is in tile (r / 128, c / 128), block cuda_block of
    it; warp 4 (r % 128 / 64) + c % 128 / 32 of the tile holds it, in lane 4 (r % 8) + (c % 8) / 2 (mma.sync's
    accumulator layout)."""
    row, col = divmod(index, shape[-1])
    warp_m, warp_n = CUDA_TILE[0] // CUDA_WARPS[0], CUDA_TILE[1] // CUDA_WARPS[1]
    warp = row % CUDA_TILE[0] // warp_m * CUDA_WARPS[1] + col % CUDA_TILE[1] // warp_n
    block = cuda_block(row // CUDA_TILE[0], col // CUDA_TILE[1], shape)
    return (block, 0, 0), (32 * warp + 4 * (row % 8) + col % 8 // 2, 0, 0)


def wgmma_locate(index: int, shape: tuple[int, ...], tile: tuple[int, int] | None = None) -> Place:
    """kernel.cu's wgmma_kernel and wgmma_tma_kernel (v5's consumers are threads 0-255, as v4's): warpgroup
    r % 128 / 64 of the tile's block, its warp r % 64 / 16, lane 4 (r % 8) + (c % 8) / 2 (wgmma's
    accumulator layout, mma.sync's in each 16-row slab). `tile`: v4's or v5's by the shape when not given."""
    large, small = WGMMA_TILES
    if tile is None:
        tile = large if -(-shape[0] // large[0]) * -(-shape[-1] // large[1]) >= GPU_SMS else small
    row, col = divmod(index, shape[-1])
    block = cuda_block(row // tile[0], col // tile[1], shape, tile)
    return (block, 0, 0), (row % 128 // 16 * 32 + 4 * (row % 8) + col % 8 // 2, 0, 0)


class TensorCoreLayout(Layout):
    """v5's or v4's mapping for forward, backward and forward_v4, v5's 128x256 tiles for forward_v5, v3's
    for forward_v3 (forward_v1 and _v2 map their own way, named here by v3's)."""

    def place_for(self, check: str, output: str, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        if check == "forward_v5":
            return wgmma_locate(index, shape, WGMMA_TILES[0])
        return (wgmma_locate if check in ("forward", "backward", "forward_v4") else mma_locate)(index, shape)


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    m, k, n = size
    # As matmul's: a scaled by 1/sqrt(M) and b by 1/sqrt(N) keep c and both gradients (the runner's
    # upstream gradient is N(0, 1)) of unit size or less. Drawn in float64, then rounded to the dtype.
    a = torch.randn(m, k, dtype=torch.float64, generator=gen) / math.sqrt(max(m, 1))
    b = torch.randn(k, n, dtype=torch.float64, generator=gen) / math.sqrt(max(n, 1))
    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


def outer_product(dtype: torch.dtype, device: torch.device) -> Inputs:
    """K = 1: one partial k-step."""
    return make_inputs((5, 1, 3), dtype, device, torch.Generator().manual_seed(1))


def empty_sum(dtype: torch.dtype, device: torch.device) -> Inputs:
    """K = 0: c is all zeros, and a kernel skipped for it would leave whatever was in memory."""
    return torch.empty(3, 0, dtype=dtype, device=device), torch.empty(0, 2, dtype=dtype, device=device)


def huge_mixed_sign(dtype: torch.dtype, device: torch.device) -> Inputs:
    """Magnitudes near 1e18, both signs, every result exact in bfloat16 and float32, cancellations included.

    Column p of a and row p of b each hold one nonzero, small integers (8 bits at most: exact in
    bfloat16) times 2^60 and 2^40, so every product is an integer times 2^100 and every sum exact in
    any order; a garbage or stale tile element would show at this scale. p = 0, 1 cancel at c[0, 0],
    p = 3, 5 at the corner c[4, 2]; p = 2, 4 add up at c[1, 2] to -57 2^100, exact in bfloat16.
    float16 (largest 65504) takes 2^5 and 2^3: c[1, 2] = -57 2^8, as exact.
    """
    high, low = (5, 3) if dtype == torch.float16 else (60, 40)
    m, k, n = 5, 6, 3
    a = torch.zeros(m, k, dtype=torch.float64)
    b = torch.zeros(k, n, dtype=torch.float64)
    terms = [(0, 0, 3, 5), (0, 0, -3, 5), (1, 2, -7, 3), (4, 2, 11, -2), (1, 2, 13, -3), (4, 2, -11, -2)]
    for p, (i, j, x, y) in enumerate(terms):
        a[i, p] = x * 2.0**high
        b[p, j] = y * 2.0**low
    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


# Each element is a sum of products of both signs: its error is measured against the sum of their
# absolute values, the size of what cancels.
def c_terms(t: Terms) -> torch.Tensor:
    return t["a"].abs() @ t["b"].abs()


def grad_a_terms(t: Terms) -> torch.Tensor:
    return t["grad_c"].abs() @ t["b"].abs().T


def grad_b_terms(t: Terms) -> torch.Tensor:
    return t["a"].abs().T @ t["grad_c"].abs()


def tensor_cores(terms: Callable[[Terms], torch.Tensor], k_of: Callable[[Terms], int]) -> Callable[[Terms], torch.Tensor]:
    """The tensor-core bound, tolerances.tensor_core_bound(K) x the size of the terms, as a scale of one
    ulp of the stage's dtype (the Widen below counts 1 ulp of it)."""
    return lambda t: tensor_core_bound(k_of(t)) * terms(t) / t["eps"]


FLOAT = (torch.float32, torch.float64)
SIXTEEN = (torch.bfloat16, torch.float16)
OUTPUTS = (("c", c_terms, lambda t: t["a"].shape[1]),  # each product's K: c sums over k,
           ("grad_a", grad_a_terms, lambda t: t["grad_c"].shape[1]),  # grad_a over n,
           ("grad_b", grad_b_terms, lambda t: t["a"].shape[0]))  # grad_b over m

SPEC = OpSpec(
    name="matmul_tc",
    doc="bfloat16 or float16 on the tensor cores: wgmma on 128-byte swizzled tiles the tensor memory accelerator fills "
        "(v5, Hopper; "
        "v4's cp.async for small products), mma.sync with ldmatrix elsewhere (v3)",
    inputs=("a", "b"),
    outputs=("c",),
    saved=("a", "b"),
    make_inputs=make_inputs,
    # (M, K, N). numba_kernel.py's blocks are 32x32 (2 x 2 warps of 16x16) stepping 16 through k:
    # (40, 35, 37) has two row blocks (the second in the first row of warps alone), two column blocks
    # (the second in the first column of warps alone) and three k-steps, all ending partial;
    # (17, 48, 24) three whole k-steps. Executed on the CPU, all three have rows that are not
    # whole 16-byte chunks except (17, 48, 24)'s, which kernel.cu stages with cp.async.
    sim_sizes=((1, 1, 1), (40, 35, 37), (17, 48, 24)),
    # kernel.cu's v3 tiles (128x128, 2x4 warps of 64x32, k-steps of 64 through 3 buffers): (130, 72, 200)
    # reaches all eight warps of a block, partial row and column tiles, and a partial k-step, every
    # operand by cp.async (rows of 16-byte chunks); (129, 37, 131) every operand by plain loads, partial
    # chunks at each row's end; (200, 40, 131) and (70, 33, 136) mix the two in each of the three
    # products (forward, grad_a from grad_c and b, grad_b from a and grad_c); (257, 64, 136) three row
    # tiles; (40, 296, 24) five k-steps in forward, so the 3 buffers are reused (the wait and the barrier
    # that frees a buffer) and the last step is partial; (1100, 16, 300) nine row tiles, two groups of
    # tile_of (8, then 1) and three column tiles. v4 (wgmma) takes every product whose operands are
    # whole 16-byte rows: (130, 72, 200), (257, 64, 136) and (40, 296, 24) in its 128x128 tiles (fewer
    # 128x256 tiles than SMs), (520, 64, 256) in its 128x256 ones where the SMs are few (the CPU
    # execution has 4), (1024, 4096, 2048) on a GPU. (64, 512, 56): eight k-steps, so each of v4's and
    # v5's 4 stages is refilled once (a stage given back too early shows in the second round), within
    # the first versions' CPU budget (2^16 input elements).
    # The CPU execution runs these (up to 2^18 input elements); a GPU the larger ones too.
    gpu_sizes=((1, 1, 1), (130, 72, 200), (129, 37, 131), (200, 40, 131), (70, 33, 136), (257, 64, 136),
               (40, 296, 24), (1100, 16, 300), (520, 64, 256), (64, 512, 56), (1000, 1027, 999), (1024, 4096, 2048)),
    gradcheck_size=(2, 3, 2),
    edge_cases={"K=1, outer product": outer_product, "K=0, empty sum": empty_sum,
                "huge mixed-sign, exact": huge_mixed_sign},
    oracle=torch.matmul,
    tolerances=tuple(
        w for name, terms, k_of in OUTPUTS for w in (
            Widen(name, "a sum of products of both signs: measured against the sum of their sizes", scale=terms,
                  dtypes=FLOAT),
            Widen(name, "16-bit products (exact) summed in float32, as tensor cores do: tolerances.tensor_core_bound(K) "
                  "x the sum of their sizes", ulps=1, scale=tensor_cores(terms, k_of), dtypes=SIXTEEN),
        )),
    dtypes={
        "reference": (torch.float32, torch.float64, *SIXTEEN),
        # numba has no bfloat16 (and float16 only in part): its 16-bit stage widens the inputs to float32
        # (exactly) and rounds c once.
        "numba": (torch.float64, *SIXTEEN),
        "cuda": SIXTEEN,  # the tensor cores' input types
    },
    layouts={"cuda": TensorCoreLayout(wgmma_locate, "v5: 128x256 tiles (v4's 128x128 where those are fewer than an "
                                      "H100's 132 SMs) of two warpgroups, in groups of 8 row tiles, wgmma's accumulator "
                                      "layout; operands whose rows are not whole 16-byte chunks take v3's 128x128 tiles "
                                      "of 2x4 warps")},
    bench_sizes=((4096, 4096, 4096),),
)
