"""Layer norm over the last dim: a row per block (or per warp), two-pass reductions; column sums for the affine grads."""

import torch

from brrr_kernels import DEFAULT, Inputs, Layout, OpSpec, Place, Size, Tolerance

CUDA_BLOCK = 256  # kernel.cu's kThreads (v1 forward and the backward; see layouts below)
CUDA_COLUMNS = 32  # kernel.cu's kColumns: columns per block in the weight-gradient kernel


# kernel.cu's forward takes a path by the row's width in 16-byte packs (4 floats, 2 doubles, 8
# bfloat16), and each dtype meets each of them here: a warp per row with 1, 2 and 4 packs a lane
# (cols 64, 120, 200, 480, 1000; 37 and 19 rows leave the last block of 8 rows partly empty), a
# block per row with 2, 4 and 8 packs a thread (bfloat16 at most 4), 30000 floats or bfloat16
# needing 960 of the 1024 threads a block may have; and v1, the loop over the row, for widths that
# are not whole packs (1, 4099, 2051, 70001) and rows past the registers (40000, and 30000 doubles).
# The last two are also the non-contiguous cases.
GPU_SIZES = ((1, 1), (37, 64), (19, 120), (37, 200), (19, 480), (7, 1000), (17, 2000), (65, 3000), (5, 6000),
             (3, 30000), (2, 40000), (33, 4099), (1025, 2051), (3, 70001))
MAX_GPU_ROWS = max(rows for rows, _ in GPU_SIZES)


def column_sum_tolerance(dtype: torch.dtype) -> Tolerance:
    default = DEFAULT[dtype]
    eps = torch.finfo(dtype).eps
    # grad_weight[c] and grad_bias[c] sum MAX_GPU_ROWS terms g * xhat and g. The runner rounds the
    # upstream g to the stage's dtype but gives the float64 expectation g unrounded, so each term
    # is off by up to eps/2 relative, uniformly: a column's sum drifts by eps / (2 sqrt 3) *
    # sqrt(rows) * rms(term), rms(term) ~ 1 here (unit upstream, unit-variance xhat; measured:
    # 0.73 of that), while the sum itself can cancel to near zero, where rtol gives nothing. atol
    # covers six such deviations: 6.6e-6 for float32 at 1025 rows, where the default 1e-6 failed 7
    # of 10 emulated runs. The kernels' own sums (double) add nothing measurable.
    drift = eps / (2 * 3**0.5) * MAX_GPU_ROWS**0.5
    return Tolerance(rtol=default.rtol, atol=max(default.atol, 6 * drift),
                     why=f"grad_weight and grad_bias sum {MAX_GPU_ROWS} terms whose upstream the runner rounds "
                         f"to the dtype: 6 x eps/(2 sqrt 3) x sqrt(rows)")


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
        "cuda": (torch.float32, torch.float64, torch.bfloat16),
    },
    # bfloat16 keeps the default: by the same sum it would need atol 0.43, and in grad_x of the constant
    # rows rstd = 1/sqrt(eps) = 316 multiplies the upstream's rounding into errors of ~3. No tolerance
    # that size means anything, so its backward rows fail until the runner gives the reference the
    # same rounded upstream; with that patched in they pass the default on an H100 (worst relative
    # error 3.9e-3: the output's own rounding).
    tolerances={torch.float32: column_sum_tolerance(torch.float32)},
    # The numba stage's writers are observed in the simulator. The cuda layout is that of grad_x and of
    # y on v1's widths; y on the register paths (whole 16-byte packs) is laid out as kernel.cu's
    # normalise_row says, which a layout cannot tell apart from grad_x.
    layouts={"cuda": rows_then_columns(CUDA_BLOCK, CUDA_COLUMNS)},
    bench_sizes=((4096, 8192),),
)
