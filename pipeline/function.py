"""One autograd.Function for every stage: forward and backward go through the stage's own code.

`apply(stage, *inputs)` gives the op's visible outputs with a grad_fn whose backward calls the
stage's backward, so gradcheck, the runner and users call every stage the same way.
"""

from __future__ import annotations

from typing import Any

import torch

from .errors import OpLoadError
from .loaders import Stage
from .spec import as_tuple


class StageFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, stage: Stage, *inputs: torch.Tensor) -> Any:
        spec = stage.op.spec
        results = as_tuple(stage.forward(*inputs, *spec.param_values))
        expected = len(spec.outputs) + len(spec.stats)
        if len(results) != expected or not all(isinstance(r, torch.Tensor) for r in results):
            raise OpLoadError(
                f"{stage.source}: forward returned {_describe(results)}, the spec declares {expected} tensor(s) "
                f"{spec.outputs + spec.stats}"
            )
        named = dict(zip(spec.inputs, inputs)) | dict(zip(spec.outputs + spec.stats, results))
        ctx.save_for_backward(*(named[n] for n in spec.saved))
        ctx.stage = stage
        outputs = results[: len(spec.outputs)]
        return outputs[0] if len(outputs) == 1 else outputs

    @staticmethod
    def backward(ctx: Any, *grad_outputs: torch.Tensor) -> Any:
        stage: Stage = ctx.stage
        spec = stage.op.spec
        grads_in = [g.contiguous() for g in grad_outputs]
        grads = as_tuple(stage.backward(*grads_in, *ctx.saved_tensors, *spec.param_values))
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
