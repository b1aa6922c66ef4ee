"""Put brrr's scheduler into numba's simulator: the turn-taking block, warp functions, tracked shared
memory and writers, and cuda.jit's GPU options. The one module that patches the simulator."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import shared_memory, writers
from .numba_internals import internal
from .scheduler import FULL_MASK, Block, Finding, WarpMaskError, current


def warp_function(kind: str) -> Callable[..., Any]:
    def call(self: Any, mask: int, *args: Any) -> Any:
        t = current()
        mask = int(mask) & FULL_MASK
        if not mask >> t.lane & 1:
            raise WarpMaskError(f"cuda.{kind}() with mask {mask:#010x} in lane {t.lane}: a lane must name itself")
        return t.wait_at(kind, mask, args)

    call.__name__ = kind
    return call


def _module_class() -> type:
    """numba's kernel-side cuda module, with warp functions, tracked shared memory and a deadline."""
    FakeCUDAModule = internal("kernelapi", "FakeCUDAModule")

    class SimModule(FakeCUDAModule):  # type: ignore[misc,valid-type]
        def __init__(self, grid_dim: Any, block_dim: Any, dynshared_size: int) -> None:
            super().__init__(grid_dim, block_dim, dynshared_size)
            self._shared = shared_memory.TrackedShared(dynshared_size)
            self._atomic = shared_memory.TrackedAtomic()
            self._started = time.monotonic()
            self._cpu_started = time.process_time()

        def deadline(self, limit: float) -> float:
            return self._started + limit

        def spent(self) -> tuple[float, float]:
            """(this process's CPU seconds, wall seconds) since the launch began."""
            return time.process_time() - self._cpu_started, time.monotonic() - self._started

        def begin_block(self, block: Block) -> None:
            self._shared.begin_block(block)

        def shared_arrays(self) -> Finding | None:
            return self._shared.end_of_epoch()

        @property
        def laneid(self) -> int:
            return current().lane

        def syncwarp(self, mask: int = FULL_MASK) -> None:
            warp_function("syncwarp")(self, mask)

        def activemask(self) -> int:
            return current().wait_at("activemask")

        def lanemask_lt(self) -> int:
            return (1 << current().lane) - 1

    for kind in ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "ballot_sync", "any_sync",
                 "all_sync", "eq_sync", "match_any_sync", "match_all_sync"):
        setattr(SimModule, kind, warp_function(kind))
    return SimModule


_installed = False


def install() -> None:
    """Put the turn-taking block, the warp functions and the sanitizer into numba's simulator."""
    global _installed
    if _installed:
        return
    import numba.cuda.simulator.kernel as sim_kernel

    for name in ("BlockManager", "FakeCUDAModule"):  # the two replaced below: named if a release drops them
        internal("kernel", name)
    sim_kernel.BlockManager = Block
    sim_kernel.FakeCUDAModule = _module_class()
    writers.install()
    from numba import cuda

    cuda.jit = _with_gpu_options(cuda.jit)
    _installed = True


def _with_gpu_options(jit: Any) -> Any:
    """numba's simulator refuses cuda.jit's GPU options (launch_bounds, max_registers, lineinfo): take
    them, so a stage mirrors kernel.cu's __launch_bounds__; keep launch_bounds on the kernel, which
    numba_env.launch holds every launch to, as a GPU does."""

    def jit_taking_gpu_options(func_or_sig: Any = None, *args: Any, launch_bounds: Any = None,
                               max_registers: Any = None, lineinfo: Any = None, **kwargs: Any) -> Any:
        made = jit(func_or_sig, *args, **kwargs)
        if launch_bounds is None:
            return made
        limit = int(launch_bounds if isinstance(launch_bounds, int) else launch_bounds[0])

        def bounded(kernel: Any) -> Any:
            kernel.brrr_max_threads = limit
            return kernel

        FakeCUDAKernel = internal("kernel", "FakeCUDAKernel")

        return bounded(made) if isinstance(made, FakeCUDAKernel) else lambda fn: bounded(made(fn))

    return jit_taking_gpu_options
