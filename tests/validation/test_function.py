"""The one autograd.Function every stage goes through."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import copy_op, failed, plant, validate

from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.op.loaders import load_op, load_reference
from brrr_kernels.validation.function import apply, call


def test_forward_and_backward_go_through_the_stage(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "reference.py", "return grad_y * y * (1 - y)", "return 0 * grad_y + 7")
    stage = load_reference(load_op(str(folder)))
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    apply(stage, x).sum().backward()
    assert torch.equal(x.grad, torch.full_like(x, 7.0))  # the stage's own backward, not autograd's


def test_only_the_gradients_asked_for_are_returned() -> None:
    stage = load_reference(load_op("mul"))
    a = torch.randn(4, dtype=torch.float64, requires_grad=True)
    b = torch.randn(4, dtype=torch.float64)
    apply(stage, a, b).sum().backward()
    torch.testing.assert_close(a.grad, b)
    assert b.grad is None


def test_a_forward_with_the_wrong_number_of_results_is_named(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "reference.py", "    return torch.where(x >= 0, 1 / (1 + e), e / (1 + e))",
                   "    return x, x")
    stage = load_reference(load_op(str(folder)))
    with pytest.raises(OpLoadError, match=r"reference.py: forward returned 2 value\(s\).*declares 1 tensor"):
        call(stage, torch.randn(3))


# --- every tensor a call receives is watched for writes --------------------------------------------


@pytest.mark.parametrize("op", ["sigmoid", "softmax"])
def test_a_backward_that_zeroes_grad_y_is_an_input_write(mutant, op: str) -> None:
    """It used grad_y, then zeroed it: every value right, but the caller's upstream gradient is gone."""
    bad = failed(validate(mutant(op, "grad_y_zeroed"), "numba"))
    detail = bad[("numba", "inputs unchanged", "all")].detail
    assert "numba backward wrote into grad_y" in detail, detail
    assert ("numba", "backward", "float32") not in bad  # the gradients themselves are right


def test_a_backward_that_zeroes_the_saved_y_is_named_an_input_write(mutant) -> None:
    """gradcheck alone said 'not reentrant ... non-deterministic', pointing away from the cause."""
    bad = failed(validate(mutant("sigmoid", "saved_y_zeroed"), "numba"))
    assert "numba backward wrote into y (saved for backward)" in bad[("numba", "inputs unchanged", "all")].detail
    gradcheck = bad[("numba", "gradcheck", "float64")].detail
    assert gradcheck.startswith("[size 9] backward wrote into y (saved for backward)"), gradcheck


def test_writes_are_watched_only_while_validation_asks() -> None:
    from brrr_kernels.validation.function import _snapshot, watching_writes

    x = torch.ones(3)
    assert _snapshot({"x": x}) is None  # an op used from PyTorch copies nothing
    with watching_writes():
        assert torch.equal(_snapshot({"x": x})["x"], x)


def test_a_backward_in_another_thread_is_watched_as_its_forward(mutant) -> None:
    """A GPU's autograd engine runs backward in a thread of its own, where context variables have their
    defaults: the backward's writes into its inputs must be seen there too (a thread here stands in)."""
    import threading

    from brrr_kernels.op.loaders import load_numba
    from brrr_kernels.validation.function import watching_writes

    stage = load_numba(load_op(str(mutant("sigmoid", "grad_y_zeroed"))))
    x = torch.randn(40, requires_grad=True)
    with watching_writes() as writes:
        y = apply(stage, x)
        other = threading.Thread(target=lambda: y.backward(torch.ones_like(y)))
        other.start()
        other.join()
    assert "backward wrote into grad_y" in writes, writes
