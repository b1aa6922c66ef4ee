"""One autograd.Function for every stage: forward and backward go through the stage's own code.

`apply(stage, *inputs)` gives the op's visible outputs with a grad_fn whose backward calls the
stage's backward, so gradcheck, the runner and users call every stage the same way.
"""

from __future__ import annotations

from typing import Any

import torch

from .contract import as_tuple, call_backward, call_forward, result_names, saved_tensors, visible
from .errors import OpLoadError
from .loaders import Stage


class StageFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, stage: Stage, *inputs: torch.Tensor) -> Any:
        spec = stage.op.spec
        results = call_forward(spec, stage, inputs)
        expected = len(result_names(spec))
        if len(results) != expected or not all(isinstance(r, torch.Tensor) for r in results):
            raise OpLoadError(
                f"{stage.source}: forward returned {_describe(results)}, the spec declares {expected} tensor(s) "
                f"{result_names(spec)}"
            )
        ctx.save_for_backward(*saved_tensors(spec, inputs, results))
        ctx.stage = stage
        outputs = visible(spec, results)
        return outputs[0] if len(outputs) == 1 else outputs

    @staticmethod
    def backward(ctx: Any, *grad_outputs: torch.Tensor) -> Any:
        stage: Stage = ctx.stage
        spec = stage.op.spec
        grads_in = [g.contiguous() for g in grad_outputs]
        grads = call_backward(spec, stage, grads_in, ctx.saved_tensors)
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
