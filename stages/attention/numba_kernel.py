"""Causal attention, numba stage: kernel.cu's tiles and online softmax, with plain loads and shuffles.

numba has no cooperative groups and no asynchronous copies: the tiles kernel.cu stages with cp.async
are staged here by plain loads (zeros past the last row), and its cg::reduce over a warp is a
butterfly of shfl_xor_sync. The structure is kernel.cu's: forward gives each warp ROWS_PER_WARP query
rows and each lane one key of a KEYS-wide tile, folding each tile into a running max, sum and output
(the online softmax); backward computes delta = rowsum(grad_o * o), then grad_q a query block at a
time and grad_k, grad_v a key block at a time, recomputing the probabilities from the saved
logsumexp. Blocks are smaller than kernel.cu's (2 warps, not 4), as the simulator pays per thread.
Arithmetic is in float64 for both dtypes (elements read through float()); shared tiles hold the dtype.
"""

import functools
import math
from typing import Any

import torch
from numba import float32, float64

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
FULL = 0xFFFFFFFF
WARPS = 2
THREADS = 32 * WARPS
ROWS_PER_WARP = 2
ROWS = WARPS * ROWS_PER_WARP  # query rows a forward / grad_q block owns, key rows a grad_k block owns
KEYS = 32  # a tile's keys (forward, grad_q) or queries (grad_k): one a lane
MAX_D = 64  # kernel.cu's kMaxD
STRIDE = MAX_D + 1  # shared rows padded as kernel.cu's (there against bank conflicts)
DIMS = MAX_D // 32  # output dims a lane owns: lane, lane + 32
MAX_GRID_Y = 65535  # gridDim.y counts batch x heads
SCALAR = {torch.float32: float32, torch.float64: float64}


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


@cuda.jit(device=True)
def stage_rows(tile, x, base, row0, rows, t, d):
    """Rows row0.. of x[base:] (t rows of d) into tile[rows, STRIDE], zeros past row t."""
    for e in range(cuda.threadIdx.x, rows * d, THREADS):
        r = e // d
        c = e % d
        if row0 + r < t:
            tile[r, c] = x[base + (row0 + r) * d + c]
        else:
            tile[r, c] = 0


@functools.cache
def forward_kernel(dtype: Any) -> Any:
    @cuda.jit
    def kernel(q, k, v, o, lse, t, d, scale):
        q_s = cuda.shared.array((ROWS, STRIDE), dtype)
        k_s = cuda.shared.array((KEYS, STRIDE), dtype)
        v_s = cuda.shared.array((KEYS, STRIDE), dtype)
        p_s = cuda.shared.array((WARPS, KEYS), float64)
        m = cuda.local.array(ROWS_PER_WARP, float64)
        ell = cuda.local.array(ROWS_PER_WARP, float64)
        acc = cuda.local.array((ROWS_PER_WARP, DIMS), float64)
        warp = cuda.threadIdx.x // 32
        lane = cuda.threadIdx.x % 32
        base = cuda.blockIdx.y * t * d
        i0 = cuda.blockIdx.x * ROWS
        for r in range(ROWS_PER_WARP):
            m[r] = -math.inf
            ell[r] = 0.0
            for c in range(DIMS):
                acc[r, c] = 0.0
        stage_rows(q_s, q, base, i0, ROWS, t, d)
        # Causal: the block's last query sees keys up to itself, so no tile past it is read.
        for j0 in range(0, min(t, i0 + ROWS), KEYS):
            stage_rows(k_s, k, base, j0, KEYS, t, d)
            stage_rows(v_s, v, base, j0, KEYS, t, d)
            cuda.syncthreads()  # tiles staged: lanes read rows other threads loaded
            for r in range(ROWS_PER_WARP):
                row = warp * ROWS_PER_WARP + r
                i = i0 + row
                if i < t:  # the same for the whole warp: the shuffles below see all 32 lanes
                    x = -math.inf
                    if j0 + lane <= i:
                        dot = 0.0
                        for c in range(d):
                            dot += float(q_s[row, c]) * float(k_s[lane, c])
                        x = dot * scale
                    m_new = max(m[r], warp_max(x))
                    p = math.exp(x - m_new)
                    alpha = math.exp(m[r] - m_new)  # rescales what earlier tiles summed
                    ell[r] = ell[r] * alpha + warp_sum(p)
                    p_s[warp, lane] = p
                    cuda.syncwarp(FULL)  # every lane's p written before any lane reads them all
                    for c in range(DIMS):
                        dd = lane + 32 * c
                        if dd < d:
                            pv = 0.0
                            for jj in range(KEYS):
                                pv += p_s[warp, jj] * float(v_s[jj, dd])
                            acc[r, c] = acc[r, c] * alpha + pv
                    cuda.syncwarp(FULL)  # read before the next row overwrites p_s
                    m[r] = m_new
            cuda.syncthreads()  # tiles used: only now may the next j0 overwrite them
        for r in range(ROWS_PER_WARP):
            i = i0 + warp * ROWS_PER_WARP + r
            if i < t:
                for c in range(DIMS):
                    dd = lane + 32 * c
                    if dd < d:
                        o[base + i * d + dd] = acc[r, c] / ell[r]
                if lane == 0:
                    lse[cuda.blockIdx.y * t + i] = m[r] + math.log(ell[r])

    return kernel


@cuda.jit
def delta_kernel(grad_o, o, delta, rows, d):
    """delta[row] = sum(grad_o[row] * o[row]): a warp a row."""
    row = cuda.blockIdx.x * WARPS + cuda.threadIdx.x // 32
    lane = cuda.threadIdx.x % 32
    if row < rows:  # the same for the whole warp
        part = 0.0
        for c in range(lane, d, 32):
            part += float(grad_o[row * d + c]) * float(o[row * d + c])
        total = warp_sum(part)
        if lane == 0:
            delta[row] = total


@functools.cache
def grad_q_kernel(dtype: Any) -> Any:
    @cuda.jit
    def kernel(grad_o, q, k, v, lse, delta, grad_q, t, d, scale):
        q_s = cuda.shared.array((ROWS, STRIDE), dtype)
        do_s = cuda.shared.array((ROWS, STRIDE), dtype)
        k_s = cuda.shared.array((KEYS, STRIDE), dtype)
        v_s = cuda.shared.array((KEYS, STRIDE), dtype)
        ds_s = cuda.shared.array((WARPS, KEYS), float64)
        acc = cuda.local.array((ROWS_PER_WARP, DIMS), float64)
        warp = cuda.threadIdx.x // 32
        lane = cuda.threadIdx.x % 32
        base = cuda.blockIdx.y * t * d
        i0 = cuda.blockIdx.x * ROWS
        for r in range(ROWS_PER_WARP):
            for c in range(DIMS):
                acc[r, c] = 0.0
        stage_rows(q_s, q, base, i0, ROWS, t, d)
        stage_rows(do_s, grad_o, base, i0, ROWS, t, d)
        for j0 in range(0, min(t, i0 + ROWS), KEYS):
            stage_rows(k_s, k, base, j0, KEYS, t, d)
            stage_rows(v_s, v, base, j0, KEYS, t, d)
            cuda.syncthreads()
            for r in range(ROWS_PER_WARP):
                row = warp * ROWS_PER_WARP + r
                i = i0 + row
                if i < t:
                    ds = 0.0
                    if j0 + lane <= i:
                        s = 0.0
                        dp = 0.0
                        for c in range(d):
                            s += float(q_s[row, c]) * float(k_s[lane, c])
                            dp += float(do_s[row, c]) * float(v_s[lane, c])
                        p = math.exp(s * scale - float(lse[cuda.blockIdx.y * t + i]))
                        ds = p * (dp - float(delta[cuda.blockIdx.y * t + i]))
                    ds_s[warp, lane] = ds
                    cuda.syncwarp(FULL)
                    for c in range(DIMS):
                        dd = lane + 32 * c
                        if dd < d:
                            for jj in range(KEYS):
                                acc[r, c] += ds_s[warp, jj] * float(k_s[jj, dd])
                    cuda.syncwarp(FULL)
            cuda.syncthreads()
        for r in range(ROWS_PER_WARP):
            i = i0 + warp * ROWS_PER_WARP + r
            if i < t:
                for c in range(DIMS):
                    dd = lane + 32 * c
                    if dd < d:
                        grad_q[base + i * d + dd] = acc[r, c] * scale

    return kernel


@functools.cache
def grad_kv_kernel(dtype: Any) -> Any:
    @cuda.jit
    def kernel(grad_o, q, k, v, lse, delta, grad_k, grad_v, t, d, scale):
        k_s = cuda.shared.array((ROWS, STRIDE), dtype)
        v_s = cuda.shared.array((ROWS, STRIDE), dtype)
        q_s = cuda.shared.array((KEYS, STRIDE), dtype)
        do_s = cuda.shared.array((KEYS, STRIDE), dtype)
        p_s = cuda.shared.array((WARPS, KEYS), float64)
        ds_s = cuda.shared.array((WARPS, KEYS), float64)
        dk = cuda.local.array((ROWS_PER_WARP, DIMS), float64)
        dv = cuda.local.array((ROWS_PER_WARP, DIMS), float64)
        warp = cuda.threadIdx.x // 32
        lane = cuda.threadIdx.x % 32
        bh = cuda.blockIdx.y
        base = bh * t * d
        j0 = cuda.blockIdx.x * ROWS  # this block's keys
        for r in range(ROWS_PER_WARP):
            for c in range(DIMS):
                dk[r, c] = 0.0
                dv[r, c] = 0.0
        stage_rows(k_s, k, base, j0, ROWS, t, d)
        stage_rows(v_s, v, base, j0, ROWS, t, d)
        # Causal: only queries at or after the block's first key see its keys.
        for i0 in range(j0 // KEYS * KEYS, t, KEYS):
            stage_rows(q_s, q, base, i0, KEYS, t, d)
            stage_rows(do_s, grad_o, base, i0, KEYS, t, d)
            cuda.syncthreads()
            for r in range(ROWS_PER_WARP):
                row = warp * ROWS_PER_WARP + r
                j = j0 + row
                if j < t:
                    i = i0 + lane
                    p = 0.0
                    ds = 0.0
                    if j <= i and i < t:
                        s = 0.0
                        dp = 0.0
                        for c in range(d):
                            s += float(q_s[lane, c]) * float(k_s[row, c])
                            dp += float(do_s[lane, c]) * float(v_s[row, c])
                        p = math.exp(s * scale - float(lse[bh * t + i]))
                        ds = p * (dp - float(delta[bh * t + i]))
                    p_s[warp, lane] = p
                    ds_s[warp, lane] = ds
                    cuda.syncwarp(FULL)
                    for c in range(DIMS):
                        dd = lane + 32 * c
                        if dd < d:
                            for ii in range(KEYS):
                                dv[r, c] += p_s[warp, ii] * float(do_s[ii, dd])
                                dk[r, c] += ds_s[warp, ii] * float(q_s[ii, dd])
                    cuda.syncwarp(FULL)
            cuda.syncthreads()
        for r in range(ROWS_PER_WARP):
            j = j0 + warp * ROWS_PER_WARP + r
            if j < t:
                for c in range(DIMS):
                    dd = lane + 32 * c
                    if dd < d:
                        grad_k[base + j * d + dd] = dk[r, c] * scale
                        grad_v[base + j * d + dd] = dv[r, c]

    return kernel


def _sizes(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[int, int, int]:
    if q.dim() != 3 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"attention needs q, k, v of one shape [BH, T, D], got {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)}")
    bh, t, d = q.shape
    if d > MAX_D:
        raise ValueError(f"attention: head dim {d} is above the kernels' {MAX_D}")
    if bh > MAX_GRID_Y:
        raise ValueError(f"attention: {bh} batch x heads exceed the grid's {MAX_GRID_Y}")
    return bh, t, d


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    bh, t, d = _sizes(q, k, v)
    o = torch.empty_like(q)
    lse = torch.empty((bh, t), dtype=q.dtype, device=q.device)
    if o.numel():
        launch(forward_kernel(SCALAR[q.dtype]), (cdiv(t, ROWS), bh), THREADS, q.view(-1), k.view(-1), v.view(-1),
               o.view(-1), lse.view(-1), t, d, 1.0 / math.sqrt(d))
    return o, lse


def backward(grad_o: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor,
             lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    grad_o, q, k, v, o, lse = (x.contiguous() for x in (grad_o, q, k, v, o, lse))
    bh, t, d = _sizes(q, k, v)
    grad_q, grad_k, grad_v = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if not q.numel():
        return grad_q, grad_k, grad_v
    delta = torch.empty((bh, t), dtype=q.dtype, device=q.device)
    launch(delta_kernel, cdiv(bh * t, WARPS), THREADS, grad_o.view(-1), o.view(-1), delta.view(-1), bh * t, d)
    scale = 1.0 / math.sqrt(d)
    launch(grad_q_kernel(SCALAR[q.dtype]), (cdiv(t, ROWS), bh), THREADS, grad_o.view(-1), q.view(-1), k.view(-1),
           v.view(-1), lse.view(-1), delta.view(-1), grad_q.view(-1), t, d, scale)
    launch(grad_kv_kernel(SCALAR[q.dtype]), (cdiv(t, ROWS), bh), THREADS, grad_o.view(-1), q.view(-1), k.view(-1),
           v.view(-1), lse.view(-1), delta.view(-1), grad_k.view(-1), grad_v.view(-1), t, d, scale)
    return grad_q, grad_k, grad_v
