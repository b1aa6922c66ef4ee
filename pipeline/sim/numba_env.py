"""Import numba.cuda in the right mode, and launch kernels on torch tensors in either mode.

Under the simulator (NUMBA_ENABLE_CUDASIM=1) kernels run as Python threads on the CPU, taking
turns (scheduler.py), and take numpy arrays: a torch CPU tensor is passed as its numpy view,
wrapped so numba does not copy it, so writes land in the tensor and each is attributed to its
thread (writers.py). On a GPU, tensors are passed through __cuda_array_interface__ and the launch goes on
torch's current stream, so no synchronisation is needed between torch and numba work.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import Any

import torch

from ..base.errors import UsageError


def use_simulator(simulate: bool) -> None:
    """Choose the mode before numba is first imported; numba reads the variable only once."""
    wanted = "1" if simulate else "0"
    if "numba.cuda" in sys.modules and os.environ.get("NUMBA_ENABLE_CUDASIM", "0") != wanted:
        mode = "simulator" if simulate else "GPU"
        raise UsageError(f"numba.cuda is already imported in the other mode; cannot switch to the {mode} in this process")
    os.environ["NUMBA_ENABLE_CUDASIM"] = wanted


def simulating() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


def import_cuda() -> ModuleType:
    import numpy as np

    # numba-cuda 0.30 still registers an overload for np.row_stack, which numpy 2.5 removed.
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    if simulating():
        _tolerate_missing_cuda_runtime()
    else:
        # Validation launches tiny grids on purpose (sizes 1, block-1, ...): numba's occupancy
        # warning is noise there. numba-cuda raises its own copy of NumbaPerformanceWarning, so the
        # setting (read at import) and a message filter both stand in for a class filter.
        os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
        import warnings

        warnings.filterwarnings("ignore", message=r".*(under-utilization|low occupancy)")
    from numba import cuda

    if simulating():
        from . import install

        install.install()
    return cuda


def _tolerate_missing_cuda_runtime() -> None:
    """Let the simulator import where no CUDA runtime is installed (Python alone, no toolkit).

    numba-cuda (0.30) asks the CUDA runtime for its version while importing, in the simulator
    too (numba/cuda/debuginfo.py), and that raises DynamicLibNotFoundError where no libcudart
    exists. The simulator runs no CUDA code, so "no runtime" (version 0, which only turns off a
    debug-info feature of real GPU builds) is the true answer there.
    """
    try:
        from cuda.bindings import runtime
        from cuda.pathfinder import DynamicLibNotFoundError
    except ImportError:  # an older numba-cuda without cuda-bindings does not ask
        return
    asked = runtime.getLocalRuntimeVersion
    if getattr(asked, "brrr_tolerant", False):
        return

    def version_or_none() -> tuple[Any, int]:
        try:
            return asked()
        except DynamicLibNotFoundError:
            return (None, 0)

    version_or_none.brrr_tolerant = True  # type: ignore[attr-defined]
    runtime.getLocalRuntimeVersion = version_or_none


def _as_kernel_arg(value: Any) -> Any:
    if not isinstance(value, torch.Tensor):
        return value
    if simulating():
        if value.device.type != "cpu":
            raise UsageError(f"the numba simulator runs on CPU tensors, got one on {value.device}")
        from .numba_internals import internal

        FakeCUDAArray = internal("cudadrv.devicearray", "FakeCUDAArray")

        from . import writers

        # Wrapped here, the kernel works in the tensor's own memory (numba would copy a numpy
        # array in and back out), and each element it writes is attributed to its thread.
        view = value.detach().numpy()
        writers.track(value, view)
        return FakeCUDAArray(view)
    if value.device.type != "cuda":
        raise UsageError(f"numba on a GPU needs CUDA tensors, got one on {value.device}")
    return import_cuda().as_cuda_array(value.detach(), sync=False)


def launch(kernel: Any, grid: Any, block: Any, *args: Any, shared_bytes: int = 0) -> None:
    """kernel[grid, block](*args) with torch tensors converted for the current mode."""
    converted = [_as_kernel_arg(a) for a in args]
    _within_launch_bounds(kernel, block)
    if simulating():
        from . import writers

        try:
            kernel[grid, block, 0, shared_bytes](*converted)
        finally:
            writers.forget_arrays()
        return
    cuda = import_cuda()
    stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
    kernel[grid, block, stream, shared_bytes](*converted)


def _within_launch_bounds(kernel: Any, block: Any) -> None:
    """A GPU refuses a block larger than the kernel's launch_bounds; the simulator would run it."""
    limit = getattr(kernel, "brrr_max_threads", None)
    if limit is None:
        return
    threads = 1
    for d in (block if isinstance(block, tuple) else (block,)):
        threads *= int(d)
    if threads > limit:
        name = getattr(getattr(kernel, "fn", None), "__name__", "a kernel")
        raise UsageError(f"{name} launched with {threads} threads per block, above its launch_bounds={limit}: "
                         "a GPU refuses that launch (too many resources requested)")


def cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b
