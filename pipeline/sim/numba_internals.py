"""Every private piece of numba's CUDA simulator brrr relies on, listed once, and the one way to reach
them. numba-cuda's simulator is a dependency at risk (its MLIR successor has none), so a release that
drops or renames one of these must fail here, naming the piece, rather than somewhere deep in a run.
Only sim/ imports numba.cuda.simulator; other layers go through `internal`."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from ..base.errors import BrrrError


@dataclass(frozen=True)
class Internal:
    module: str      # under numba.cuda.simulator
    name: str
    use: str         # what brrr does with it


INTERNALS: tuple[Internal, ...] = (
    Internal("kernel", "BlockManager", "replaced by scheduler.Block: the block's threads take turns"),
    Internal("kernel", "FakeCUDAModule", "replaced by install's SimModule: warp functions, tracked shared memory"),
    Internal("kernel", "FakeCUDAKernel", "its launches are bounded (launch_bounds), timed (estimate) and counted"),
    Internal("kernel", "_get_kernel_context", "a block finds its kernel-side cuda module"),
    Internal("kernelapi", "FakeCUDAModule", "the base of install's SimModule"),
    Internal("kernelapi", "FakeCUDAShared", "the base of shared_memory.TrackedShared (uses _dynshared, _dynshared_size)"),
    Internal("kernelapi", "FakeCUDAAtomic", "the base of shared_memory.TrackedAtomic"),
    Internal("cudadrv.devicearray", "FakeCUDAArray", "numba_env passes torch tensors to kernels as these"),
    Internal("cudadrv.devicearray", "FakeWithinKernelCUDAArray", "its __setitem__ records writers (writers, debugger)"),
)


class SimulatorChanged(BrrrError):
    """The installed numba-cuda lacks a piece of its simulator brrr needs."""


def internal(module: str, name: str) -> Any:
    """numba.cuda.simulator.MODULE.NAME, or a SimulatorChanged naming the piece and what brrr needs it for."""
    entry = next((i for i in INTERNALS if (i.module, i.name) == (module, name)), None)
    if entry is None:
        raise AssertionError(f"{module}.{name} is not listed in INTERNALS")  # a brrr bug: list it first
    try:
        return getattr(importlib.import_module(f"numba.cuda.simulator.{module}"), name)
    except (ImportError, AttributeError) as e:
        from importlib.metadata import version

        raise SimulatorChanged(
            f"numba-cuda {version('numba-cuda')}'s simulator has no numba.cuda.simulator.{module}.{name}, which brrr "
            f"needs ({entry.use}); install the numba-cuda range pyproject.toml names") from e


def missing() -> list[str]:
    """The listed pieces the installed numba-cuda lacks, each as 'module.name: use'."""
    gone = []
    for i in INTERNALS:
        try:
            internal(i.module, i.name)
        except SimulatorChanged:
            gone.append(f"{i.module}.{i.name}: {i.use}")
    return gone
