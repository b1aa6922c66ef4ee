"""Element-wise comparison of a stage's tensors against expected ones (faults.py: its exceptions).

Every comparison yields the numbers a report row needs: max abs and max rel error, and the
worst element (its index, the input value there, expected, got), where "worst" means the
element that most exceeds the tolerance, or the largest error when all are within it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .tolerances import Tolerance
from .writers import writer_of


@dataclass
class Worst:
    tensor: str
    index: tuple[int, ...]
    flat_index: int
    expected: float
    got: float
    shape: tuple[int, ...] = ()
    input: float | None = None
    case: str = ""
    block: tuple[int, ...] | None = None
    thread: tuple[int, ...] | None = None
    kernel: str | None = None  # the kernel whose thread wrote it, where the simulator saw the write


@dataclass
class Comparison:
    ok: bool
    max_abs: float
    max_rel: float
    excess: float  # worst |err| / allowed; > 1 means out of tolerance
    worst: Worst | None
    reason: str = ""
    bad_count: int = 0
    shape_ok: bool = True


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for dim in reversed(shape):
        index.append(flat % dim if dim else 0)
        flat //= dim if dim else 1
    return tuple(reversed(index))


def compare(name: str, got: torch.Tensor, expected: torch.Tensor, tol: Tolerance,
            probe: torch.Tensor | None = None) -> Comparison:
    """Compare `got` with `expected` (same shape; expected may be a wider dtype).

    `probe` is an input of the same shape whose value at the worst index is reported.
    """
    if tuple(got.shape) != tuple(expected.shape):
        return Comparison(False, float("inf"), float("inf"), float("inf"), None,
                          reason=f"{name}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}", shape_ok=False)
    if got.numel() == 0:
        return Comparison(True, 0.0, 0.0, 0.0, None)
    g = got.detach().to("cpu", torch.float64).reshape(-1)
    e = expected.detach().to("cpu", torch.float64).reshape(-1)
    both_nan = torch.isnan(g) & torch.isnan(e)
    same_inf = torch.isinf(g) & torch.isinf(e) & (torch.sign(g) == torch.sign(e))
    agree = both_nan | same_inf
    err = torch.where(agree, torch.zeros_like(g), (g - e).abs())
    err = torch.where(torch.isnan(err), torch.full_like(err, float("inf")), err)
    allowed = tol.atol + tol.rtol * e.abs().nan_to_num(nan=0.0, posinf=0.0)
    excess = torch.where(agree, torch.zeros_like(err), err / allowed)
    bad = excess > 1
    worst_flat = int(torch.argmax(excess).item()) if bool(bad.any()) else int(torch.argmax(err).item())
    max_abs = float(err.max().item())
    # Relative error only where it means something: expected values above the absolute floor.
    rel = err / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    rel = torch.where(agree | (e.abs() <= tol.atol), torch.zeros_like(rel), rel)
    max_rel = float(rel.max().item())
    shape = tuple(got.shape)
    worst = Worst(
        tensor=name,
        index=_unravel(worst_flat, shape),
        flat_index=worst_flat,
        expected=float(e[worst_flat].item()),
        got=float(g[worst_flat].item()),
        shape=shape,
        input=_value_at(probe, worst_flat, shape),
    )
    writer = writer_of(got, worst_flat)  # a simulated kernel's output: the thread seen writing it
    if writer is not None:
        worst.block, worst.thread, worst.kernel = writer.block, writer.thread, writer.kernel
    n_bad = int(bad.sum().item())
    reason = ""
    if n_bad:
        unwritten = int((torch.isnan(g) & ~torch.isnan(e)).sum().item())
        reason = f"{name}: {n_bad} of {g.numel()} elements out of tolerance"
        if unwritten:
            reason += f" ({unwritten} NaN where a number was expected: unwritten, or computed as NaN)"
    return Comparison(n_bad == 0, max_abs, max_rel, float(excess.max().item()), worst, reason, n_bad)


def _value_at(probe: torch.Tensor | None, flat: int, shape: tuple[int, ...]) -> float | None:
    if probe is None or tuple(probe.shape) != shape:
        return None
    return float(probe.detach().reshape(-1)[flat].to("cpu", torch.float64).item())


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN payloads included): did a stage write into its input?"""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.detach().contiguous().view(torch.uint8), b.detach().contiguous().view(torch.uint8))
