"""Guard bands (cuda/guards.py): a write just outside a tensor a cuda-stage call receives or returns is
named, with its side and offset, where no memory check runs (the unchecked CPU build stands in for a
GPU here); the checked build stops it first, at its line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import copy_op, plant

from brrr_kernels.cuda import cpu_build
from brrr_kernels.cuda.guards import CANARY, GuardBandError, band_bytes, guarded_like
from brrr_kernels.cuda.isolated import Isolated
from brrr_kernels.op.loaders import Where, load_cuda, load_op
from brrr_kernels.validation.trial import Trial, stage_fn

TAIL = "for (int64_t i = base; i < n; ++i) grad_x[i] = sigmoid_grad(grad_y[i], y[i]);"


def _run(folder: Path, flavour: cpu_build.Flavour, n: int = 401) -> Exception | None:
    """Forward and backward of the op's cuda stage on n elements, as validation calls them."""
    op = load_op(str(folder))
    build = Isolated(cpu_build.build_cpu_extension(op, flavour), checked=flavour.checked)
    try:
        trial = Trial(stage_fn(load_cuda(op, build, Where.CPU_EXECUTION)), (torch.randn(n),), "cpu", torch.float32)
        trial.backward((torch.randn(n, dtype=torch.float64),))
    except Exception as e:
        return e
    finally:
        build.close()
    return None


@pytest.mark.parametrize(("new", "side"), [
    ("for (int64_t i = base; i <= n; ++i) grad_x[i] = sigmoid_grad(grad_y[i], y[i]);",
     "backward wrote after the end of grad_x (401 elements): at grad_x[401], 1 element past its last"),
    ("for (int64_t i = base; i < n; ++i) grad_x[i - 401] = sigmoid_grad(grad_y[i], y[i]);",
     "backward wrote before the start of grad_x (401 elements): 1 element before its first"),
], ids=["one past the end", "before the start"])
def test_a_write_outside_a_backward_result_is_named_without_memory_checks(tmp_path: Path, new: str, side: str) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu", TAIL, new)
    error = _run(folder, cpu_build.DEFAULT)
    assert isinstance(error, GuardBandError), error
    assert side in str(error), error


def test_the_checked_build_stops_the_same_write_at_its_line(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu", TAIL, TAIL.replace("i < n", "i <= n"))
    error = _run(folder, cpu_build.CHECKED)
    assert error is not None and "kernel.cu:" in str(error) and "past the last element of" in str(error), error


def test_a_correct_op_leaves_every_band_intact() -> None:
    assert _run(Path(load_op("sigmoid").folder), cpu_build.DEFAULT) is None


@pytest.mark.parametrize("make", [
    lambda: torch.randn(401), lambda: torch.randn(3, 0), lambda: torch.zeros(9, dtype=torch.float64)[1:],
    lambda: torch.randn(4, 6).t(), lambda: torch.randn(5, 8)[:, ::2],
], ids=["flat", "empty", "misaligned", "transposed", "strided"])
def test_a_guarded_copy_keeps_values_layout_and_alignment(make) -> None:
    t = make()
    copy, guard = guarded_like(t, "x")
    assert torch.equal(copy, t) and copy.stride() == t.stride() and copy.data_ptr() % 64 == t.data_ptr() % 64
    assert guard.changed() == []
    assert guard.start >= band_bytes(t) and len(guard.buffer) - guard.end >= band_bytes(t)
    assert bool((guard.buffer[:guard.start] == CANARY).all()) and bool((guard.buffer[guard.end:] == CANARY).all())
