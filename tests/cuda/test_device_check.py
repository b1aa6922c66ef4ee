"""nvcc's compile check beside the CPU execution (device_check): nvcc short of the host object."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import copy_op, needs_nvcc, plant

from brrr_kernels.base.errors import BuildError
from brrr_kernels.cuda import builder, device_check
from brrr_kernels.op.loaders import load_op


def test_device_only_swaps_the_compile_step_and_keys_it_apart(tmp_path: Path) -> None:
    job = builder.Job(Path("k.cu"), ["nvcc", "-c", "-O3"], "0123456789abcdef", tmp_path / "op-kernel-0123456789abcdef.o",
                      Path("k.cu"))
    front = device_check.device_only(job)
    assert front.command == ["nvcc", "--cuda", "-O3"]
    assert front.key != job.key and front.object.parent == job.object.parent and front.object != job.object
    with pytest.raises(ValueError):
        device_check.device_only(front._replace(command=["nvcc", "-E"]))


@needs_nvcc
def test_reports_each_kernel_and_is_cached(tmp_path: Path) -> None:
    op = load_op(str(copy_op("sigmoid", tmp_path)))
    report = device_check.kernel_check(op)
    assert any(k.kernel.startswith("sigmoid_forward_kernel") and k.registers > 0 for k in report.kernels)
    assert device_check.kernel_check(op).cached
    # A copy elsewhere, the same files: the report is reused; an edit is compiled again.
    copy = load_op(str(copy_op("sigmoid", tmp_path / "elsewhere")))
    assert device_check.kernel_check(copy).cached
    edited = plant(copy.folder, "kernel.cu", "constexpr int kThreads = 256;", "constexpr int kThreads = 128;")
    assert not device_check.kernel_check(load_op(str(edited))).cached


@needs_nvcc
def test_host_code_calling_a_device_function_is_refused(tmp_path: Path) -> None:
    # nvcc's front end refuses this only over the host code (cudafe++): -cubin alone would pass it,
    # and g++ in the CPU build accepts it too.
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu", "void sigmoid_forward(const T* x, T* y, int64_t n, "
                   "cudaStream_t stream) {\n", "void sigmoid_forward(const T* x, T* y, int64_t n, cudaStream_t stream) "
                   "{\n    (void)stable_sigmoid(T(0));\n")
    with pytest.raises(BuildError, match=r"kernel\.cu.*__device__ function"):
        device_check.kernel_check(load_op(str(folder)))
