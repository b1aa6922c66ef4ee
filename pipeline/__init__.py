"""brrr: a staged kernel-development pipeline for PyTorch (reference -> numba -> CUDA C).

For notebooks and tests, the debugger is here too:

    pipeline.debug("sigmoid", index=5)             # pdb inside the thread that computes y[5]
    print(pipeline.trace("sigmoid", block=0, thread=5))
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def debug(op: str, **selection: Any) -> Any:
    """Stop in pdb in one simulated thread; selection as `brrr debug` (index=, block=, thread=, ...)."""
    from pipeline import debugger

    session, module = debugger.prepare(op, **selection)
    return debugger.debug(session, module)


def trace(op: str, **selection: Any) -> str:
    """The lines one simulated thread executes, with changed locals and writes, as text."""
    import io

    from pipeline import debugger

    session, module = debugger.prepare(op, **selection)
    out = io.StringIO()
    debugger.trace(session, module, out)
    return out.getvalue()
