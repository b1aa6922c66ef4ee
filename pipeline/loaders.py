"""Load one stage of an op as a `Stage`: its forward and backward, callable on torch tensors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import OpLoadError
from .spec import Op, import_file, module_name


@dataclass(frozen=True)
class Stage:
    op: Op
    name: str  # reference | numba | cuda
    forward: Callable[..., Any]
    backward: Callable[..., Any]
    source: Path
    device: str  # where its tensors live: "cpu" or "cuda"
    module: Any = None  # the imported stage file, where there is one


def _functions(op: Op, stage: str, module: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    found = []
    for fn in ("forward", "backward"):
        f = getattr(module, fn, None)
        if not callable(f):
            raise OpLoadError(
                f"{op.path(stage)} does not define {fn}()",
                hint="every stage defines forward(...) and backward(...) with the same signatures",
            )
        found.append(f)
    return found[0], found[1]


def load_reference(op: Op) -> Stage:
    module = import_file(op.path("reference"), module_name(op, "reference"))
    fwd, bwd = _functions(op, "reference", module)
    return Stage(op, "reference", fwd, bwd, op.path("reference"), "cpu", module)


def load_numba(op: Op, gpu: bool = False) -> Stage:
    """Import the numba stage in the simulator (CPU tensors) or, with gpu=True, on the GPU."""
    from .numba_env import use_simulator

    use_simulator(not gpu)
    module = import_file(op.path("numba"), module_name(op, "numba" if not gpu else "numba_gpu"))
    fwd, bwd = _functions(op, "numba", module)
    return Stage(op, "numba", fwd, bwd, op.path("numba"), "cuda" if gpu else "cpu", module)


def load_cuda(op: Op, build: Any) -> Stage:
    """Wrap a built extension (see builder.build_extension) as a stage."""
    return Stage(op, "cuda", build.forward, build.backward, op.path("cuda"), "cuda")
