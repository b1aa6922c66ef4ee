"""An op's stages as real PyTorch ops: torch.ops.brrr.NAME and torch.ops.brrr.NAME_backward.

On CUDA tensors they run the cuda stage, on CPU tensors the reference stage. The fake (meta)
implementation is the reference stage itself, run on fake tensors, which is why a reference must
not have data-dependent shapes. Autograd is registered with torch.library.register_autograd, so
loss.backward() goes through the cuda backward and torch.compile(fullgraph=True) sees one op.
"""

from __future__ import annotations

from typing import Any

import torch

from .contract import as_tuple, saved_tensors, schemas
from .loaders import load_op
from .spec import Op

_libraries: dict[str, torch.library.Library] = {}


def _fresh(result: Any) -> Any:
    """Custom ops may not return their inputs or views of them; a reference might."""
    values = as_tuple(result)
    fixed = tuple(v.clone() if v._base is not None else v for v in values)
    return fixed if len(fixed) > 1 else fixed[0]


def _with_defaults(fn: Any, n_tensors: int, params: tuple[Any, ...]) -> Any:
    """fn with the spec's params filled in where a call leaves them out: torch hands a Python kernel
    only the arguments up to the last one that differs from its schema default."""

    def call(*args: Any) -> Any:
        given = args[n_tensors:]
        return fn(*args[:n_tensors], *given, *params[len(given):])

    return call


def register(name_or_path: str) -> Any:
    """Register (once per process) and return torch.ops.brrr.NAME."""
    from . import builder
    from .loaders import load_cuda, load_reference

    op: Op = load_op(name_or_path)
    spec, name = op.spec, op.spec.name
    if name in _libraries:
        return getattr(torch.ops.brrr, name)
    lib = torch.library.Library("brrr", "FRAGMENT")
    for schema in schemas(spec, name):
        lib.define(schema)

    n_inputs, n_outputs = len(spec.inputs), len(spec.outputs)
    params = spec.param_values
    fwd = lambda f: _with_defaults(f, n_inputs, params)  # noqa: E731
    bwd = lambda f: _with_defaults(f, n_outputs + len(spec.saved), params)  # noqa: E731
    ref = load_reference(op)
    lib.impl(name, fwd(lambda *a: _fresh(ref.forward(*a))), "CPU")
    lib.impl(f"{name}_backward", bwd(lambda *a: _fresh(ref.backward(*a))), "CPU")
    if torch.cuda.is_available():
        cuda = load_cuda(op, builder.build_extension(op))
        lib.impl(name, fwd(cuda.forward), "CUDA")
        lib.impl(f"{name}_backward", bwd(cuda.backward), "CUDA")
    torch.library.register_fake(f"brrr::{name}", fwd(lambda *a: _fresh(ref.forward(*a))), lib=lib)
    torch.library.register_fake(f"brrr::{name}_backward", bwd(lambda *a: _fresh(ref.backward(*a))), lib=lib)

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(*saved_tensors(spec, inputs, as_tuple(output)))
        given = inputs[n_inputs:]
        ctx.params = (*given, *params[len(given):])

    def backward(ctx: Any, *grad_results: Any) -> tuple[Any, ...]:
        grad_outputs = [g.contiguous() for g in grad_results[:n_outputs]]  # autograd materializes unused ones as zeros
        result = as_tuple(getattr(torch.ops.brrr, f"{name}_backward")(*grad_outputs, *ctx.saved_tensors, *ctx.params))
        wanted = ctx.needs_input_grad
        return tuple(g if wanted[i] else None for i, g in enumerate(result)) + (None,) * len(ctx.params)

    torch.library.register_autograd(f"brrr::{name}", backward, setup_context=setup_context, lib=lib)
    _libraries[name] = lib
    return getattr(torch.ops.brrr, name)
