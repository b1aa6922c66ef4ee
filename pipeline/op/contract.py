"""The calling contract every stage keeps, written once: results, saved tensors, schema.

    forward(*inputs, *params)                -> outputs + stats    (a tensor or a tuple of tensors)
    backward(*grad_outputs, *saved, *params) -> one gradient per input (a tensor or a tuple)

A call's `results` are its outputs followed by its `stats` (extra forward results, a layer
norm's mean, that only backward sees). `saved` names tensors among the inputs and the results.
The autograd wrapper, torch.library registration, validation, the debugger and export all call
stages through these functions, so changing the contract is a change to this file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import torch

if TYPE_CHECKING:
    from .spec import OpSpec

Tensors = tuple[torch.Tensor, ...]


class Implementation(Protocol):
    """Anything with a stage's two functions: a loaded Stage, a stage module, a built extension."""

    @property
    def forward(self) -> Any: ...

    @property
    def backward(self) -> Any: ...


def as_tuple(value: torch.Tensor | Sequence[torch.Tensor | None] | None) -> tuple[Any, ...]:
    """A stage returns a tensor or a tuple of them; callers always get a tuple."""
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)


def result_names(spec: OpSpec) -> tuple[str, ...]:
    return spec.outputs + spec.stats


def saved_positions(spec: OpSpec) -> tuple[int, ...]:
    """Where each name in `spec.saved` sits in (*inputs, *results); a result shadows an input of its name."""
    position = {name: i for i, name in enumerate(spec.inputs + result_names(spec))}
    return tuple(position[name] for name in spec.saved)


def saved_tensors(spec: OpSpec, inputs: Sequence[Any], results: Sequence[Any]) -> tuple[Any, ...]:
    """The tensors backward receives after the upstream gradients, picked from a call's inputs and results.

    `inputs` may go on with the op's params (torch.library passes them together); only the
    tensor inputs are looked at.
    """
    everything = (*tuple(inputs)[: len(spec.inputs)], *results)
    return tuple(everything[i] for i in saved_positions(spec))


def visible(spec: OpSpec, results: Sequence[Any]) -> tuple[Any, ...]:
    """The outputs a caller sees: the results less the stats."""
    return tuple(results)[: len(spec.outputs)]


def call_forward(spec: OpSpec, impl: Implementation, inputs: Sequence[Any]) -> tuple[Any, ...]:
    """All results (outputs, then stats) of the implementation's forward."""
    return as_tuple(impl.forward(*inputs, *spec.param_values))


def call_backward(spec: OpSpec, impl: Implementation, upstream: Sequence[Any], saved: Sequence[Any]) -> tuple[Any, ...]:
    """One gradient per input (None where the implementation gives none) from the implementation's backward.
    A backward that returns only the gradients of the inputs that take one (an extension's, which
    returns grad_logits alone beside int64 targets) has them put in their places."""
    grads = as_tuple(impl.backward(*upstream, *saved, *spec.param_values))
    if len(grads) < len(spec.inputs):
        positions = _grad_positions_once(spec)
        if len(grads) == len(positions):
            spread: list[Any] = [None] * len(spec.inputs)
            for i, g in zip(positions, grads):
                spread[i] = g
            return tuple(spread)
    return grads


_positions: dict[int, tuple[OpSpec, tuple[int, ...]]] = {}


def _grad_positions_once(spec: OpSpec) -> tuple[int, ...]:
    """grad_positions, made once per spec (it makes inputs to see their dtypes)."""
    if id(spec) not in _positions:
        _positions[id(spec)] = (spec, grad_positions(spec))  # the spec kept alive, so its id stays its own
    return _positions[id(spec)][1]


def forward_backward(spec: OpSpec, impl: Implementation, inputs: Sequence[Any],
                     upstream: Sequence[Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Forward, then backward with the upstream gradients and the saved tensors: (results, gradients)."""
    results = call_forward(spec, impl, inputs)
    return results, call_backward(spec, impl, upstream, saved_tensors(spec, inputs, results))


# --- the torch.library schema ---------------------------------------------------------------


def param_type(value: Any) -> str:
    """The schema type of a param, from its default value."""
    if isinstance(value, bool):
        return "bool"
    return "int" if isinstance(value, int) else "float"


def _returns(n: int) -> str:
    return "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"


def _schema_default(value: Any) -> str:
    return repr(float(value)) if param_type(value) == "float" else repr(value)


def grad_positions(spec: OpSpec) -> tuple[int, ...]:
    """Which inputs take a gradient, by position: judged on inputs made at the gradcheck size (an
    integer target never does, whatever the dtype asked for)."""
    if spec.forward_only:
        return ()
    made = spec.make_inputs(spec.gradcheck_size, torch.float64, torch.device("cpu"), torch.Generator().manual_seed(0))
    return tuple(i for i, (n, x) in enumerate(zip(spec.inputs, made)) if spec.takes_grad(n, x))


def schemas(spec: OpSpec, name: str) -> tuple[str, str | None]:
    """The torch.library schemas of `name` (forward) and `name`_backward (None: the op has none), in the
    contract's argument order; backward returns the gradients of the inputs that take one.
    The spec's param values are the schema's defaults: `rmsnorm(x, weight)` means eps=1e-05."""
    params = [f"{param_type(v)} {k}={_schema_default(v)}" for k, v in spec.params.items()]
    forward_args = [f"Tensor {x}" for x in spec.inputs] + params
    forward = f"{name}({', '.join(forward_args)}) -> {_returns(len(result_names(spec)))}"
    if spec.forward_only:
        return forward, None
    backward_args = [f"Tensor grad_{y}" for y in spec.outputs] + [f"Tensor {s}" for s in spec.saved] + params
    return forward, f"{name}_backward({', '.join(backward_args)}) -> {_returns(len(grad_positions(spec)))}"


def usage(spec: OpSpec, call: str) -> str:
    """How to call the op, from its contract: `y, rstd = CALL(x, weight)  # eps=1e-05 unless given`."""
    results = ", ".join(result_names(spec))
    hint = f"{results} = {call}({', '.join(spec.inputs)})"
    if spec.params:
        hint += "  # " + ", ".join(f"{k}={v!r}" for k, v in spec.params.items()) + " unless given"
    return hint
