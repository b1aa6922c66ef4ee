"""One autograd.Function for every stage: forward and backward go through the stage's own code.

`apply(stage, *inputs)` gives the op's visible outputs with a grad_fn whose backward calls the
stage's backward, so gradcheck, the runner and users call every stage the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any

import torch

from ..base.errors import OpLoadError
from ..cuda import guards
from ..cuda.guards import Guarding
from ..op.contract import as_tuple, call_backward, call_forward, result_names, saved_tensors, visible
from ..op.loaders import Stage
from . import gpu_fault

# While validation watches (see `watching_writes`), every tensor a stage call receives is compared
# bit for bit before and after the call, and each one written is recorded by name. Otherwise
# nothing is copied: an op used from PyTorch pays nothing for it.
_writes: ContextVar[list[str] | None] = ContextVar("brrr_writes", default=None)


@contextmanager
def watching_writes() -> Iterator[list[str]]:
    """Within this block, stage calls record "forward wrote into x", "backward wrote into grad_y", ..."""
    writes: list[str] = []
    token = _writes.set(writes)
    try:
        with guards.watched():
            yield writes
    finally:
        _writes.reset(token)


@contextmanager
def _as_in_forward(watch: tuple[list[str] | None, bool]) -> Iterator[None]:
    """Backward watched where it is called from a watched block, or else as its forward was. On a GPU the
    autograd engine runs backward in a thread of its own, where this module's context variables have
    their defaults: without this, a backward's writes past grad_x's end or into grad_y went unwatched
    there (a CPU backward runs in the caller's thread and was watched)."""
    writes, guarded = (_writes.get(), guards.active()) if _writes.get() is not None else watch
    token = _writes.set(writes)
    try:
        with guards.watched() if guarded else nullcontext():
            yield
    finally:
        _writes.reset(token)


def _guarding(stage: Stage) -> Guarding | None:
    """Guard bands (guards.py) around a cuda-stage call while validation watches it."""
    return Guarding() if stage.name == "cuda" and guards.active() else None


def _snapshot(received: dict[str, Any]) -> dict[str, torch.Tensor] | None:
    if _writes.get() is None:
        return None
    return {name: t.detach().clone() for name, t in received.items() if isinstance(t, torch.Tensor)}


def _record_writes(phase: str, before: dict[str, torch.Tensor] | None, received: dict[str, Any]) -> None:
    from ..verdict.compare import same_bits

    writes = _writes.get()
    if writes is None or before is None:
        return
    for name, old in before.items():
        if not same_bits(received[name], old):
            writes.append(f"{phase} wrote into {name}")


def _watched(stage: Stage, phase: str, received: dict[str, Any], run: Any, names: list[str]) -> tuple[Any, dict[str, Any]]:
    """run(the tensors received) as validation watches it: in guard bands, every tensor received compared
    after the call, and the results (named `names`) checked for writes past their ends."""
    guard = _guarding(stage)
    if guard is not None:
        received = guard.receive(received)
    before = _snapshot(received)
    with guard or nullcontext():
        results = run(list(received.values()))
    if before is not None:  # validation watches: a kernel's fault on a GPU is charged to this call
        gpu_fault.synchronized([*as_tuple(results), *received.values()], f"the {stage.name} stage's {phase}")
    _record_writes(phase, before, received)
    if guard is not None:
        guard.check(phase, dict(zip(names, results)))
    return results, received


class StageFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, stage: Stage, *inputs: torch.Tensor) -> Any:
        spec = stage.op.spec
        results, received = _watched(stage, "forward", dict(zip(spec.inputs, inputs)),
                                     lambda given: call_forward(spec, stage, tuple(given)), result_names(spec))
        inputs = tuple(received.values())
        expected = len(result_names(spec))
        if len(results) != expected or not all(isinstance(r, torch.Tensor) for r in results):
            raise OpLoadError(
                f"{stage.source}: forward returned {_describe(results)}, the spec declares {expected} tensor(s) "
                f"{result_names(spec)}"
            )
        ctx.save_for_backward(*saved_tensors(spec, inputs, results))
        ctx.stage = stage
        ctx.watch = (_writes.get(), guards.active())
        outputs = visible(spec, results)
        return outputs[0] if len(outputs) == 1 else outputs

    @staticmethod
    def backward(ctx: Any, *grad_outputs: torch.Tensor) -> Any:
        stage: Stage = ctx.stage
        spec = stage.op.spec
        grads_in = [g.contiguous() for g in grad_outputs]
        received = dict(zip((f"grad_{n}" for n in spec.outputs), grads_in))
        received |= {f"{n} (saved for backward)": t for n, t in zip(spec.saved, ctx.saved_tensors)}
        n = len(grads_in)
        with _as_in_forward(ctx.watch):
            grads, _ = _watched(stage, "backward", received,
                                lambda given: call_backward(spec, stage, given[:n], given[n:]),
                                [f"grad_{name}" for name in spec.inputs])
        if len(grads) != len(spec.inputs):
            raise OpLoadError(
                f"{stage.source}: backward returned {_describe(grads)}, expected one gradient per input {spec.inputs}"
            )
        wanted = ctx.needs_input_grad[1:]
        return (None, *(g if need else None for g, need in zip(grads, wanted)))


def _describe(values: tuple[Any, ...]) -> str:
    kinds = ", ".join(type(v).__name__ for v in values)
    return f"{len(values)} value(s) ({kinds})"


def apply(stage: Stage, *inputs: torch.Tensor) -> Any:
    return StageFunction.apply(stage, *inputs)


def call(stage: Stage, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Forward through the stage; always a tuple of the visible outputs."""
    return as_tuple(apply(stage, *inputs))
