"""The layout cases' causes and refusals (validation/layouts.py): a stage that ignores strides is
named for what it did, only where that reproduces its output; one that refuses a layout by name is
listed as refused."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from brrr_kernels.validation.layouts import cause, declined, dense
from brrr_kernels.validation.trial import Case, misaligned, noncontiguous, permuted

Tensors = tuple[torch.Tensor, ...]


def scaled_scan(xs: Tensors) -> Tensors:
    """An order-sensitive op of two inputs: a running sum of x along its rows, scaled by w."""
    x, w = (t.double() for t in xs)
    return (x.cumsum(-1) * w,)


def agrees(xs: Tensors, got: Tensors) -> bool:
    """The judge the executor gives: here, float32's closeness to the float64 result."""
    return all(torch.allclose(g.double(), w, rtol=1e-5, atol=1e-6) for g, w in zip(got, scaled_scan(xs)))


def case(how: str, make: Callable[[torch.Tensor], torch.Tensor], *which: int) -> Case:
    gen = torch.Generator().manual_seed(7)
    xs = (torch.randn(6, 9, generator=gen), torch.randn(6, 9, generator=gen))
    return Case(f"{how}, size (6, 9)", tuple(make(x) if i in which else x for i, x in enumerate(xs)))


def named(c: Case, got: Tensors) -> str | None:
    return cause(c, got, agrees, (("x", "w"), ("y",)))


def test_dense_is_a_tensors_memory_read_in_order_from_its_first_element() -> None:
    wide = torch.arange(8.0)
    assert dense(wide[1::2]).tolist() == [1.0, 2.0, 3.0, 4.0]
    x = torch.arange(6.0).view(2, 3)
    assert dense(permuted(x)).tolist() == [[0.0, 3.0, 1.0], [4.0, 2.0, 5.0]]
    assert dense(x) is x


@pytest.mark.parametrize("how,make", [("non-contiguous", noncontiguous), ("permuted", permuted)])
@pytest.mark.parametrize("ignored", [(0,), (1,), (0, 1)])
def test_the_inputs_a_stage_reads_densely_are_named_and_only_they(how: str, make, ignored: tuple[int, ...]) -> None:
    c = case(how, make, 0, 1)
    got = scaled_scan(tuple(dense(x) if i in ignored else x for i, x in enumerate(c.inputs)))
    found = named(c, got)
    assert found is not None
    assert found.startswith({(0,): "x read", (1,): "w read", (0, 1): "x and w read"}[ignored]), found


def test_an_output_written_densely_into_a_permuted_allocation_is_named() -> None:
    c = case("permuted", permuted, 0, 1)
    right = scaled_scan(c.inputs)[0].float()
    got = torch.empty_like(c.inputs[0])  # x's permuted strides, as empty_like(x) gives them
    got.view(-1).copy_(right.reshape(-1)) if got.is_contiguous() else dense(got).copy_(right)
    found = named(c, (got,))
    assert found is not None and found.startswith("y written as if contiguous"), found
    assert str(tuple(got.stride())) in found


@pytest.mark.parametrize("what", ["garbage", "off by one element"])
def test_a_wrong_result_no_layout_explains_names_no_cause(what: str) -> None:
    c = case("non-contiguous", noncontiguous, 0, 1)
    right = scaled_scan(c.inputs)[0]
    got = torch.randn(right.shape) if what == "garbage" else right.roll(1, -1)
    assert named(c, (got,)) is None


def test_a_case_of_contiguous_inputs_or_not_a_layout_case_names_no_cause() -> None:
    c = case("misaligned", misaligned, 0, 1)
    assert named(c, (torch.zeros(6, 9),)) is None
    plain = Case("size (6, 9)", case("non-contiguous", noncontiguous, 0).inputs)
    assert named(plain, scaled_scan(tuple(dense(x) for x in plain.inputs))) is None


@pytest.mark.parametrize("label,message,refused", [
    ("non-contiguous, size 9", "x must be contiguous\nException raised from forward at kernel.cu:12", True),
    ("permuted, size (3, 4)", "Expected x.is_contiguous() to be true, but got false.", True),
    ("misaligned, size 9", "x: data pointer must be 16-byte aligned", True),
    ("size 9", "x must be contiguous", False),  # an ordinary case: a failure, whatever it says
    ("non-contiguous, size 9", "CUDA error: an illegal memory access was encountered", False),
])
def test_a_layout_refusal_is_told_from_a_fault(label: str, message: str, refused: bool) -> None:
    found = declined(Case(label, ()), RuntimeError(message))
    assert (found is not None) == refused
    if refused:
        assert "Exception raised" not in found and ("contiguous" in found or "aligned" in found)
