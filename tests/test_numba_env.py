"""numba in the right mode, and kernel arguments from torch tensors."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from brrr_kernels.errors import UsageError
from brrr_kernels.numba_env import _as_kernel_arg, cdiv, import_cuda, use_simulator


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
