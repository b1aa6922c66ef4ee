"""brrr: a staged kernel-development pipeline for PyTorch (reference -> numba -> CUDA C).

The names an op folder uses, and the debugger for notebooks and tests:

    from brrr_kernels import OpSpec, Inputs, Size          # spec.py
    from brrr_kernels import import_cuda, launch, cdiv     # numba_kernel.py

    report = brrr_kernels.validate("sigmoid", stages=["reference", "numba"], seed=1)
    report.passed, report.failed, report.rows, report.to_json()   # the rows `brrr validate` prints
    brrr_kernels.debug("sigmoid", index=5)                  # pdb inside the thread that computes y[5]
    print(brrr_kernels.trace("sigmoid", block=0, thread=5))
    op = brrr_kernels.load_op("sigmoid"); stage = brrr_kernels.load_reference(op)
    brrr_kernels.apply(stage, x)                            # any stage as one autograd.Function

Names are imported on first use, so `import brrr_kernels` stays cheap (numba loads only when a
numba name is asked for). These names, `brrr_kernels.ops.register`, the CLI (`cli`) and the pytest
plugin (`pytest_plugin`) are the stable face; the subpackages below can move.

Layer map (each subpackage's __init__ has its own; imports point down this list):

    base/        shared utilities: errors, files, outputs, progress, interrupts, workers, watch, assets
    sim/         the numba stage simulated: numba's simulator, one thread at a time, with its checks
    op/          what an op is: its spec, tolerances, calling contract, loaders
    cuda/        the cuda stage's toolchain: nvcc and the CPU build, kernel.cu as C++, memory checks
    translate/   brrr translate: numba_kernel.py as kernel.cu and binding.cpp
    verdict/     how a result is judged and told: comparison, rounding spread, faults, report rows
    validation/  what brrr validate runs: the plan, the executor, trials, rows, the runner
    debugger/    brrr debug and trace: one thread of the numba stage (pdb) or of the cuda stage (gdb)
    mutate/      brrr mutate: planted bugs and their verdicts
    commands/    the other commands: new, export, bench, sanitize, walkthrough
    api, ops, pytest_plugin, cli, __main__: the ways in
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Report

__version__ = "0.1.0"

# public name -> the module that defines it
_PUBLIC = {
    "OpSpec": "op.spec", "Inputs": "op.spec", "Size": "op.spec", "Layout": "op.spec", "Place": "op.spec",
    "one_per_thread": "op.spec", "TorchModule": "op.extension",
    "Tolerance": "op.tolerances", "DEFAULT": "op.tolerances", "Widen": "op.tolerances", "Terms": "op.tolerances",
    "stored_magnitude": "op.tolerances",
    "import_cuda": "sim.numba_env", "launch": "sim.numba_env", "cdiv": "sim.numba_env",
    "load_op": "op.loaders", "load_reference": "op.loaders", "load_numba": "op.loaders", "load_cuda": "op.loaders",
    "apply": "validation.function",
    "BrrrError": "base.errors",
    "Report": "api",
}

__all__ = ["validate", "debug", "trace", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def validate(op: str, stages: Any = None, seed: int | None = None, **options: Any) -> Report:
    """Validate an op (name or folder) as `brrr validate` does; a Report with rows, passed, failed, to_json()."""
    from .api import validate as run

    return run(op, stages=stages, seed=seed, **options)


def debug(op: str, **selection: Any) -> Any:
    """Stop in pdb in one simulated thread; selection as `brrr debug` (index=, block=, thread=, ...)."""
    from .debugger import numba_stage as debugger

    session, module = debugger.prepare(op, **selection)
    return debugger.debug(session, module)


def trace(op: str, **selection: Any) -> str:
    """The lines one simulated thread executes, with changed locals and writes, as text."""
    import io

    from .debugger import numba_stage as debugger

    session, module = debugger.prepare(op, **selection)
    out = io.StringIO()
    debugger.trace(session, module, out)
    return out.getvalue()
