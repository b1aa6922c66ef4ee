"""Layer norm over the last dim, numba stage: kernel.cu's kernels, with its names and its paths.

Forward, as kernel.cu's launcher picks (rows measured in 16-byte packs: 4 floats, 2 doubles):
- rows of up to WARP_PACKS x 32 whole packs: a warp per row, WARP_ROWS rows a block, each lane
  holding packs lane, lane + 32, ... (layernorm_forward_warp_kernel; no shared memory, no barrier);
- longer rows of whole packs: a block per row (layernorm_forward_block_kernel), the warps' sums
  meeting in shared memory;
- any other width: v1, a block of THREADS per row striding over it (layernorm_forward_kernel).
Backward, as kernel.cu's launcher picks:
- rows of whole packs, up to 4 x V4_THREADS of them: v4 (layernorm_backward_v4_kernel), a grid of
  `parts` blocks taking rows parts apart, each thread holding packs t, t + stride, ... (1, 2 or 4 of
  them, as few as keep the block within V4_THREADS), the two row sums meeting over the block in two
  slots a warp alternating by row (lane l of every warp reads warp l's slot, then a butterfly), and
  the thread's own weight and bias column sums kept across its rows; each block then writes its sums
  as a row of `partial` ([2 parts, cols]: grad_weight's, then grad_bias's) and
  layernorm_backward_reduce_kernel adds each column's parts in REDUCE_GROUPS interleaved groups, then
  the groups in order. kernel.cu stages the rows through shared memory with
  cp.async, which numba has no counterpart for: here each thread reads its packs from memory, in the
  same order. v2 (per-block sums in shared memory) is not mirrored: kernel.cu's launcher only takes it
  where v4 cannot, and no such row fits in both.
- any other row: v1, a block per row for grad_x, and (COLUMNS x ROW_GROUPS) blocks whose threads
  split the rows of COLUMNS columns for grad_weight and grad_bias, then fold the groups.

Some constants are smaller than kernel.cu's, because the simulator pays for every thread: THREADS
is 64 (kThreads 256), ROW_GROUPS and REDUCE_GROUPS 4 (kRowGroups and kReduceGroups 16), V4_THREADS
64 (kV4Threads 512) and V4_PARTS 4 (kernel.cu: as many blocks as fit on the GPU at once). The
structure, the reductions and the mapping for those sizes are the same. Statistics and sums are float64 for float32 and float64
inputs alike (see reference.py for why); elements are read through float() for the reason
softmax's numba_kernel.py gives.
"""

import math

import torch

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
from numba import float64  # noqa: E402  (after import_cuda, which readies numpy for numba)

FULL = 0xFFFFFFFF
THREADS = 64  # kernel.cu's kThreads is 256 (see the module doc)
WARPS = THREADS // 32
COLUMNS = 32  # kColumns: a warp reads 32 neighbouring columns of a row
ROW_GROUPS = 4  # kernel.cu's kRowGroups is 16 (see the module doc)
MAX_PACKS = 8  # kMaxPacks<float>, kMaxPacks<double>
MAX_THREADS = 1024  # kMaxThreads
MAX_WARPS = MAX_THREADS // 32  # a shared array's size must be a name on a GPU, not arithmetic
TARGET_THREADS = 256  # kTargetThreads
WARP_PACKS = 4  # kWarpPacks
WARP_ROWS = 8  # kWarpRows
PACK_FLOAT = 4  # elements of a 16-byte pack
PACK_DOUBLE = 2
MAX_VALUES = MAX_PACKS * PACK_FLOAT  # a thread's packs, in elements
V4_THREADS = 64  # kernel.cu's kV4Threads is 512 (see the module doc)
V4_MAX_PACKS = 4  # packs a thread in v4: 1, 2 or 4
V4_VALUES = V4_MAX_PACKS * PACK_FLOAT
V4_PARTS = 4  # kernel.cu: as many blocks as fit on the GPU at once (see the module doc)
REDUCE_COLUMNS = 32  # kReduceColumns
REDUCE_GROUPS = 4  # kernel.cu's kReduceGroups is 16 (see the module doc)


@cuda.jit(device=True)
def warp_sum(v):
    offset = 16
    while offset > 0:
        v += cuda.shfl_xor_sync(FULL, v, offset)
        offset //= 2
    return v


# ---- v1: one block per row, threads striding over it (any width, any alignment) --------------


@cuda.jit(device=True)
def block_sum(value, partial):
    # After the xor butterfly all lanes of a warp hold the same value, and every thread then adds
    # the per-warp sums in one fixed order, so all threads agree bit for bit.
    value = warp_sum(value)
    if cuda.threadIdx.x % 32 == 0:
        partial[cuda.threadIdx.x // 32] = value
    cuda.syncthreads()
    result = partial[0]
    for w in range(1, WARPS):
        result += partial[w]
    # No thread may write `partial` for the next reduction until every thread has read this one.
    cuda.syncthreads()
    return result


@cuda.jit
def layernorm_forward_kernel(x, weight, bias, y, mean, rstd, cols, eps):
    partial = cuda.shared.array(WARPS, dtype=float64)
    row = cuda.blockIdx.x
    total = 0.0
    for c in range(cuda.threadIdx.x, cols, THREADS):
        total += float(x[row, c])
    mu = block_sum(total, partial) / cols
    # Second pass over the row for the centred sum of squares: E[x^2] - E[x]^2 would cancel.
    squares = 0.0
    for c in range(cuda.threadIdx.x, cols, THREADS):
        d = float(x[row, c]) - mu
        squares += d * d
    r = 1.0 / math.sqrt(block_sum(squares, partial) / cols + eps)
    for c in range(cuda.threadIdx.x, cols, THREADS):
        y[row, c] = (float(x[row, c]) - mu) * r * float(weight[c]) + float(bias[c])
    if cuda.threadIdx.x == 0:
        mean[row] = mu
        rstd[row] = r


# ---- v2: the row held by its threads, as packs --------------------------------------------------


@cuda.jit(device=True)
def row_sum(value, partial, whole_block):
    # The sum over the threads that share a row: a warp, or a whole block with one slot per warp
    # in `partial` (each call site has its own array, so one barrier a sum suffices).
    value = warp_sum(value)
    if whole_block:
        if cuda.threadIdx.x % 32 == 0:
            partial[cuda.threadIdx.x // 32] = value
        cuda.syncthreads()
        value = partial[0]
        for w in range(1, cuda.blockDim.x // 32):
            value += partial[w]
    return value


@cuda.jit(device=True)
def normalise_row(x, weight, bias, y, mean, rstd, row, packs, width, cols, eps, t, stride, k_packs,
                  partial_sum, partial_squares, whole_block):
    # Thread t holds packs t, t + stride, ..., up to k_packs of them; those at or past `packs` are
    # not loaded and never used. Every thread of a block reaches both row_sum calls.
    v = cuda.local.array(MAX_VALUES, dtype=float64)  # pack k, element j at k * width + j
    for k in range(k_packs):
        p = k * stride + t
        if p < packs:
            for j in range(width):
                v[k * width + j] = float(x[row, p * width + j])
    # Each pack summed apart, then the packs.
    total = 0.0
    for k in range(k_packs):
        if k * stride + t < packs:
            s = v[k * width]
            for j in range(1, width):
                s += v[k * width + j]
            total += s
    mu = row_sum(total, partial_sum, whole_block) / cols
    # Centred squares from the same values: two passes, never E[x^2] - E[x]^2, which cancels.
    squares = 0.0
    for k in range(k_packs):
        if k * stride + t < packs:
            s = 0.0
            for j in range(width):
                d = v[k * width + j] - mu
                s += d * d
            squares += s
    r = 1.0 / math.sqrt(row_sum(squares, partial_squares, whole_block) / cols + eps)
    for k in range(k_packs):
        p = k * stride + t
        if p < packs:
            for j in range(width):
                c = p * width + j
                y[row, c] = (v[k * width + j] - mu) * r * float(weight[c]) + float(bias[c])
    if t == 0:
        mean[row] = mu
        rstd[row] = r


@cuda.jit(launch_bounds=32 * WARP_ROWS)  # as kernel.cu's __launch_bounds__
def layernorm_forward_warp_kernel(x, weight, bias, y, mean, rstd, rows, cols, eps, width, k_packs):
    # Warp threadIdx.y of block b owns row b * WARP_ROWS + y.
    row = cuda.blockIdx.x * WARP_ROWS + cuda.threadIdx.y
    # A whole warp leaves together, and the warp path has no block barrier to miss.
    if row >= rows:
        return
    packs = cols // width
    # Never touched (a warp sums without shared memory; kernel.cu passes nullptr): arrays of the block
    # kernel's type, so normalise_row has one signature.
    unused_sum = cuda.shared.array(MAX_WARPS, dtype=float64)
    unused_squares = cuda.shared.array(MAX_WARPS, dtype=float64)
    t = cuda.threadIdx.x
    stride = cuda.blockDim.x  # 32: a warp per row
    whole_block = 0  # an int, as in the block kernel: one signature for normalise_row
    normalise_row(x, weight, bias, y, mean, rstd, row, packs, width, cols, eps, t, stride, k_packs,
                  unused_sum, unused_squares, whole_block)


@cuda.jit(launch_bounds=MAX_THREADS)
def layernorm_forward_block_kernel(x, weight, bias, y, mean, rstd, cols, eps, width, k_packs):
    partial_sum = cuda.shared.array(MAX_WARPS, dtype=float64)
    partial_squares = cuda.shared.array(MAX_WARPS, dtype=float64)
    packs = cols // width
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    stride = cuda.blockDim.x
    whole_block = 1
    normalise_row(x, weight, bias, y, mean, rstd, row, packs, width, cols, eps, t, stride, k_packs,
                  partial_sum, partial_squares, whole_block)


# ---- backward ---------------------------------------------------------------------------------


@cuda.jit
def layernorm_backward_x_kernel(grad_y, x, weight, mean, rstd, grad_x, cols):
    partial = cuda.shared.array(WARPS, dtype=float64)
    row = cuda.blockIdx.x
    mu = mean[row]
    r = rstd[row]
    sum_g = 0.0
    sum_gx = 0.0
    for c in range(cuda.threadIdx.x, cols, THREADS):
        gxhat = float(grad_y[row, c]) * float(weight[c])
        sum_g += gxhat
        sum_gx += gxhat * (float(x[row, c]) - mu) * r
    mean_g = block_sum(sum_g, partial) / cols
    mean_gx = block_sum(sum_gx, partial) / cols
    for c in range(cuda.threadIdx.x, cols, THREADS):
        xhat = (float(x[row, c]) - mu) * r
        grad_x[row, c] = r * (float(grad_y[row, c]) * float(weight[c]) - mean_g - xhat * mean_gx)


@cuda.jit
def layernorm_backward_weight_kernel(grad_y, x, mean, rstd, grad_weight, grad_bias, rows, cols):
    # Block (COLUMNS, groups), groups = blockDim.y <= ROW_GROUPS (fewer for fewer rows): thread (tx, ty)
    # sums rows ty, ty + groups, ... of column blockIdx.x * COLUMNS + tx, then the ty == 0 thread adds
    # the groups' partials in order. No
    # atomics: the same bits on every run.
    partial_w = cuda.shared.array((ROW_GROUPS, COLUMNS), dtype=float64)
    partial_b = cuda.shared.array((ROW_GROUPS, COLUMNS), dtype=float64)
    c = cuda.blockIdx.x * COLUMNS + cuda.threadIdx.x
    gw = 0.0
    gb = 0.0
    if c < cols:
        for row in range(cuda.threadIdx.y, rows, cuda.blockDim.y):
            g = float(grad_y[row, c])
            gw += g * (float(x[row, c]) - mean[row]) * rstd[row]
            gb += g
    # Every thread stores, in range or not, so the barrier below is reached by the whole block.
    partial_w[cuda.threadIdx.y, cuda.threadIdx.x] = gw
    partial_b[cuda.threadIdx.y, cuda.threadIdx.x] = gb
    cuda.syncthreads()
    if cuda.threadIdx.y == 0 and c < cols:
        for k in range(1, cuda.blockDim.y):
            gw += partial_w[k, cuda.threadIdx.x]
            gb += partial_b[k, cuda.threadIdx.x]
        grad_weight[c] = gw
        grad_bias[c] = gb


# ---- backward v4: a grid of `parts` blocks, each thread's column sums kept across its rows -------


@cuda.jit
def layernorm_backward_v4_kernel(grad_y, x, weight, mean, rstd, grad_x, partial, rows, cols, width, k_packs):
    # Two slots a warp for each row sum, alternating by row: a thread may write row i + 1's slots while
    # a slower one still reads row i's, and row i + 2's only after all have passed row i + 1's barrier.
    partial_g = cuda.shared.array((2, MAX_WARPS), dtype=float64)
    partial_gx = cuda.shared.array((2, MAX_WARPS), dtype=float64)
    packs = cols // width
    t = cuda.threadIdx.x
    lane = t % 32
    stride = cuda.blockDim.x
    warps = stride // 32
    sum_w = cuda.local.array(V4_VALUES, dtype=float64)  # pack k, element j at k * width + j
    sum_b = cuda.local.array(V4_VALUES, dtype=float64)
    for i in range(V4_VALUES):
        sum_w[i] = 0.0
        sum_b[i] = 0.0
    parity = 0
    row = cuda.blockIdx.x
    while row < rows:
        mu = mean[row]
        r = rstd[row]
        total_wg = 0.0
        total_wgx = 0.0
        for k in range(k_packs):
            p = k * stride + t
            if p < packs:
                for j in range(width):
                    c = p * width + j
                    wg = float(grad_y[row, c]) * float(weight[c])
                    total_wg += wg
                    total_wgx += wg * ((float(x[row, c]) - mu) * r)
        total_wg = warp_sum(total_wg)
        total_wgx = warp_sum(total_wgx)
        if t % 32 == 0:
            partial_g[parity, t // 32] = total_wg
            partial_gx[parity, t // 32] = total_wgx
        cuda.syncthreads()
        # Lane l takes warp l's sum and the butterfly adds them: every warp the same bits.
        total_wg = warp_sum(partial_g[parity, lane] if lane < warps else 0.0)
        total_wgx = warp_sum(partial_gx[parity, lane] if lane < warps else 0.0)
        parity ^= 1
        r_mean_g = r * (total_wg / cols)
        r_mean_gx = r * (total_wgx / cols)
        for k in range(k_packs):
            p = k * stride + t
            if p < packs:
                for j in range(width):
                    c = p * width + j
                    gy = float(grad_y[row, c])
                    xhat = (float(x[row, c]) - mu) * r
                    grad_x[row, c] = r * (gy * float(weight[c])) - r_mean_g - xhat * r_mean_gx
                    sum_w[k * width + j] += gy * xhat
                    sum_b[k * width + j] += gy
        row += cuda.gridDim.x
    # This block's row of partial (grad_weight's sums in rows 0 .. parts - 1, grad_bias's after them).
    parts = cuda.gridDim.x
    for k in range(k_packs):
        p = k * stride + t
        if p < packs:
            for j in range(width):
                partial[cuda.blockIdx.x, p * width + j] = sum_w[k * width + j]
                partial[parts + cuda.blockIdx.x, p * width + j] = sum_b[k * width + j]


@cuda.jit
def layernorm_backward_reduce_kernel(partial, grad_weight, grad_bias, parts, cols):
    # Block (REDUCE_COLUMNS, REDUCE_GROUPS) over 2 cols columns (grad_weight's, then grad_bias's): thread
    # (tx, ty) sums parts ty, ty + REDUCE_GROUPS, ... of its column, then the ty == 0 thread adds the
    # groups in order. No atomics: the same bits on every run.
    groups = cuda.shared.array((REDUCE_GROUPS, REDUCE_COLUMNS), dtype=float64)
    c = cuda.blockIdx.x * REDUCE_COLUMNS + cuda.threadIdx.x
    bias_column = c >= cols
    column = c - cols if bias_column else c
    first = parts if bias_column else 0
    total = 0.0
    if c < 2 * cols:
        for b in range(cuda.threadIdx.y, parts, REDUCE_GROUPS):
            total += float(partial[first + b, column])
    # Every thread stores, in range or not, so the barrier is reached by the whole block.
    groups[cuda.threadIdx.y, cuda.threadIdx.x] = total
    cuda.syncthreads()
    if cuda.threadIdx.y == 0 and c < 2 * cols:
        for k in range(1, REDUCE_GROUPS):
            total += groups[k, cuda.threadIdx.x]
        if bias_column:
            grad_bias[column] = total
        else:
            grad_weight[column] = total


def _v4_packs(cols: int, width: int) -> int:
    """kernel.cu's v4_shape: packs a thread (1, 2 or 4, as few as keep a block within V4_THREADS), 0
    where v4 does not take the row."""
    if not cols or cols % width:
        return 0
    packs = cols // width
    if packs <= V4_THREADS:
        return 1
    if packs <= 2 * V4_THREADS:
        return 2
    return V4_MAX_PACKS if packs <= V4_MAX_PACKS * V4_THREADS else 0


# ---- launchers --------------------------------------------------------------------------------


def _check_shapes(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> None:
    # The kernels index x[row, col] and weight[col]: other shapes would be misread, not broadcast.
    if x.dim() != 2 or weight.shape != (x.shape[1],) or bias.shape != weight.shape:
        raise ValueError(f"layernorm takes x [rows, cols] and weight, bias [cols], got {tuple(x.shape)}, "
                         f"{tuple(weight.shape)}, {tuple(bias.shape)}")


def forward_v1(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> tuple[torch.Tensor, ...]:
    return _forward(x, weight, bias, eps, True)


def forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> tuple[torch.Tensor, ...]:
    return _forward(x, weight, bias, eps, False)


def _forward(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float,
             v1: bool) -> tuple[torch.Tensor, ...]:
    _check_shapes(x, weight, bias)
    x, weight, bias = x.contiguous(), weight.contiguous(), bias.contiguous()
    rows, cols = x.shape
    y = torch.empty_like(x)
    mean = torch.empty(rows, dtype=torch.float64, device=x.device)
    rstd = torch.empty(rows, dtype=torch.float64, device=x.device)
    if not x.numel():
        return y, mean, rstd
    width = PACK_DOUBLE if x.dtype == torch.float64 else PACK_FLOAT
    packs = cols // width
    # cols a whole number of packs puts every row on a 16-byte boundary (kernel.cu also checks the
    # pointers, which torch's allocations align; numba reads element by element).
    packed = not v1 and cols % width == 0
    if packed and packs <= 32 * WARP_PACKS:
        k_packs = 1 if packs <= 32 else 2 if packs <= 64 else 4
        launch(layernorm_forward_warp_kernel, cdiv(rows, WARP_ROWS), (32, WARP_ROWS), x, weight, bias, y, mean, rstd,
               rows, cols, eps, width, k_packs)
    elif packed and packs <= MAX_THREADS * MAX_PACKS:
        k_packs = 2 if packs <= 2 * TARGET_THREADS else 4 if packs <= 4 * TARGET_THREADS else 8
        threads = cdiv(cdiv(packs, k_packs), 32) * 32
        launch(layernorm_forward_block_kernel, rows, threads, x, weight, bias, y, mean, rstd, cols, eps, width,
               k_packs)
    else:
        launch(layernorm_forward_kernel, rows, THREADS, x, weight, bias, y, mean, rstd, cols, eps)
    return y, mean, rstd


def backward(grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
             eps: float) -> tuple[torch.Tensor, ...]:
    _check_shapes(x, weight, weight)
    if grad_y.shape != x.shape or mean.shape != (x.shape[0],) or rstd.shape != mean.shape:
        raise ValueError(f"layernorm backward takes grad_y like x {tuple(x.shape)} and mean, rstd [rows], got "
                         f"{tuple(grad_y.shape)}, {tuple(mean.shape)}, {tuple(rstd.shape)}")
    grad_y, x, weight = grad_y.contiguous(), x.contiguous(), weight.contiguous()
    mean, rstd = mean.contiguous(), rstd.contiguous()
    rows, cols = x.shape
    grad_x = torch.empty_like(x)
    grad_weight = torch.empty_like(weight)
    grad_bias = torch.empty_like(weight)
    width = PACK_DOUBLE if x.dtype == torch.float64 else PACK_FLOAT
    k_packs = _v4_packs(cols, width)
    if rows and k_packs:
        threads = cdiv(cdiv(cols // width, k_packs), 32) * 32
        parts = min(rows, V4_PARTS)
        partial = torch.empty(2 * parts, cols, dtype=torch.float64, device=x.device)
        launch(layernorm_backward_v4_kernel, parts, threads, grad_y, x, weight, mean, rstd, grad_x, partial, rows, cols,
               width, k_packs)
        launch(layernorm_backward_reduce_kernel, cdiv(2 * cols, REDUCE_COLUMNS), (REDUCE_COLUMNS, REDUCE_GROUPS),
               partial, grad_weight, grad_bias, parts, cols)
        return grad_x, grad_weight, grad_bias
    if x.numel():
        launch(layernorm_backward_x_kernel, rows, THREADS, grad_y, x, weight, mean, rstd, grad_x, cols)
    if cols:
        # With no rows the column sums are empty sums: the kernel writes their zeros.
        groups = min(ROW_GROUPS, max(rows, 1))  # one row group a row, up to ROW_GROUPS
        launch(layernorm_backward_weight_kernel, cdiv(cols, COLUMNS), (COLUMNS, groups), grad_y, x, mean, rstd,
               grad_weight, grad_bias, rows, cols)
    return grad_x, grad_weight, grad_bias
