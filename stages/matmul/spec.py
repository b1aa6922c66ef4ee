"""Matrix product c = a @ b: shared-memory tiled kernels, reused through strides for both gradients."""

import math
from dataclasses import dataclass

import torch

from brrr_kernels import Inputs, Layout, OpSpec, Place, Size, Terms, Widen

NUMBA_TILE = 4  # numba_kernel.py's TILE: sim_sizes leave a partial tile in every dimension
CUDA_TILE = 16  # kernel.cu's kTile (v2, the 16x16 kernel)
CUDA_BLOCK = 128  # kernel.cu's kBlock (v3, v4 and v5, the 128x128 kernels with an 8x8 block of c per thread)
MAX_GRID_Y = 65535  # all kernels cap gridDim.y here and loop over the remaining row tiles
FIRST_VERSIONS_128 = ("forward_v3", "forward_v4")  # binding.cpp's first versions with v3's threads


def tiled(tile: int) -> Layout:
    """2-D grid of tile x tile blocks over the [rows, cols] output, threadIdx.x along columns."""

    def locate(index: int, shape: tuple[int, ...]) -> Place:
        row, col = divmod(index, shape[-1])
        return (col // tile, (row // tile) % MAX_GRID_Y, 0), (col % tile, row % tile, 0)

    return Layout(locate, f"one thread per output element, {tile}x{tile} tiles, x along columns")


def _block_of(row: int, col: int) -> tuple[int, int, int]:
    return col // CUDA_BLOCK, (row // CUDA_BLOCK) % MAX_GRID_Y, 0


def blocked_locate(index: int, shape: tuple[int, ...]) -> Place:
    """kernel.cu's v3 and v4: 256 threads a 128x128 tile; thread ty * 16 + tx owns rows ty*4 + 0..3 and
    64 + ty*4 + 0..3 of the tile, and the columns tx gives the same way."""
    row, col = divmod(index, shape[-1])
    ty, tx = (row % CUDA_BLOCK % (CUDA_BLOCK // 2)) // 4, (col % CUDA_BLOCK % (CUDA_BLOCK // 2)) // 4
    return _block_of(row, col), (ty * 16 + tx, 0, 0)


def vectorised_locate(index: int, shape: tuple[int, ...]) -> Place:
    """kernel.cu's v5: the block's 8 warps are 4 x 2 over 32 x 64 tiles of c, each warp's lanes 4 x 8;
    lane (ly, lx) of warp (wm, wn) owns rows ly*4 + 0..3 and 16 + ly*4 + 0..3 of its warp's tile and
    columns lx*4 + 0..3 and 32 + lx*4 + 0..3."""
    row, col = divmod(index, shape[-1])
    r, c = row % CUDA_BLOCK, col % CUDA_BLOCK
    wm, wn, ly, lx = r // 32, c // 64, r % 16 // 4, c % 32 // 4
    return _block_of(row, col), (wm * 64 + wn * 32 + ly * 8 + lx, 0, 0)


@dataclass(frozen=True)
class CudaLayout(Layout):
    """kernel.cu's matmul_product runs v5 on every float32, float16 and bfloat16 output and v2 on
    float64: a choice made on the dtype alone, so it can be followed here. forward_v3 and forward_v4
    run v3 and v4 (v3's threads) on float32 outputs of 128-multiple rows and columns, and v2 on the
    rest; forward_v1 and _v2 take 16x16 tiles of threads."""

    def place(self, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        return self.place_for("forward", "c", index, shape, itemsize)

    def place_for(self, check: str, output: str, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        if itemsize == 8 or check in ("forward_v1", "forward_v2"):
            return self.locate(index, shape)
        if check in FIRST_VERSIONS_128:
            whole = itemsize == 4 and shape[0] % CUDA_BLOCK == 0 and shape[1] % CUDA_BLOCK == 0
            return blocked_locate(index, shape) if whole else self.locate(index, shape)
        return vectorised_locate(index, shape)


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
    rounded product each, so float32's relative tolerance holds for them as well. float16 (largest
    65504) takes 2^5 and 2^3: products up to 13 * 6 * 2^8, as exact.
    """
    high, low = (5, 3) if dtype == torch.float16 else (60, 40)
    m, k, n = 5, 6, 3
    a = torch.zeros(m, k, dtype=torch.float64)
    b = torch.zeros(k, n, dtype=torch.float64)
    # (row of a, column of b, a's integer, b's integer) for each p. p = 0, 1 cancel at c[0, 0];
    # p = 3, 5 cancel at the corner c[4, 2], in the partial tiles of all three dimensions; p = 2, 4
    # add up at c[1, 2]. The rest of c, rows 2 and 3 whole, is exactly zero.
    terms = [(0, 0, 3, 5), (0, 0, -3, 5), (1, 2, -7, 3), (4, 2, 11, -2), (1, 2, 13, -6), (4, 2, -11, -2)]
    for p, (i, j, x, y) in enumerate(terms):
        a[i, p] = x * 2.0**high
        b[p, j] = y * 2.0**low
    return a.to(device=device, dtype=dtype), b.to(device=device, dtype=dtype)


def positive_sums(dtype: torch.dtype, device: torch.device) -> Inputs:
    """Every product positive: c's elements sums that only grow, as a 16-bit running sum cannot.

    In float16 and bfloat16, K = 4103 (257 of v5's k-steps, one thread's running sum): summed in the
    16-bit type (a term under half a unit of the sum is lost), c ends 39-54 times past its bound
    (relative errors 0.1-0.6, planted in v5 on the CPU execution; the random cases then fail by
    1.03-1.25 times, or pass); summed in float32 and rounded once, within one unit. float32 and
    float64 take K = 40: their own sequential sum of 4103 positive terms drifts by about 13 of their
    units, past the default bound for no fault of the kernel (random signs, as every other case has,
    leave it far inside).
    """
    k = 4103 if dtype in (torch.float16, torch.bfloat16) else 40
    a, b = make_inputs((3, k, 5), dtype, torch.device("cpu"), torch.Generator().manual_seed(2))
    return a.abs().to(device), b.abs().to(device)


# Each element is a sum of products of both signs: its error is measured against the sum of
# their absolute values (the classic bound for a dot product, n eps sum|a_k b_k|, of which a
# sequential or tree sum of random roundings uses a few ulps).
def c_terms(t: Terms) -> torch.Tensor:
    return t["a"].abs() @ t["b"].abs()


def grad_a_terms(t: Terms) -> torch.Tensor:
    return t["grad_c"].abs() @ t["b"].abs().T


def grad_b_terms(t: Terms) -> torch.Tensor:
    return t["a"].abs().T @ t["grad_c"].abs()


SPEC = OpSpec(
    name="matmul",
    doc="shared-memory tiled matrix product; both gradients reuse the kernels on strided transposes",
    inputs=("a", "b"),
    outputs=("c",),
    saved=("a", "b"),
    make_inputs=make_inputs,
    # (M, K, N): every dimension ends in a partial 4-wide tile; (6, 5, 7) spans two in all three.
    sim_sizes=((1, 1, 1), (5, 7, 3), (6, 5, 7)),
    # float32 c, grad_a and grad_b run kernel.cu's v5, with float4 loads where their rows and
    # columns are multiples of 128 (and k of 16), element loads otherwise; float64 runs v2 (16x16).
    # (33, 65, 17) and (257, 511, 129): v5's edge tiles, partial in rows, columns and k;
    # (128, 5, 128): c in element loads, one partial k-step of 16; (128, 128, 128): c and both
    # gradients in float4 loads, small enough for the CPU execution; (128, 131, 256): c in element
    # loads, two column blocks, nine k-steps through the two buffers, the last 3 deep; (256, 384,
    # 128): c and both gradients in float4 loads, one instance each (A along k and B along n, A and B
    # along k, A along m and B along n). forward_v3 and forward_v4 (v3 and v4 where rows and columns
    # are multiples of 128, v2 otherwise) run on the same sizes. The last two are also the
    # non-contiguous cases.
    gpu_sizes=((1, 1, 1), (33, 65, 17), (128, 5, 128), (128, 128, 128), (128, 131, 256), (256, 384, 128),
               (257, 511, 129), (1000, 1027, 999)),
    gradcheck_size=(2, 3, 2),
    edge_cases={"K=1, outer product": outer_product, "K=0, empty sum": empty_sum,
                "huge mixed-sign, exact": huge_mixed_sign, "positive sums": positive_sums},
    oracle=torch.matmul,
    tolerances=tuple(Widen(name, "a sum of products of both signs: measured against the sum of their sizes",
                           scale=scale) for name, scale in (("c", c_terms), ("grad_a", grad_a_terms),
                                                            ("grad_b", grad_b_terms))),
    dtypes={
        "reference": (torch.float32, torch.float64),
        "numba": (torch.float32, torch.float64),
        # 16-bit operands widened to float as v5 fetches them, c rounded once (tensor cores: matmul_tc).
        "cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    },
    layouts={"numba": tiled(NUMBA_TILE),
             "cuda": CudaLayout(tiled(CUDA_TILE).locate, f"float32, float16, bfloat16: an 8x8 block per thread, "
                                f"{CUDA_BLOCK}x{CUDA_BLOCK} tiles, warps over 32x64 (forward_v3, _v4: 16x16 "
                                f"threads over the tile, outputs of {CUDA_BLOCK}-multiple rows and columns); "
                                f"float64: one thread per output element, {CUDA_TILE}x{CUDA_TILE} tiles")},
    bench_sizes=((4096, 4096, 4096),),
)
