"""numba in the right mode, and kernel arguments from torch tensors."""

from __future__ import annotations

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


def test_simulator_arguments_are_numpy_views_of_the_tensor() -> None:
    t = torch.zeros(4)
    view = _as_kernel_arg(t)
    assert isinstance(view, np.ndarray)
    view[2] = 5.0
    assert t[2] == 5.0  # writes land in the tensor


def test_the_simulator_refuses_tensors_off_the_cpu() -> None:
    with pytest.raises(UsageError, match="CPU tensors"):
        _as_kernel_arg(torch.empty(3, device="meta"))


def test_cdiv() -> None:
    assert [cdiv(n, 128) for n in (1, 127, 128, 129)] == [1, 1, 1, 2]
