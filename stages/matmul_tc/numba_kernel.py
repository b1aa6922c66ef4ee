"""Tensor-core matrix product, numba stage: kernel.cu's tiling with plain arithmetic.

numba has no tensor cores, no bfloat16 type and no asynchronous copies, so this stage computes the
same thing the way it can: each warp owns the output tiles an m16n8k16 `mma.sync` would give it, each
lane the four accumulators of each 16x8 tile that the PTX ISA assigns it (rows g and g + 8, columns
2t and 2t + 1, g = lane / 4, t = lane % 4), and the tiles are staged in shared memory by plain loads
with zeros past the edges. bfloat16 and float16 inputs are widened to float32 on the way in (exactly), so the
products are exact and the sums float32, added in k order as the CPU execution of kernel.cu adds
them, then rounded once to the 16-bit type: a tensor core's arithmetic. The warps of a block form a 2-D grid,
as in kernel.cu's v3 (2 x 4 warps of 64 x 32 on a 128 x 128 tile); the tiles are smaller (a 32 x 32
tile of 2 x 2 warps, each 16 x 16: one m16 row of two n8 tiles) because the simulator pays per thread.

One kernel computes c = A @ B for operands read through (row, column) strides, so backward reuses
it on b^T and a^T without copying them.
"""

import functools
from typing import Any

import torch
from numba import float32, float64

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
BM, BN, BK = 32, 32, 16  # a block's tile of c (rows, columns) and its step through k
WARPS_M, WARPS_N = 2, 2  # the block's warps, a WARPS_M x WARPS_N grid over its tile
WM, WN = BM // WARPS_M, BN // WARPS_N  # a warp's part: 16 rows (one m16 row of tiles), WN // 8 tiles of 16x8
THREADS = 32 * WARPS_M * WARPS_N
ACCUMULATORS = 4 * (WN // 8)  # a lane's: four for each 16x8 tile of its warp
MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y, which counts column tiles
SCALAR = {torch.float32: float32, torch.float64: float64}


@functools.cache
def fragment_matmul_kernel(dtype: Any) -> Any:
    # A factory per dtype, as kernel.cu's template: a shared array's dtype must be a constant.
    @cuda.jit
    def kernel(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n):
        a_s = cuda.shared.array((BM, BK), dtype)  # A's tile, [row][k]
        b_s = cuda.shared.array((BN, BK), dtype)  # B's tile transposed, [column][k], as mma's "col" operand
        acc = cuda.local.array(ACCUMULATORS, dtype)
        tid = cuda.threadIdx.x
        warp = tid // 32
        wm = warp // WARPS_N * WM  # the warp's part of the tile
        wn = warp % WARPS_N * WN
        g = tid % 32 // 4
        t = tid % 4
        row0 = cuda.blockIdx.x * BM
        col0 = cuda.blockIdx.y * BN
        for i in range(ACCUMULATORS):
            acc[i] = 0
        # Every thread runs the same trip counts and reaches each barrier: none returns early.
        for k0 in range(0, k, BK):
            for e in range(tid, BM * BK, THREADS):
                r = e // BK
                p = k0 + e % BK
                if row0 + r < m and p < k:
                    a_s[r, e % BK] = a[(row0 + r) * a_rs + p * a_cs]
                else:
                    a_s[r, e % BK] = 0  # past an edge, in both tiles: 0 * a stale NaN is NaN
            for e in range(tid, BN * BK, THREADS):
                j = e // BK
                p = k0 + e % BK
                if col0 + j < n and p < k:
                    b_s[j, e % BK] = b[p * b_rs + (col0 + j) * b_cs]
                else:
                    b_s[j, e % BK] = 0
            cuda.syncthreads()  # tiles loaded: every lane reads elements others wrote
            for kk in range(BK):
                for f in range(WN // 8):
                    for h in range(2):
                        for q in range(2):
                            acc[4 * f + 2 * h + q] += a_s[wm + g + 8 * h, kk] * b_s[wn + 8 * f + 2 * t + q, kk]
            cuda.syncthreads()  # tiles used: only now may the next k0 overwrite them
        for f in range(WN // 8):
            for h in range(2):
                for q in range(2):
                    row = row0 + wm + g + 8 * h
                    col = col0 + wn + 8 * f + 2 * t + q
                    if row < m and col < n:
                        c[row * n + col] = acc[4 * f + 2 * h + q]

    return kernel


def _product(a: torch.Tensor, a_strides: tuple[int, int], b: torch.Tensor, b_strides: tuple[int, int],
             m: int, k: int, n: int) -> torch.Tensor:
    """[m, k] @ [k, n] with each operand read from flat storage through (row, column) strides."""
    # bfloat16 and float16 are computed in float32, to which they widen exactly; c is rounded once at the end.
    work = torch.float32 if a.dtype == torch.bfloat16 or a.dtype == torch.float16 else a.dtype
    c = torch.empty((m, n), dtype=work, device=a.device)
    # K = 0 still launches: the kernel writes the zeros of an empty sum.
    if m and n:
        if cdiv(n, BN) > MAX_GRID_Y:
            raise ValueError(f"matmul_tc: {n} columns need {cdiv(n, BN)} column tiles, above the grid's {MAX_GRID_Y}")
        launch(fragment_matmul_kernel(SCALAR[work]), (cdiv(m, BM), cdiv(n, BN)), THREADS,
               a.to(work).view(-1), *a_strides, b.to(work).view(-1), *b_strides, c.view(-1), m, k, n)
    return c.to(a.dtype)


def _sizes(a: torch.Tensor, b: torch.Tensor) -> tuple[int, int, int]:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul_tc needs a [M, K] and b [K, N], got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"a and b must have one dtype, got {a.dtype} and {b.dtype}")
    return a.shape[0], a.shape[1], b.shape[1]


def forward(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    a, b = a.contiguous(), b.contiguous()
    m, k, n = _sizes(a, b)
    return _product(a, (k, 1), b, (n, 1), m, k, n)


def backward(grad_c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    grad_c, a, b = grad_c.contiguous(), a.contiguous(), b.contiguous()
    m, k, n = _sizes(a, b)
    if tuple(grad_c.shape) != (m, n):
        raise ValueError(f"grad_c must be [{m}, {n}], got {tuple(grad_c.shape)}")
    # b^T [n, k] is b's storage with the strides swapped: element (j, p) sits at p * n + j.
    grad_a = _product(grad_c, (n, 1), b, (1, n), m, n, k)
    # a^T [k, m] likewise: element (p, i) sits at i * k + p.
    grad_b = _product(a, (1, k), grad_c, (n, 1), k, m, n)
    return grad_a, grad_b
