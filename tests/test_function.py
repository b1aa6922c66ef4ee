"""The one autograd.Function every stage goes through."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import copy_op, plant

from brrr_kernels.errors import OpLoadError
from brrr_kernels.function import apply, call
from brrr_kernels.loaders import load_op, load_reference


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
