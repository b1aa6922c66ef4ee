"""Matrix product, numba stage: the shared-memory tiled kernel; runs in the CUDA simulator or on a GPU.

One kernel computes c = A @ B for operands read through (row, column) strides, so the backward
pass reuses it on b^T and a^T without copying them: a transposed view is the same memory with
its two strides swapped.
"""

import functools
from typing import Any

import torch
from numba import float32, float64

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
# 4x4 threads a block: the simulator runs every thread of a block as a Python thread and pays
# for each barrier, so a small tile keeps validation fast while sizes still straddle tiles.
TILE = 4
MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y; taller outputs loop over row tiles
SCALAR = {torch.float32: float32, torch.float64: float64}


@functools.cache
def tiled_matmul_kernel(dtype: Any) -> Any:
    # A factory per dtype, as kernel.cu's template: a shared array's dtype must be a constant.
    @cuda.jit
    def kernel(a, a_rs, a_cs, b, b_rs, b_cs, c, m, k, n):
        a_tile = cuda.shared.array((TILE, TILE), dtype)
        b_tile = cuda.shared.array((TILE, TILE), dtype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        col = cuda.blockIdx.x * TILE + tx
        # Every thread runs the same trip counts, out-of-range ones too: they load the zeros
        # of boundary tiles and must reach each barrier, so none may return early.
        for tile_row in range(cuda.blockIdx.y, (m + TILE - 1) // TILE, cuda.gridDim.y):
            row = tile_row * TILE + ty
            acc = dtype(0)
            for k0 in range(0, k, TILE):
                ka = k0 + tx
                if row < m and ka < k:
                    a_tile[ty, tx] = a[row * a_rs + ka * a_cs]
                else:
                    a_tile[ty, tx] = 0  # past the edge, in both tiles: 0 * a stale NaN is NaN
                kb = k0 + ty
                if kb < k and col < n:
                    b_tile[ty, tx] = b[kb * b_rs + col * b_cs]
                else:
                    b_tile[ty, tx] = 0
                cuda.syncthreads()  # tiles loaded: every thread reads elements others wrote
                for kk in range(TILE):
                    acc += a_tile[ty, kk] * b_tile[kk, tx]
                cuda.syncthreads()  # tiles used: only now may the next k0 overwrite them
            if row < m and col < n:
                c[row * n + col] = acc

    return kernel


def _product(a: torch.Tensor, a_strides: tuple[int, int], b: torch.Tensor, b_strides: tuple[int, int],
             m: int, k: int, n: int) -> torch.Tensor:
    """[m, k] @ [k, n] with each operand read from flat storage through (row, column) strides."""
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    # K = 0 still launches: the kernel writes the zeros of an empty sum.
    if m and n:
        grid = (cdiv(n, TILE), min(cdiv(m, TILE), MAX_GRID_Y))
        launch(tiled_matmul_kernel(SCALAR[a.dtype]), grid, (TILE, TILE),
               a.view(-1), *a_strides, b.view(-1), *b_strides, c.view(-1), m, k, n)
    return c


def _sizes(a: torch.Tensor, b: torch.Tensor) -> tuple[int, int, int]:
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul needs a [M, K] and b [K, N], got {tuple(a.shape)} and {tuple(b.shape)}")
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
    # A warp then loads b^T's tile n elements apart, not coalesced: the price of no copy.
    grad_a = _product(grad_c, (n, 1), b, (1, n), m, n, k)
    # a^T [k, m] likewise: element (p, i) sits at i * k + p.
    grad_b = _product(a, (1, k), grad_c, (n, 1), k, m, n)
    return grad_a, grad_b
