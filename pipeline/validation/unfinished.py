"""Telling a stage still as its template left it ("unfinished") from one that fails its checks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..base.files import shown
from ..op.contract import Tensors, call_backward, call_forward, saved_tensors, visible
from ..op.names import UNFINISHED_MARK
from ..op.spec import Op
from ..verdict.faults import fault_from

if TYPE_CHECKING:
    from ..op.loaders import Stage


def unfinished(stage: Stage, inputs: Tensors) -> str | None:
    """"unfinished: ..." naming the function to write, when a Python stage still raises NotImplementedError
    (as its template does) on `inputs`; None otherwise: any other error is for the checks to report."""
    spec = stage.op.spec
    try:
        results = call_forward(spec, stage, inputs)
        upstream = tuple(r.new_ones(r.shape) for r in visible(spec, results))
        call_backward(spec, stage, upstream, saved_tensors(spec, inputs, results))
    except NotImplementedError as e:
        return "unfinished: " + fault_from(e, stage.source).describe()
    except Exception:
        return None
    return None


def unfinished_cuda(op: Op) -> str | None:
    """What to write, when kernel.cu or binding.cpp still carries the template's UNFINISHED_MARK line."""
    if not any(op.has(part) and UNFINISHED_MARK in op.path(part).read_text() for part in ("cuda", "binding")):
        return None
    return (f"write the kernels in {shown(op.path('cuda'))} and forward() and backward() in "
            f"{shown(op.path('binding'))}, then delete the '{UNFINISHED_MARK}' line")
