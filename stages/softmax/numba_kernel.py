"""Softmax over the last dim, numba stage: kernel.cu's kernels, with its names and its mapping.

Each row is held by `tpr` threads (a multiple of 32, the fewest whose SLOTS elements cover it;
short rows share a block, MIN_BLOCK_THREADS threads in all). Thread `lane` of a row owns units
lane, lane + tpr, ...; a unit is `width` consecutive elements (kernel.cu's 16-byte packs: 4
floats or 2 doubles when a row is a whole number of them, else 1). The row's max and sum are
reduced by warp shuffles, then across the row's warps through one shared slot per warp. Rows
longer than MAX_ROW_THREADS x SLOTS take v1: one block of V1_THREADS per row, striding over it.

Accumulation is in float64 for float32 and float64 inputs alike (kernel.cu computes float in
float). Elements are read through float(): in the simulator a Python float meeting a numpy float32
gives a float32 (NumPy 2's promotion rules), though numba types the same code as float64 on a GPU.
"""

import math

import torch

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
from numba import float64  # noqa: E402  (after import_cuda, which readies numpy for numba)

FULL = 0xFFFFFFFF
# kernel.cu's kSlots: elements of a row one thread holds (floats, doubles)
SLOTS_FLOAT = 32
SLOTS_DOUBLE = 8
# kernel.cu's 16-byte packs: a unit of `width` elements when a row is a whole number of them (kernel.cu
# also needs the pointers 16-byte aligned, as torch's allocations are; numba reads element by element)
PACK_FLOAT = 4
PACK_DOUBLE = 2
MAX_SLOTS = 32
MAX_ROW_THREADS = 1024  # kMaxRowThreads
MAX_ROW_WARPS = MAX_ROW_THREADS // 32  # a shared array's size must be a name on a GPU, not arithmetic
MAX_ROW_THREADS_BACKWARD = 512  # kMaxRowThreadsBackward: backward holds two rows
MIN_BLOCK_THREADS = 128  # kMinBlockThreads: short rows share a block
V1_THREADS = 256  # kV1Threads
V1_WARPS = V1_THREADS // 32


@cuda.jit(device=True)
def warp_max(v):
    offset = 16
    while offset > 0:
        v = max(v, cuda.shfl_xor_sync(FULL, v, offset))
        offset //= 2
    return v


@cuda.jit(device=True)
def warp_sum(v):
    offset = 16
    while offset > 0:
        v += cuda.shfl_xor_sync(FULL, v, offset)
        offset //= 2
    return v


# Reductions over the tpr threads of one row, returned to all of them. A warp per row needs no
# shared memory and no barrier; tpr is the same for the whole launch, so every thread meets
# every syncthreads() or none does. Each reduction of a kernel gets its own `part` array, so no
# barrier is needed between one reduction's reads and the next one's writes.
@cuda.jit(device=True)
def row_max(v, part, tpr):
    v = warp_max(v)
    if tpr == 32:
        return v
    first = cuda.threadIdx.x // tpr * (tpr // 32)  # the first warp of this thread's row
    if cuda.threadIdx.x % 32 == 0:
        part[cuda.threadIdx.x // 32] = v
    cuda.syncthreads()
    r = part[first]
    for w in range(1, tpr // 32):
        r = max(r, part[first + w])
    return r


@cuda.jit(device=True)
def row_sum(v, part, tpr):
    v = warp_sum(v)
    if tpr == 32:
        return v
    first = cuda.threadIdx.x // tpr * (tpr // 32)
    if cuda.threadIdx.x % 32 == 0:
        part[cuda.threadIdx.x // 32] = v
    cuda.syncthreads()
    r = part[first]
    for w in range(1, tpr // 32):
        r += part[first + w]
    return r


@cuda.jit(launch_bounds=MAX_ROW_THREADS)  # as kernel.cu's: 1024 threads fit only within 64 registers each
def softmax_forward_kernel(x, y, rows, cols, tpr, width, slots):
    part_max = cuda.shared.array(MAX_ROW_WARPS, dtype=float64)
    part_sum = cuda.shared.array(MAX_ROW_WARPS, dtype=float64)
    lane = cuda.threadIdx.x % tpr
    row = cuda.blockIdx.x * (cuda.blockDim.x // tpr) + cuda.threadIdx.x // tpr
    units = cols // width if row < rows else 0
    mine = (units - lane + tpr - 1) // tpr if units > lane else 0
    r = row if row < rows else 0  # a row past the last holds nothing, yet meets both reductions
    slots_per_thread = slots // width
    v = cuda.local.array(MAX_SLOTS, dtype=float64)  # unit k, element j at k * width + j
    m = -math.inf  # the identity of max, for threads with no element
    for k in range(slots_per_thread):
        if k < mine:
            c = (lane + k * tpr) * width
            for j in range(width):
                v[k * width + j] = float(x[r, c + j])
                m = max(m, v[k * width + j])
    m = row_max(m, part_max, tpr)
    # After subtracting the max every exponent is <= 0: no overflow, and the largest term is 1.
    s = 0.0
    for k in range(slots_per_thread):
        if k < mine:
            for j in range(width):
                v[k * width + j] = math.exp(v[k * width + j] - m)
                s += v[k * width + j]
    s = row_sum(s, part_sum, tpr)
    # One division a thread. A row past the last sums to 0: Python's division would raise there
    # where a GPU's gives an unused inf.
    inv = 1.0 / s if units else 0.0
    for k in range(slots_per_thread):
        if k < mine:
            c = (lane + k * tpr) * width
            for j in range(width):
                y[r, c + j] = v[k * width + j] * inv


@cuda.jit(launch_bounds=MAX_ROW_THREADS_BACKWARD)
def softmax_backward_kernel(grad_y, y, grad_x, rows, cols, tpr, width, slots):
    # grad_x = y * (grad_y - sum(grad_y * y)): the forward's layout, one reduction.
    # kernel.cu sizes this kMaxRowThreadsBackward / 32; the forward's size keeps row_sum one signature
    # for `brrr translate` (the backward uses at most 16 of the 32 slots).
    part_sum = cuda.shared.array(MAX_ROW_WARPS, dtype=float64)
    lane = cuda.threadIdx.x % tpr
    row = cuda.blockIdx.x * (cuda.blockDim.x // tpr) + cuda.threadIdx.x // tpr
    units = cols // width if row < rows else 0
    mine = (units - lane + tpr - 1) // tpr if units > lane else 0
    r = row if row < rows else 0
    slots_per_thread = slots // width
    g = cuda.local.array(MAX_SLOTS, dtype=float64)
    yv = cuda.local.array(MAX_SLOTS, dtype=float64)
    dot = 0.0
    for k in range(slots_per_thread):
        if k < mine:
            c = (lane + k * tpr) * width
            for j in range(width):
                g[k * width + j] = float(grad_y[r, c + j])
                yv[k * width + j] = float(y[r, c + j])
                dot += g[k * width + j] * yv[k * width + j]
    dot = row_sum(dot, part_sum, tpr)
    for k in range(slots_per_thread):
        if k < mine:
            c = (lane + k * tpr) * width
            for j in range(width):
                grad_x[r, c + j] = yv[k * width + j] * (g[k * width + j] - dot)


# --- v1: one block of V1_THREADS per row, striding over it (rows of any length) ---------------


@cuda.jit(device=True)
def block_reduce_max(value, partial):
    # After the xor butterfly every lane of a warp holds the warp's value; every thread then folds
    # the per-warp values in one fixed order, so all threads agree bit for bit.
    value = warp_max(value)
    if cuda.threadIdx.x % 32 == 0:
        partial[cuda.threadIdx.x // 32] = value
    cuda.syncthreads()
    result = partial[0]
    for w in range(1, V1_WARPS):
        result = max(result, partial[w])
    # No thread may write `partial` for the next reduction until every thread has read this one.
    cuda.syncthreads()
    return result


@cuda.jit(device=True)
def block_reduce_sum(value, partial):
    value = warp_sum(value)
    if cuda.threadIdx.x % 32 == 0:
        partial[cuda.threadIdx.x // 32] = value
    cuda.syncthreads()
    result = partial[0]
    for w in range(1, V1_WARPS):
        result += partial[w]
    cuda.syncthreads()
    return result


@cuda.jit
def softmax_forward_v1_kernel(x, y, cols):
    partial = cuda.shared.array(V1_WARPS, dtype=float64)
    row = cuda.blockIdx.x
    m = -math.inf  # threads past the end of a short row add the identity
    for c in range(cuda.threadIdx.x, cols, V1_THREADS):
        m = max(m, float(x[row, c]))
    m = block_reduce_max(m, partial)
    total = 0.0
    for c in range(cuda.threadIdx.x, cols, V1_THREADS):
        total += math.exp(float(x[row, c]) - m)
    total = block_reduce_sum(total, partial)
    for c in range(cuda.threadIdx.x, cols, V1_THREADS):
        y[row, c] = math.exp(float(x[row, c]) - m) / total


@cuda.jit
def softmax_backward_v1_kernel(grad_y, y, grad_x, cols):
    partial = cuda.shared.array(V1_WARPS, dtype=float64)
    row = cuda.blockIdx.x
    dot = 0.0
    for c in range(cuda.threadIdx.x, cols, V1_THREADS):
        dot += float(grad_y[row, c]) * float(y[row, c])
    dot = block_reduce_sum(dot, partial)
    for c in range(cuda.threadIdx.x, cols, V1_THREADS):
        grad_x[row, c] = float(y[row, c]) * (float(grad_y[row, c]) - dot)


# --- launchers ----------------------------------------------------------------------------


def row_shape(cols: int, slots: int) -> tuple[int, int]:
    """kernel.cu's row_shape: threads per row (a multiple of 32 covering the row), rows per block."""
    tpr = cdiv(cdiv(cols, slots), 32) * 32
    return tpr, (MIN_BLOCK_THREADS // tpr if tpr < MIN_BLOCK_THREADS else 1)


def _check_rows(t: torch.Tensor, name: str) -> None:
    # The kernels index [row, col]: any other rank would be misread, not broadcast.
    if t.dim() != 2:
        raise ValueError(f"softmax takes {name} as [rows, cols], got shape {tuple(t.shape)}")


def forward_v1(x: torch.Tensor) -> torch.Tensor:
    _check_rows(x, "x")
    x = x.contiguous()
    y = torch.empty_like(x)
    if x.numel():
        launch(softmax_forward_v1_kernel, x.shape[0], V1_THREADS, x, y, x.shape[1])
    return y


def forward(x: torch.Tensor) -> torch.Tensor:
    _check_rows(x, "x")
    x = x.contiguous()
    rows, cols = x.shape
    slots = SLOTS_DOUBLE if x.dtype == torch.float64 else SLOTS_FLOAT
    if cols > MAX_ROW_THREADS * slots:
        return forward_v1(x)
    y = torch.empty_like(x)
    if x.numel():
        tpr, rows_per_block = row_shape(cols, slots)
        pack = PACK_DOUBLE if x.dtype == torch.float64 else PACK_FLOAT
        width = pack if cols % pack == 0 else 1
        launch(softmax_forward_kernel, cdiv(rows, rows_per_block), tpr * rows_per_block, x, y, rows, cols, tpr, width,
               slots)
    return y


def backward(grad_y: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    _check_rows(y, "y")
    if grad_y.shape != y.shape:
        raise ValueError(f"grad_y and y must have one shape, got {tuple(grad_y.shape)} and {tuple(y.shape)}")
    grad_y, y = grad_y.contiguous(), y.contiguous()
    grad_x = torch.empty_like(y)
    rows, cols = y.shape
    if not y.numel():
        return grad_x
    slots = SLOTS_DOUBLE if y.dtype == torch.float64 else SLOTS_FLOAT
    if cols > MAX_ROW_THREADS_BACKWARD * slots:
        launch(softmax_backward_v1_kernel, rows, V1_THREADS, grad_y, y, grad_x, cols)
        return grad_x
    tpr, rows_per_block = row_shape(cols, slots)
    pack = PACK_DOUBLE if y.dtype == torch.float64 else PACK_FLOAT
    width = pack if cols % pack == 0 else 1
    launch(softmax_backward_kernel, cdiv(rows, rows_per_block), tpr * rows_per_block, grad_y, y, grad_x, rows, cols,
           tpr, width, slots)
    return grad_x
