"""brrr: a staged kernel-development pipeline for PyTorch (reference -> numba -> CUDA C).

The names an op folder uses, and the debugger for notebooks and tests:

    from brrr_kernels import OpSpec, Inputs, Size          # spec.py
    from brrr_kernels import import_cuda, launch, cdiv     # numba_kernel.py

    report = brrr_kernels.validate("sigmoid", stages=["reference", "numba"], seed=1)
    report.passed, report.failed, report.rows, report.to_json()   # the rows `brrr validate` prints
    brrr_kernels.debug("sigmoid", index=5)                  # pdb inside the thread that computes y[5]
    print(brrr_kernels.trace("sigmoid", block=0, thread=5))

Names are imported on first use, so `import brrr_kernels` stays cheap (numba loads only when a
numba name is asked for).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .api import Report

__version__ = "0.1.0"

# public name -> the module that defines it
_PUBLIC = {
    "OpSpec": "spec", "Inputs": "spec", "Size": "spec", "Layout": "spec", "Place": "spec",
    "one_per_thread": "spec",
    "Tolerance": "tolerances", "DEFAULT": "tolerances", "Widen": "tolerances", "Terms": "tolerances",
    "import_cuda": "numba_env", "launch": "numba_env", "cdiv": "numba_env",
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
    from . import debugger

    session, module = debugger.prepare(op, **selection)
    return debugger.debug(session, module)


def trace(op: str, **selection: Any) -> str:
    """The lines one simulated thread executes, with changed locals and writes, as text."""
    import io

    from . import debugger

    session, module = debugger.prepare(op, **selection)
    out = io.StringIO()
    debugger.trace(session, module, out)
    return out.getvalue()


class _Package(types.ModuleType):
    """The package keeps `validate` the function above when a submodule of the same name is imported
    (importing brrr_kernels.X sets the package's attribute X to the module; the module stays reachable
    by `from .X import ...` and in sys.modules)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in __all__ and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
