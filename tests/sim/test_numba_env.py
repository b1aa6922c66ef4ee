"""numba in the right mode, and kernel arguments from torch tensors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from brrr_kernels.base.errors import UsageError
from brrr_kernels.sim.numba_env import _as_kernel_arg, cdiv, import_cuda, use_simulator


def test_the_mode_cannot_change_once_numba_cuda_is_imported() -> None:
    import_cuda()
    use_simulator(True)  # the mode this process runs in: fine
    with pytest.raises(UsageError, match="already imported in the other mode"):
        use_simulator(False)


def test_simulator_arguments_wrap_numpy_views_of_the_tensor() -> None:
    """Wrapped for the simulator (which would copy a bare numpy array in and out): the kernel works in
    the tensor's memory."""
    t = torch.zeros(4)
    arg = _as_kernel_arg(t)
    assert isinstance(arg._ary, np.ndarray)
    arg[2] = 5.0
    assert t[2] == 5.0  # writes land in the tensor


def test_the_simulator_refuses_tensors_off_the_cpu() -> None:
    with pytest.raises(UsageError, match="CPU tensors"):
        _as_kernel_arg(torch.empty(3, device="meta"))


def test_cdiv() -> None:
    assert [cdiv(n, 128) for n in (1, 127, 128, 129)] == [1, 1, 1, 2]


def test_the_simulator_imports_where_no_cuda_runtime_is_installed() -> None:
    # numba-cuda asks the CUDA runtime for its version while importing; on a machine with Python
    # alone the lookup raises. A fresh process where it raises must still import the simulator.
    code = """
import os
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
from cuda.bindings import runtime
from cuda.pathfinder import DynamicLibNotFoundError
def missing():
    raise DynamicLibNotFoundError('Failure finding "libcudart.so.13 or libcudart.so.12"')
runtime.getLocalRuntimeVersion = missing
from brrr_kernels import import_cuda
cuda = import_cuda()
print("imported:", cuda.__name__, cuda.is_available())
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "imported: numba.cuda True" in proc.stdout  # the simulator reports itself available


@pytest.mark.parametrize("decorate", ["bounds", "bounds and registers"])
def test_a_launch_above_the_kernels_launch_bounds_is_refused_as_a_gpu_would(decorate: str) -> None:
    """kernel.cu's __launch_bounds__ mirrored in numba: the simulator takes the GPU options, and holds
    each launch to the bound (a GPU refuses a larger block; the simulator would have run it)."""
    from brrr_kernels.sim.numba_env import launch

    cuda = import_cuda()
    options = {"launch_bounds": 64} | ({"max_registers": 32} if decorate != "bounds" else {})

    source = "def fill(out):\n    i = cuda.grid(1)\n    if i < out.shape[0]:\n        out[i] = i\n"
    space = {"cuda": cuda}  # a kernel's module globals: the simulator swaps its `cuda` there
    exec(source, space)
    fill = cuda.jit(**options)(space["fill"])
    out = torch.zeros(128)
    launch(fill, 2, 64, out)
    assert out[127] == 127
    with pytest.raises(UsageError, match="fill launched with 128 threads per block, above its launch_bounds=64"):
        launch(fill, 1, 128, out)
    with pytest.raises(UsageError, match="launched with 96 threads"):
        launch(fill, 1, (32, 3), out)
