"""brrr: a staged kernel-development pipeline for PyTorch (reference -> numba -> CUDA C).

The names an op folder uses, and the debugger for notebooks and tests:

    from brrr_kernels import OpSpec, Inputs, Size          # spec.py
    from brrr_kernels import import_cuda, launch, cdiv     # numba_kernel.py

    brrr_kernels.debug("sigmoid", index=5)                  # pdb inside the thread that computes y[5]
    print(brrr_kernels.trace("sigmoid", block=0, thread=5))

Names are imported on first use, so `import brrr_kernels` stays cheap (numba loads only when a
numba name is asked for).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it
_PUBLIC = {
    "OpSpec": "spec", "Inputs": "spec", "Size": "spec", "Layout": "spec", "Place": "spec",
    "one_per_thread": "spec",
    "Tolerance": "tolerances", "DEFAULT": "tolerances",
    "import_cuda": "numba_env", "launch": "numba_env", "cdiv": "numba_env",
}

__all__ = ["debug", "trace", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
