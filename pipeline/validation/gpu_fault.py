"""A kernel that faults on the GPU (an illegal address, an illegal instruction, a trap): one FAIL row.

CUDA's errors of this kind are sticky: once a kernel faults, every later call in the process fails
with the same error, wherever it is made, and often far from the call that launched the kernel
(launches are asynchronous). So a stage call on a GPU is followed by a wait for its kernels, and a
CUDA error there, or anywhere later, unwinds the whole op (as a BaseException, past the per-case
handlers that would otherwise charge each later case with the same error) to the runner, which
keeps the rows so far and adds one naming the call that faulted. Nothing more runs on the GPU in
that process; an op validated after it there gets a row saying why it did not run.
"""

from __future__ import annotations

import torch

from ..base.errors import is_device_fault
from ..verdict.report import FAIL, Row


class GpuContextLost(BaseException):
    """A kernel faulted on the GPU; this process's CUDA context is unusable from here on."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(message)
        self.message, self.where = message, where


_lost_by: list[str] = []  # the op whose fault lost this process's context, once one has


def is_cuda_fault(error: BaseException) -> bool:
    return isinstance(error, GpuContextLost) or is_device_fault(error)


def synchronized(tensors: list[torch.Tensor], where: str) -> None:
    """Wait for the kernels a call launched (where its results live), so a fault is charged to it."""
    if any(t.is_cuda for t in tensors if isinstance(t, torch.Tensor)):
        try:
            torch.cuda.synchronize()
        except RuntimeError as e:
            if is_cuda_fault(e):
                raise GpuContextLost(_first_line(e), where) from e
            raise


def lost_row(op: str, error: BaseException) -> Row:
    """The row of the fault that lost the GPU, and the record that it is lost in this process."""
    _lost_by.append(op)
    where = error.where if isinstance(error, GpuContextLost) else "a call on the GPU"
    message = error.message if isinstance(error, GpuContextLost) else _first_line(error)
    return Row(op, "cuda", "GPU fault", "-", FAIL, detail=(
        f"{where} faulted on the GPU: {message}. CUDA's error is sticky, so the op's remaining checks did not run "
        f"on the GPU. The line: `brrr validate {op} --stage cuda --cuda-on-cpu` (the CPU execution names it), or "
        f"`brrr sanitize {op}` (compute-sanitizer on the GPU)"))


def refused_row(op: str) -> Row | None:
    """A row for an op this process cannot run on the GPU any more, or None where it can."""
    if not _lost_by or not torch.cuda.is_available():
        return None
    return Row(op, "cuda", "GPU fault", "-", FAIL, detail=(
        f"not run: {_lost_by[0]}'s kernel faulted on the GPU earlier in this process, and CUDA's error is sticky; "
        f"`brrr validate {op}` on its own gives its verdict"))


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
