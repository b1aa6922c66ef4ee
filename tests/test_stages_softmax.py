"""softmax: planted bugs in its stages that validation must catch, and its CUDA build."""

from __future__ import annotations

import re

import pytest
import torch
from conftest import HAS_GPU, gpu, needs_nvcc
from test_runner import failed, validate

from pipeline.report import NOT_RUN
from pipeline.spec import load_op

EXP = "math.exp(float(x[row, c]) - m)"


def test_numba_without_the_max_subtraction_overflows_on_large_values(mutant) -> None:
    """exp(x) instead of exp(x - max): the random rows (|x| < ~20) never show it, 1e4 does."""
    op = mutant("softmax", "numba_kernel.py", EXP, "math.exp(float(x[row, c]))")
    bad = failed(validate(op, "numba"))
    assert not any(check in ("forward", "backward") for _, check, _ in bad), "random inputs stay in range"
    for dtype in ("float32", "float64"):
        detail = bad[("numba", "edge forward", dtype)].detail
        assert "[large values]" in detail and "OverflowError" in detail, detail
        assert "math.exp(float(x[row, c]))" in detail  # the faulting line is shown
    # Each fault names the thread that overflowed, and that thread owns the column it was on.
    detail = bad[("numba", "edge forward", "float32")].detail
    pattern = r"block \((\d+), 0, 0\) thread \((\d+), 0, 0\).*locals: .*row=(\d+), t=(\d+), m=\S+, c=(\d+)"
    faults = [re.search(pattern, part, re.S) for part in detail.split("\n[")]
    assert faults and all(faults), detail
    for block, thread, row, t, c in (map(int, f.groups()) for f in faults):
        assert block == row and thread == t == c % 16


def test_naive_reference_fails_against_the_oracle_on_large_values(mutant) -> None:
    """Without the max, exp(1e4) is inf and inf/inf NaN, or exp(-1e4) = 0 and 0/0 NaN."""
    op = mutant("softmax", "reference.py", "e = torch.exp(x - m)", "e = torch.exp(x)")
    bad = failed(validate(op, "reference"))
    row = bad[("reference", "edge inputs", "float32")]
    assert "[large values]" in row.detail and "NaN where a number was expected" in row.detail
    assert "[minus infinity]" in row.detail  # its second row holds 1e4 too
    assert ("reference", "gradcheck", "float64") not in bad


def test_missing_barrier_before_the_fold_fails_forward(mutant) -> None:
    """Threads that read the partials before the others wrote them fold stale shared memory."""
    old = "    partial[t] = value\n    cuda.syncthreads()\n    # Every thread folds"
    op = mutant("softmax", "numba_kernel.py", old, "    partial[t] = value\n    # Every thread folds")
    bad = failed(validate(op, "numba"))
    assert ("numba", "forward", "float64") in bad
    assert "y:" in bad[("numba", "forward", "float64")].detail


def test_dot_product_not_reduced_over_the_block_fails_backward_only(mutant) -> None:
    """Each thread using its own partial dot: right for one-column rows, wrong once a row spans threads."""
    op = mutant("softmax", "numba_kernel.py", "    dot = block_sum(dot, partial, t)\n", "")
    bad = failed(validate(op, "numba"))
    assert not any(check in ("forward", "edge forward") for _, check, _ in bad)
    detail = bad[("numba", "backward", "float64")].detail
    assert "grad_x:" in detail and "(1, 1)" not in detail, detail
    assert "Jacobian mismatch" in bad[("numba", "gradcheck", "float64")].detail


def test_minus_infinity_gives_exact_zeros() -> None:
    from pipeline.function import call
    from pipeline.loaders import load_numba

    numba = load_numba(load_op("softmax"))
    x = torch.tensor([[float("-inf"), 0.0, 1.0]], dtype=torch.float64, requires_grad=True)
    (y,) = call(numba, x)
    assert y[0, 0].item() == 0.0 and abs(y.sum().item() - 1) < 1e-15
    (grad,) = torch.autograd.grad(y, x, torch.tensor([[5.0, 1.0, -1.0]], dtype=torch.float64))
    assert grad[0, 0].item() == 0.0


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_compiles_all_four_dtypes_without_spills() -> None:
    (row,) = validate("softmax", "cuda")
    assert row.verdict == NOT_RUN
    kernels = {k["kernel"]: k for k in row.extras["kernels"]}
    for t in ("float", "double", "c10::Half", "c10::BFloat16"):
        assert f"softmax_forward_kernel<{t}>" in kernels and f"softmax_backward_kernel<{t}>" in kernels
    assert all(k["spill_stores"] == 0 for k in kernels.values())


@gpu
def test_cuda_without_the_max_subtraction_gives_nan_on_large_values(mutant) -> None:
    op = mutant("softmax", "kernel.cu", "exp(static_cast<acc_t>(xr[c]) - m)", "exp(static_cast<acc_t>(xr[c]))")
    bad = failed(validate(op, "cuda"))
    for dtype in ("float32", "float16", "bfloat16"):
        detail = bad[("cuda", "edge forward", dtype)].detail
        assert "[large values]" in detail and "NaN where a number was expected" in detail, detail
