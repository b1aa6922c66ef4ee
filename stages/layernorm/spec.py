"""Layer norm over the last dim: a row per block (or per warp), two-pass reductions; column sums for the affine grads."""

import torch

from brrr_kernels import Inputs, Layout, OpSpec, Place, Size, Terms, Widen

CUDA_BLOCK = 256  # kernel.cu's kThreads (v1 forward and the backward; see layouts below)
CUDA_COLUMNS = 32  # kernel.cu's kColumns: columns per block in the weight-gradient kernel
# v1's threads each sum this many of a row's terms in the accumulator size's row (LONG_ROW + 7 columns,
# not whole packs, so v1 takes it): a running sum kept in a 16-bit type has long stopped growing there.
LONG_ROW = 4096 * CUDA_BLOCK


# kernel.cu's forward takes a path by the row's width in 16-byte packs (4 floats, 2 doubles, 8
# bfloat16), and each dtype meets each of them here: a warp per row with 1, 2 and 4 packs a lane
# (cols 64, 120, 200, 480, 1000; 37 and 19 rows leave the last block of 8 rows partly empty), a
# block per row with 2, 4 and 8 packs a thread (bfloat16 at most 4), 30000 floats or bfloat16
# needing 960 of the 1024 threads a block may have; and v1, the loop over the row, for widths that
# are not whole packs (1, 4099, 2051, 70001) and rows past the registers (40000, and 30000 doubles).
# The last two are also the non-contiguous cases. 2048, 8192 and 16384 columns fill their threads
# exactly (the kFull instances, no slot tests): the forward's block path at 2, 4 and 8 packs a thread
# (16-bit rows of 513-1024 packs, as 8192 and 6000 columns, take 8 packs and at most 128 threads) and
# the backward's v4 at 1, 2 and 4 (bfloat16 and float16 at 16384; 8192 is the bench's width).
GPU_SIZES = ((1, 1), (37, 64), (19, 120), (37, 200), (19, 480), (7, 1000), (17, 2000), (65, 3000), (5, 6000),
             (3, 30000), (2, 40000), (33, 4099), (1025, 2051), (3, 70001), (37, 2048), (9, 8192), (3, 16384))
MAX_GPU_ROWS = max(rows for rows, _ in GPU_SIZES)


def _stats(t: Terms) -> tuple[torch.Tensor, ...]:
    """xhat, rstd (a column) and the centring's loss, (|x| + |mean|) rstd: what the rounding of x - mean grows by."""
    x = t["x"]
    mean = x.mean(dim=-1, keepdim=True)
    rstd = torch.rsqrt(((x - mean) ** 2).mean(dim=-1, keepdim=True) + t["eps"])
    return (x - mean) * rstd, rstd, (x.abs() + mean.abs()) * rstd


# y = xhat w + b cancels where b is near -xhat w, and grad_x = rstd (w g - mean(w g) - xhat mean(w g xhat))
# where its three terms meet: each is measured against the sum of its terms' sizes. grad_weight
# and grad_bias are column sums of g xhat and g, both signs. The centring x - mean is rounded
# relative to |x| in float64, which the statistics are in every dtype (and the expected side
# too): at the large-offset rows (1e4, std 10) a float64 y is 1e4 ulps of itself off, and where
# xhat is 0 (one-column rows) the oracle's float64 grad_weight is 4e-15 where the truth is 0.
# Those ulps are float64's in every dtype, so a float32 stage gets no more than float64 rounding.
def y_terms(t: Terms, centring: bool = False) -> torch.Tensor:
    xhat, _, loss = _stats(t)
    return (xhat.abs() + loss * centring) * t["weight"].abs() + t["bias"].abs()


def grad_x_terms(t: Terms, centring: bool = False) -> torch.Tensor:
    xhat, rstd, loss = _stats(t)
    wg = t["weight"] * t["grad_y"]
    # The row means are sums whose rounding is relative to the sum of their terms' sizes.
    terms = wg.abs() + wg.abs().mean(dim=-1, keepdim=True) + xhat.abs() * (wg * xhat).abs().mean(dim=-1, keepdim=True)
    return rstd * terms * (1 + loss.amax(dim=-1, keepdim=True) * centring)


def grad_weight_terms(t: Terms, centring: bool = False) -> torch.Tensor:
    xhat, _, loss = _stats(t)
    return (t["grad_y"] * (xhat.abs() + loss * centring)).abs().sum(dim=0)


def grad_bias_terms(t: Terms, centring: bool = False) -> torch.Tensor:
    return t["grad_y"].abs().sum(dim=0)


def widenings() -> tuple[Widen, ...]:
    why = {"y": "xhat * weight + bias cancels where bias is near -xhat * weight",
           "grad_x": "its three terms cancel",
           "grad_weight": "a column sum of grad_y * xhat, both signs",
           "grad_bias": "a column sum of grad_y, both signs"}
    scales = {"y": y_terms, "grad_x": grad_x_terms, "grad_weight": grad_weight_terms, "grad_bias": grad_bias_terms}
    found = []
    for name, scale in scales.items():
        found.append(Widen(name, why[name], scale=scale))
        if name != "grad_bias":
            found.append(Widen(name, why[name] + "; x - mean is rounded in float64 relative to |x|",
                               scale=lambda t, f=scale: f(t, centring=True), ulps_of=torch.float64))
    return tuple(found)


def rows_then_columns(row_block: int, column_block: int) -> Layout:
    """y and grad_x [rows, cols]: row r is block r, column c thread c % row_block (threads stride over
    the row). grad_weight and grad_bias [cols]: column c is thread c % column_block of block c // column_block."""

    def locate(index: int, shape: tuple[int, ...]) -> Place:
        if len(shape) == 1:
            return (index // column_block, 0, 0), (index % column_block, 0, 0)
        cols = shape[-1]
        return (index // cols, 0, 0), (index % cols % row_block, 0, 0)

    return Layout(locate, f"one block per row ({row_block} threads striding), then one thread per column")


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    rows, cols = size
    # Each row gets its own offset and scale, so a kernel that mixes up rows' statistics shows.
    offset = 3 * torch.randn(rows, 1, dtype=torch.float64, generator=gen)
    if cols >= LONG_ROW:
        # accumulator_sizes' rows sit off zero: a running sum of terms that cancel stays small, where
        # even a 16-bit one keeps its digits; terms of one sign make it grow past them.
        offset = 1 + offset.abs()
    scale = 0.5 + 2 * torch.rand(rows, 1, dtype=torch.float64, generator=gen)
    x = offset + scale * torch.randn(rows, cols, dtype=torch.float64, generator=gen)
    weight = 1 + 0.5 * torch.randn(cols, dtype=torch.float64, generator=gen)
    bias = 0.5 * torch.randn(cols, dtype=torch.float64, generator=gen)
    return tuple(t.to(device=device, dtype=dtype) for t in (x, weight, bias))


def _affine(cols: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    weight = 1 + 0.5 * torch.randn(cols, dtype=torch.float64, generator=gen)
    bias = 0.5 * torch.randn(cols, dtype=torch.float64, generator=gen)
    return weight.to(device=device, dtype=dtype), bias.to(device=device, dtype=dtype)


def constant_rows(dtype: torch.dtype, device: torch.device) -> Inputs:
    # Variance 0: only eps keeps rstd finite (1/sqrt(1e-5) = 316), and y must be exactly bias.
    # The constants are dyadic, so every stage's row sum is exact and the centred row exactly 0.
    cols = 40
    x = torch.tensor([[0.5], [-3.25], [1e4]], dtype=torch.float64).expand(3, cols)
    return (x.to(device=device, dtype=dtype), *_affine(cols, dtype, device))


def large_offset(dtype: torch.dtype, device: torch.device) -> Inputs:
    # 1e4 + noise of std 10: E[x^2] - E[x]^2 in float32 is off by 10-50% here (the two terms agree
    # to 6 digits), while the two-pass form stays exact to rounding. A std of 1 would lose the
    # one-pass variance completely, but then even float64's rounding of the mean (1e4 * 1.1e-16)
    # would be 1e-12 of the normalised values: the float64 tolerance itself.
    cols = 40
    gen = torch.Generator().manual_seed(1)
    x = 1e4 + 10 * torch.randn(2, cols, dtype=torch.float64, generator=gen)
    return (x.to(device=device, dtype=dtype), *_affine(cols, dtype, device))


SPEC = OpSpec(
    name="layernorm",
    doc="row-wise; a row per block or per warp, two-pass reductions (mean, then centred variance); column sums",
    inputs=("x", "weight", "bias"),
    outputs=("y",),
    stats=("mean", "rstd"),
    saved=("x", "weight", "mean", "rstd"),
    params={"eps": 1e-5},
    make_inputs=make_inputs,
    # As numba_kernel.py's launcher (kernel.cu's) maps them: cols 1, 37 and 70 (float32) take v1, a
    # block per row, shorter and longer than its 64 threads; 70 doubles are 35 packs, a warp per row
    # (and the edge cases' 40 columns a warp per row in both dtypes).
    sim_sizes=((1, 1), (3, 37), (5, 70)),
    gpu_sizes=GPU_SIZES,
    gradcheck_size=(2, 3),
    edge_cases={"constant rows": constant_rows, "large offset": large_offset},
    oracle=lambda x, w, b, eps: torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps),
    dtypes={
        "reference": (torch.float32, torch.float64),
        "numba": (torch.float32, torch.float64),
        "cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),
    },
    tolerances=widenings(),
    # The numba stage's writers are observed in the simulator. The cuda layout is that of grad_x and of
    # y on v1's widths; y on the register paths (whole 16-byte packs) is laid out as kernel.cu's
    # normalise_row says, which a layout cannot tell apart from grad_x.
    layouts={"cuda": rows_then_columns(CUDA_BLOCK, CUDA_COLUMNS)},
    bench_sizes=((4096, 8192),),
    # One row of LONG_ROW + 7 columns, in float16 and bfloat16 (v1: 4096 terms a thread in each row sum).
    accumulator_sizes=((1, LONG_ROW + 7),),
    # What `brrr mutate layernorm --stage cuda` leaves alive, and why that is no gap in the cases.
    mutants={
        "kernel.cu:551:106: the kernel writes into partial":
            "partial is the launcher's own scratch (binding.cpp allocates it, the call drops it), not a tensor a "
            "caller passed, so no check watches it for writes; the mutant sets the low byte of its first value (a "
            "double; a float for the 16-bit types), which moves that one partial sum by 2^-44 (2^-16) of itself "
            "at most: below the rounding of grad_weight[0] in float32 and the 16-bit types, inside float64's bound.",
    },
)
