"""Square, numba stage: a 2-D grid of 2-D blocks; runs in the CUDA simulator or on a GPU."""

import torch

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
BLOCK = (8, 8)  # (x, y): 64 threads, few enough that the simulator stays cheap
MAX_GRID_Y = 65535  # gridDim.y cannot exceed this; the kernels loop over the rows beyond


@cuda.jit
def square_forward_kernel(x, y, rows, cols):
    # x indexes columns, the fastest-moving dimension in memory, so neighbouring threads
    # touch neighbouring addresses.
    col, row = cuda.grid(2)
    if col >= cols:
        return
    for r in range(row, rows, cuda.gridDim.y * cuda.blockDim.y):
        v = x[r, col]
        y[r, col] = v * v


@cuda.jit
def square_backward_kernel(grad_y, x, grad_x, rows, cols):
    col, row = cuda.grid(2)
    if col >= cols:
        return
    for r in range(row, rows, cuda.gridDim.y * cuda.blockDim.y):
        grad_x[r, col] = 2.0 * float(x[r, col]) * float(grad_y[r, col])  # float(): as on a GPU (sim/floats.py)


def _grid(rows: int, cols: int) -> tuple[int, int]:
    return cdiv(cols, BLOCK[0]), min(cdiv(rows, BLOCK[1]), MAX_GRID_Y)


def _check_matrix(x: torch.Tensor) -> None:
    if x.dim() != 2:
        raise ValueError(f"square takes a 2-D matrix, got shape {tuple(x.shape)}")


def forward(x: torch.Tensor) -> torch.Tensor:
    _check_matrix(x)
    x = x.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    if x.numel():
        launch(square_forward_kernel, _grid(rows, cols), BLOCK, x, y, rows, cols)
    return y


def backward(grad_y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    _check_matrix(x)
    if grad_y.shape != x.shape:
        raise ValueError(f"grad_y has shape {tuple(grad_y.shape)}, x has {tuple(x.shape)}")
    grad_y, x = grad_y.contiguous(), x.contiguous()
    grad_x = torch.empty_like(x)
    rows, cols = x.shape
    if x.numel():
        launch(square_backward_kernel, _grid(rows, cols), BLOCK, grad_y, x, grad_x, rows, cols)
    return grad_x
