"""An op's stages as real PyTorch ops: torch.ops.brrr.NAME and torch.ops.brrr.NAME_backward.

On CUDA tensors they run the cuda stage, on CPU tensors the reference stage. The fake (meta)
implementation is the reference stage itself, run on fake tensors, which is why a reference must
not have data-dependent shapes. The autograd formula is C++ (native_library: a graph node that
calls NAME_backward with the saved tensors), and so is the call into a built extension's own op,
where that library can be built; else torch.library.register_autograd and a Python kernel. Either
way loss.backward() goes through the registered backward and torch.compile(fullgraph=True) sees one op.
"""

from __future__ import annotations

from typing import Any

import torch

from ..op.contract import as_tuple, grad_positions, saved_tensors, schemas
from ..op.loaders import load_op
from ..op.spec import Op
from . import native_library

_libraries: dict[tuple[str, str], torch.library.Library] = {}


def _fresh(result: Any) -> Any:
    """Custom ops may not return their inputs or views of them; a reference might."""
    values = as_tuple(result)
    fixed = tuple(v.clone() if isinstance(v, torch.Tensor) and v._base is not None else v for v in values)
    return fixed if len(fixed) > 1 else fixed[0]


def _picked(fn: Any, positions: tuple[int, ...]) -> Any:
    """A stage's backward (one gradient per input, None for those that take none) as the registered
    backward returns it: the gradients of the inputs that take one."""

    def call(*args: Any) -> Any:
        grads = as_tuple(fn(*args))
        return _fresh(tuple(grads[i] for i in positions))

    return call


def _with_defaults(fn: Any, n_tensors: int, params: tuple[Any, ...]) -> Any:
    """fn with the spec's params filled in where a call leaves them out: torch hands a Python kernel
    only the arguments up to the last one that differs from its schema default."""

    def call(*args: Any) -> Any:
        given = args[n_tensors:]
        return fn(*args[:n_tensors], *given, *params[len(given):])

    return call


def registered(namespace: str, name: str) -> Any:
    """torch.ops.NAMESPACE.NAME if this process has defined it already, else None."""
    return getattr(getattr(torch.ops, namespace), name) if (namespace, name) in _libraries else None


def register(name_or_path: str, namespace: str = "brrr") -> Any:
    """Register (once per process and namespace) and return torch.ops.NAMESPACE.NAME (torch.ops.brrr.NAME):
    the reference on CPU tensors, the cuda stage (built here) on CUDA tensors."""
    from ..cuda import builder
    from ..op.loaders import load_cuda, load_reference

    op: Op = load_op(name_or_path)
    if (known := registered(namespace, op.spec.name)) is not None:
        return known
    ref = load_reference(op)
    impls = {"CPU": (ref.forward, ref.backward)}
    if torch.cuda.is_available():
        cuda = load_cuda(op, builder.build_extension(op))
        impls["CUDA"] = (cuda.forward, cuda.backward)
    return define(op, namespace, impls, ref)


def _traceable(backward: Any) -> Any:
    """The reference's backward as the fake implementation: one that takes its gradients by autograd
    (torch.autograd.grad on its own forward) records nothing while torch.compile or opcheck traces the
    op below autograd, and torch's error then names no file of the op's: said here instead."""
    def fake(*args: Any) -> Any:
        try:
            return backward(*args)
        except RuntimeError as e:
            if "does not require grad" not in str(e):
                raise
            raise RuntimeError(f"reference.py's backward is the op's fake backward while torch.compile and opcheck "
                               f"trace it, and there autograd records nothing ({e}): write its gradients out in "
                               "PyTorch rather than by torch.autograd.grad on the forward") from e
    return fake


def define(op: Op, namespace: str, impls: dict[str, tuple[Any, Any]], ref: Any) -> Any:
    """torch.ops.NAMESPACE.NAME with forward and backward per dispatch key ("CPU", "CUDA"), the
    reference stage `ref` as the fake implementation, and the autograd formula from the spec."""
    spec, name = op.spec, op.spec.name
    lib = torch.library.Library(namespace, "FRAGMENT")
    forward_schema, backward_schema = schemas(spec, name)
    lib.define(forward_schema)

    n_inputs, n_outputs = len(spec.inputs), len(spec.outputs)
    params = spec.param_values
    fwd = lambda f: _with_defaults(f, n_inputs, params)  # noqa: E731
    for key, (forward, _) in impls.items():
        if not native_library.route(namespace, name, key, forward):
            lib.impl(name, fwd(lambda *a, f=forward: _fresh(f(*a))), key)
    torch.library.register_fake(f"{namespace}::{name}", fwd(lambda *a: _fresh(ref.forward(*a))), lib=lib)
    if backward_schema is None:  # forward only: no backward op and no autograd formula
        _libraries[(namespace, name)] = lib
        return getattr(getattr(torch.ops, namespace), name)

    lib.define(backward_schema)
    positions = grad_positions(spec)
    bwd = lambda f: _with_defaults(_picked(f, positions), n_outputs + len(spec.saved), params)  # noqa: E731
    for key, (_, backward) in impls.items():
        if not native_library.route(namespace, f"{name}_backward", key, backward, positions, n_inputs):
            lib.impl(f"{name}_backward", bwd(backward), key)
    torch.library.register_fake(f"{namespace}::{name}_backward", bwd(_traceable(ref.backward)), lib=lib)

    if not native_library.autograd(namespace, name, spec, positions):
        _python_autograd(op, namespace, positions, lib)
    _libraries[(namespace, name)] = lib
    return getattr(getattr(torch.ops, namespace), name)


def _python_autograd(op: Op, namespace: str, positions: tuple[int, ...], lib: torch.library.Library) -> None:
    """The same formula through torch.library.register_autograd: Python on every call."""
    spec, name = op.spec, op.spec.name
    n_inputs, n_outputs, params = len(spec.inputs), len(spec.outputs), spec.param_values

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        ctx.save_for_backward(*saved_tensors(spec, inputs, as_tuple(output)))
        given = inputs[n_inputs:]
        ctx.params = (*given, *params[len(given):])

    def backward(ctx: Any, *grad_results: Any) -> tuple[Any, ...]:
        grad_outputs = [g.contiguous() for g in grad_results[:n_outputs]]  # autograd materializes unused ones as zeros
        result = as_tuple(getattr(getattr(torch.ops, namespace), f"{name}_backward")(*grad_outputs, *ctx.saved_tensors,
                                                                                    *ctx.params))
        grads: list[Any] = [None] * n_inputs
        for i, g in zip(positions, result):
            grads[i] = g if ctx.needs_input_grad[i] else None
        return (*grads, *(None,) * len(ctx.params))

    torch.library.register_autograd(f"{namespace}::{name}", backward, setup_context=setup_context, lib=lib)
