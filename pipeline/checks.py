"""Element-wise comparison of a stage's tensors against expected ones, and facts about failures.

Every comparison yields the numbers a report row needs: max abs and max rel error, and the
worst element (its index, the input value there, expected, got), where "worst" means the
element that most exceeds the tolerance, or the largest error when all are within it.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .files import shown
from .tolerances import Tolerance


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


# --- exceptions raised inside a stage -------------------------------------------------------

_SIM_PLACE = re.compile(r"tid=\[(\d+), (\d+), (\d+)\] ctaid=\[(\d+), (\d+), (\d+)\](?::\s*)?")


@dataclass
class StageFault:
    """An exception from a stage call, reduced to the facts a person needs."""

    message: str
    file: str | None = None
    line: int | None = None
    function: str | None = None
    source_line: str | None = None
    block: tuple[int, int, int] | None = None
    thread: tuple[int, int, int] | None = None
    locals: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        parts = []
        if self.file:
            parts.append(f"{self.file}:{self.line} in {self.function}")
        if self.block is not None:
            parts.append(f"block {self.block} thread {self.thread}")
        head = ", ".join(parts)
        text = f"{head}: {self.message}" if head else self.message
        if self.source_line:
            text += f"\n      {self.source_line.strip()}"
        if self.locals:
            text += "\n      locals: " + ", ".join(f"{k}={v}" for k, v in self.locals.items())
        return text


def scalar_locals(frame_locals: dict[str, Any]) -> dict[str, Any]:
    """The plain numbers among a frame's locals (Python or numpy scalars), as Python numbers."""
    scalars = {}
    for k, v in frame_locals.items():
        if isinstance(v, (int, float)) or type(v).__module__ == "numpy" and getattr(v, "ndim", 1) == 0:
            scalars[k] = v.item() if hasattr(v, "item") else v
    return scalars


def fault_from(error: BaseException, stage_file: Path) -> StageFault:
    """Name the stage's own file and line (innermost frame in it) and, in the simulator, the thread."""
    message = f"{type(error).__name__}: {error}"
    fault = StageFault(message=message)
    m = _SIM_PLACE.search(str(error))
    if m:
        fault.thread = tuple(int(v) for v in m.groups()[:3])  # type: ignore[assignment]
        fault.block = tuple(int(v) for v in m.groups()[3:])  # type: ignore[assignment]
        fault.message = f"{type(error).__name__}: {_SIM_PLACE.sub('', str(error)) or '(no message)'}"
    target = stage_file.resolve()
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if Path(frame.f_code.co_filename).resolve() == target:
            fault.file = shown(stage_file)
            fault.line = lineno
            fault.function = frame.f_code.co_name
            fault.locals = scalar_locals(frame.f_locals) if fault.block is not None else {}
    if fault.line is not None:
        lines = stage_file.read_text().splitlines()
        if 0 < fault.line <= len(lines):
            fault.source_line = lines[fault.line - 1]
    if not fault.file and isinstance(error, RuntimeError):
        fault.message = f"{type(error).__name__}: {_first_lines(str(error))}"
    return fault


def _first_lines(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("Exception raised from")]
    return "\n".join(lines[:n])
