"""layernorm: planted bugs in its stages that validation must catch, and its CUDA build."""

from __future__ import annotations

import pytest
from conftest import HAS_GPU, gpu, needs_nvcc
from test_runner import failed, validate

from pipeline.report import NOT_RUN

FIRST_BARRIER = ("    partial[t] = value\n    cuda.syncthreads()\n    # Every thread folds",
                 "    partial[t] = value\n    # Every thread folds")


def test_missing_barrier_between_write_and_fold_fails_forward(mutant) -> None:
    """Threads fold the partials before the others wrote them: wrong means, wrong y."""
    op = mutant("layernorm", "numba_kernel.py", *FIRST_BARRIER)
    bad = failed(validate(op, "numba"))
    detail = bad[("numba", "forward", "float64")].detail
    assert "y:" in detail, detail


def test_weight_gradient_from_one_row_fails_backward_only(mutant) -> None:
    """grad_weight and grad_bias must sum over every row; the first row alone is right only for one-row inputs."""
    op = mutant("layernorm", "numba_kernel.py", "    for row in range(rows):\n", "    for row in range(1):\n")
    bad = failed(validate(op, "numba"))
    assert not any(check in ("forward", "edge forward") for _, check, _ in bad)
    for dtype in ("float32", "float64"):
        detail = bad[("numba", "backward", dtype)].detail
        assert "grad_weight:" in detail and "grad_bias:" in detail and "grad_x:" not in detail, detail
        assert "(1, 1)" not in detail  # one row: nothing to sum
    assert "Jacobian mismatch" in bad[("numba", "gradcheck", "float64")].detail


def test_dropping_eps_divides_by_zero_on_constant_rows(mutant) -> None:
    """Variance 0 without eps: 1/sqrt(0), named at its line with the thread's locals. (Random rows fail
    too, in float64: eps = 1e-5 moves rstd by ~1e-6 relative, far above that tolerance.)"""
    op = mutant("layernorm", "numba_kernel.py", "/ cols + eps)", "/ cols)")
    bad = failed(validate(op, "numba"))
    for dtype in ("float32", "float64"):
        detail = bad[("numba", "edge forward", dtype)].detail
        assert "[constant rows]" in detail and "ZeroDivisionError" in detail, detail
        assert "r = 1.0 / math.sqrt(" in detail and "squares=0.0" in detail
    assert ("numba", "forward", "float64") in bad


def test_float32_statistics_fail_the_large_offset_in_the_reference(mutant) -> None:
    """A float32 mean of 1e4 + noise is off by up to 4.9e-4, which the normalised values inherit / std."""
    op = mutant("layernorm", "reference.py", "    xd = x.double()\n", "    xd = x\n")
    bad = failed(validate(op, "reference"))
    detail = bad[("reference", "edge inputs", "float32")].detail
    assert "[large offset]" in detail and "[constant rows]" not in detail, detail
    assert ("reference", "gradcheck", "float64") not in bad


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_compiles_all_three_dtypes_without_spills() -> None:
    (row,) = validate("layernorm", "cuda")
    assert row.verdict == NOT_RUN
    kernels = {k["kernel"]: k for k in row.extras["kernels"]}
    for t in ("float", "double", "c10::BFloat16"):
        for k in ("forward", "backward_x", "backward_weight"):
            assert f"layernorm_{k}_kernel<{t}>" in kernels
    assert all(k["spill_stores"] == 0 for k in kernels.values())


@gpu
def test_cuda_weight_gradient_from_one_row_group_fails_backward(mutant) -> None:
    op = mutant("layernorm", "kernel.cu", "for (int k = 1; k < kRowGroups; ++k)", "for (int k = 1; k < 1; ++k)")
    bad = failed(validate(op, "cuda"))
    detail = bad[("cuda", "backward", "float64")].detail
    assert "grad_weight:" in detail and "grad_x:" not in detail, detail
    assert ("cuda", "forward", "float64") not in bad
