"""Bias + GELU (tanh form), fused: a bias broadcast over rows forward, its gradient summed over rows backward."""

import torch

from brrr_kernels import DEFAULT, Inputs, Layout, OpSpec, Place, Size, Tolerance

NUMBA_BLOCK = 32  # numba_kernel.py: one warp a block keeps the simulator cheap at these small sizes

# kernel.cu's tiling, shared by its forward and backward kernels: each thread owns PACK columns,
# two vectors of VEC consecutive columns BLOCK_X * VEC apart (so each vector access of a warp
# is one contiguous run), of ROWS_PER_THREAD (or more) consecutive rows.
VEC, PACK, BLOCK_X, BLOCK_Y, ROWS_PER_THREAD, MAX_GRID_Y, FINALIZE_THREADS = 4, 8, 32, 8, 4, 65535, 256

GPU_SIZES = (
    (1, 1),
    (3, 5),
    (67, 1028),  # rows of whole vectors (1028 % VEC == 0): vector path plus a 4-column scalar tail
    (129, 8200),  # vector path, an 8-column scalar tail; 129 rows leave a partial block of rows
    (257, 4099),  # odd width: the scalar path; over 2**20 elements
)
MAX_GPU_ROWS = max(rows for rows, _ in GPU_SIZES)


def rows_per_thread(rows: int) -> int:
    """kernel.cu's rows per thread: ROWS_PER_THREAD, or more where gridDim.y would pass its limit."""
    return max(ROWS_PER_THREAD, -(-rows // (MAX_GRID_Y * BLOCK_Y)))


def numba_layout() -> Layout:
    def locate(index: int, shape: tuple[int, ...]) -> Place:
        # The flat index is the element for y and grad_x and the column for grad_bias: the
        # elementwise kernels and the column-sum kernel both give each its own thread.
        return (index // NUMBA_BLOCK, 0, 0), (index % NUMBA_BLOCK, 0, 0)

    return Layout(locate, f"y, grad_x: a thread per element (flat); grad_bias: a thread per column; "
                          f"{NUMBA_BLOCK} threads a block")


def cuda_layout() -> Layout:
    def locate(index: int, shape: tuple[int, ...]) -> Place:
        if len(shape) == 1:  # grad_bias, written by the column-sum kernel
            return (index // FINALIZE_THREADS, 0, 0), (index % FINALIZE_THREADS, 0, 0)
        rows, cols = shape
        row, col = divmod(index, cols)
        # A block row of threads spans BLOCK_X * PACK columns; within it, thread x owns the VEC
        # columns from x * VEC and again BLOCK_X * VEC columns further right.
        span, offset = divmod(col, BLOCK_X * PACK)
        lane, group = offset % (BLOCK_X * VEC) // VEC, row // rows_per_thread(rows)
        return (span, group // BLOCK_Y, 0), (lane, group % BLOCK_Y, 0)

    return Layout(locate, f"y, grad_x: {PACK // VEC} x {VEC} columns ({BLOCK_X * VEC} apart) x {ROWS_PER_THREAD}+ rows a thread, "
                          f"{BLOCK_X}x{BLOCK_Y} threads a block; grad_bias: a thread per column, "
                          f"{FINALIZE_THREADS} a block")


def reduction_tolerance(dtype: torch.dtype) -> Tolerance:
    """The defaults, with atol wide enough for grad_bias, a sum over up to MAX_GPU_ROWS rows."""
    default = DEFAULT[dtype]
    # Each term g * gelu'(u) of grad_bias[c] is off by up to half an ulp of the dtype (the runner
    # rounds the upstream g to the dtype for the stage, not for the float64 expectation) plus
    # about half an ulp of float, the compute type, for gelu'(u). Those errors are independent,
    # so the sum drifts by (eps + eps_float) / 2 / sqrt(3) * sqrt(rows) * rms(term), rms(term)
    # ~0.72 here (0.75 below) with unit upstream, while the sum itself can cancel to near zero,
    # where rtol gives nothing: atol covers six of those deviations. At 257 rows: 5.0e-6 for
    # float32 (measured need 1.8e-6), 0.020 for float16, 0.16 for bfloat16. float64's drift,
    # ~1e-15, is far inside its default.
    term = (torch.finfo(dtype).eps + torch.finfo(torch.float32).eps) / 2
    drift = term / 3**0.5 * MAX_GPU_ROWS**0.5 * 0.75
    return Tolerance(rtol=default.rtol, atol=max(default.atol, 6 * drift),
                     why=f"grad_bias sums up to {MAX_GPU_ROWS} rows that can cancel: "
                         f"6 x (eps + eps_float)/2/sqrt(3) x sqrt(rows) x 0.75")


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
    tolerances={t: reduction_tolerance(t) for t in (torch.float32, torch.float16, torch.bfloat16)},
    layouts={"numba": numba_layout(), "cuda": cuda_layout()},
    huge=huge,
    bench_sizes=((8192, 8192),),
)
