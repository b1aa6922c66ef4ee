"""brrr's own layout (kernel.cu + binding.cpp) written as public code writes kernels: a common.h in
the op folder with __shared__ in a template and includes of CUDA libraries (cublas_v2.h, cusparse.h), and a
host launcher with its kernel's name, which binding.cpp calls. Built and run on the CPU unchanged."""

from __future__ import annotations

from pathlib import Path

import torch
from conftest import REPO

from brrr_kernels.cuda import cpu_build
from brrr_kernels.op.loaders import load_op

ROWSUM = REPO / "tests" / "cuda" / "byok_ops" / "rowsum"


def test_a_brrr_layout_op_with_common_h_and_a_launcher_named_as_its_kernel_runs_on_the_cpu() -> None:
    op = load_op(str(ROWSUM))
    text, renamed = cpu_build.kernel_text(op)
    assert renamed == {"row_sum": "row_sum__host"}
    assert "__global__ void row_sum(T* out" in text  # the kernel keeps its name (faults and gdb say it)
    ext = cpu_build.build_cpu_extension(op)
    assert ext.backward is None  # forward-only: binding.cpp registers none (loading it as a stage used to raise)
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(5, 300, dtype=dtype)
        torch.testing.assert_close(ext.forward(x), x.sum(dim=1))


def test_the_common_h_include_is_rewritten_and_cusparse_stood_in_for() -> None:
    job = cpu_build.kernel_job(load_op(str(ROWSUM)))
    folders = [Path(part[2:]) for part in job.command if part.startswith("-I")]
    rewritten = next(f / "common.h" for f in folders if (f / "common.h").is_file() and f != ROWSUM)
    assert "__shared__ T partial" not in rewritten.read_text()  # a reference to per-block storage now
    assert any((f / "cusparse.h").is_file() and f.name == "stubs" for f in folders)


def test_brrrs_own_headers_are_found_not_stood_in_for() -> None:
    job = cpu_build.kernel_job(load_op("sigmoid"))  # kernel.cu includes "brrr_kernel.cuh" from brrr's include dir
    folders = [Path(part[2:]) for part in job.command if part.startswith("-I")]
    assert not any((f / "brrr_kernel.cuh").is_file() and "stubs" in f.parts for f in folders)
