"""The torch.library rows of `brrr validate`: the op registered as a real PyTorch op (ops.register)
passes `torch.library.opcheck` and runs under `torch.compile(fullgraph=True)`, forward and backward,
with the same results as eager. They run on the cuda stage where it runs (on a GPU, or its CPU execution), else on the reference.

The op is registered under a namespace of its own, named by its folder and the contents of its
spec and reference, so a user's op never meets a built-in one of the same name, and an edited op
registers anew in a long-lived process (a notebook).

torch.compile uses the aot_eager backend: it traces the op through Dynamo (fullgraph: a graph
break fails) and AOTAutograd (the fake implementation, the registered autograd formula), which is
what the check is about; Inductor would add a C++ compile of the code around the op, seconds on
a CPU, and test nothing of the op's own. Each op compiles its own function object, so Dynamo's
per-function recompile limit never makes a later op fall back to eager.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import torch

from ..base.errors import first_lines
from ..op.contract import as_tuple
from ..op.loaders import Stage
from ..op.spec import Op
from ..verdict.report import Row
from .plan import Check
from .rows import RowBuilder
from .trial import random_inputs

COMPILE_BACKEND = "aot_eager"
# opcheck's own tests less test_aot_dispatch_static, the slowest (measured: 7 of 23 s, cold), whose
# static-shape AOTAutograd trace the compile row repeats; the dynamic-shape one stays.
OPCHECK_TESTS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def namespace(op: Op, where: str = "reference") -> str:
    """A namespace of the op's own: its folder, the contents of its files, and which stage runs where."""
    digest = hashlib.sha256(f"{op.folder.resolve()} {where}".encode())
    for part in ("spec", "reference", "cuda", "binding"):
        path = op.path(part)
        if path.is_file():
            digest.update(path.read_bytes())
    return f"brrr_check_{op.name}_{digest.hexdigest()[:12]}"


def _sample(op: Op, stage: str, device: str, gen: torch.Generator) -> tuple[Any, ...]:
    dtypes = op.spec.stage_dtypes(stage)
    dtype = torch.float64 if torch.float64 in dtypes else dtypes[0]
    inputs = random_inputs(op, op.spec.gradcheck_size, dtype, device, gen)
    taking = tuple(x.detach().requires_grad_(op.spec.takes_grad(n, x)) for n, x in zip(op.spec.inputs, inputs))
    return taking + op.spec.param_values


def _outputs_and_grads(fn: Callable[..., Any], args: tuple[Any, ...], n_outputs: int,
                       upstream: tuple[torch.Tensor, ...] | None) -> tuple[tuple[torch.Tensor, ...], tuple[Any, ...]]:
    outputs = as_tuple(fn(*args))[:n_outputs]
    tensors = [a for a in args if isinstance(a, torch.Tensor) and a.requires_grad]
    if upstream is None or not tensors:
        return outputs, ()
    return outputs, torch.autograd.grad(outputs, tensors, upstream, allow_unused=True)


def _fresh_function(op_fn: Any, tag: str) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return op_fn(*args)

    # Dynamo caches compiled code per code object and recompiles at most a few times per object;
    # a code object of its own per op keeps every op's compile independent.
    call.__code__ = call.__code__.replace(co_name=f"brrr_compiled_{tag}")
    return call


def registered_op(stage: Stage, reference: Stage) -> Any:
    """The op as torch.library sees it, its kernels those of `stage` where it runs: on CPU tensors the
    stage if it runs on the CPU (the reference, or the cuda stage's CPU execution), else the reference;
    on CUDA tensors the stage on the GPU."""
    from .torch_library import define, registered

    op = stage.op
    tag = f"{stage.name}@{stage.device}"
    ns = namespace(op, tag)
    if (known := registered(ns, op.spec.name)) is not None:
        return known
    impls = {"CPU": (reference.forward, reference.backward)}
    key = "CUDA" if stage.device == "cuda" else "CPU"
    impls[key] = (stage.forward, stage.backward)
    return define(op, ns, impls, reference)


def library_row(check: Check, stage: Stage, reference: Stage, gen: torch.Generator) -> Row:
    """One of the two rows, by check.name: "opcheck" or "compile fullgraph"."""
    op, device = stage.op, stage.device
    b = RowBuilder(op, check, "float64")
    try:
        op_fn = registered_op(stage, reference)
    except Exception as e:
        b.fail(f"registering {op.name} with torch.library failed: {type(e).__name__}: {first_lines(str(e), 8)}")
        return b.finish()
    args = _sample(op, stage.name, device, gen)
    b.row.dtype = str(next(a for a in args if isinstance(a, torch.Tensor)).dtype).removeprefix("torch.")
    try:
        if check.name == "opcheck":
            results = torch.library.opcheck(op_fn.default, args, test_utils=OPCHECK_TESTS)
            failing = {k: v for k, v in results.items() if v != "SUCCESS"}
            if failing:
                b.fail(nan_said(op_fn, args, op.spec.outputs) or f"opcheck: {failing}")
        else:
            n_outputs = len(op.spec.outputs)
            eager, _ = _outputs_and_grads(op_fn, args, n_outputs, None)
            upstream = tuple(torch.randn(o.shape, dtype=o.dtype, generator=gen).to(o.device) for o in eager)
            want = _outputs_and_grads(op_fn, args, n_outputs, upstream)
            compiled = torch.compile(_fresh_function(op_fn, op_fn._qualified_op_name.replace("::", "_")), fullgraph=True,
                                     backend=COMPILE_BACKEND)
            got = _outputs_and_grads(compiled, args, n_outputs, upstream)
            for what, g, w in zip(("outputs", "gradients"), got, want):
                torch.testing.assert_close(g, w, msg=lambda m, what=what: f"compiled {what} differ from eager: {m}")
    except Exception as e:
        said = nan_said(op_fn, args, op.spec.outputs)
        b.fail(said or f"{check.name} on {device}, size {op.spec.gradcheck_size}: {type(e).__name__}: {first_lines(str(e), 8)}")
    return b.finish()


def nan_said(op_fn: Any, args: tuple[Any, ...], names: tuple[str, ...]) -> str | None:
    """When an output of the op holds NaN on opcheck's own sample, that is what its failure means:
    opcheck and the compile row compare runs of the op, and NaN never equals NaN, so a NaN output
    reads there as a difference between eager and traced runs. Said as what it is; None otherwise."""
    try:
        with torch.no_grad():
            outputs = as_tuple(op_fn(*args))
    except Exception:
        return None
    for name, out in zip(names, outputs):
        if isinstance(out, torch.Tensor) and out.is_floating_point() and bool(out.isnan().any()):
            nans = out.isnan()
            first = [int(i) for i in nans.nonzero()[0]]
            return (f"output {name} holds NaN ({int(nans.sum())} of {out.numel()} elements, the first at {first}) on "
                    f"opcheck's sample (size {tuple(out.shape)}): opcheck compares runs of the op and NaN never "
                    "equals NaN, so this is a NaN the op computed, not a difference in tracing; see the forward rows")
    return None
