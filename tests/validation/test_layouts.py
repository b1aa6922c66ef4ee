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


def kernel(ignores: tuple[int, ...] = (), writes_densely: bool = False,
           also_wrong: Callable[[torch.Tensor], torch.Tensor] | None = None) -> Callable[[Tensors], Tensors]:
    """A stage: scaled_scan in float32 as a kernel computes it, reading the inputs in `ignores` as if
    contiguous, writing its output densely into an allocation like x's, and perhaps wrong otherwise too."""
    def run(xs: Tensors) -> Tensors:
        y = scaled_scan(tuple(dense(x) if i in ignores else x for i, x in enumerate(xs)))[0].float()
        y = also_wrong(y) if also_wrong else y
        if writes_densely and not xs[0].is_contiguous():
            out = torch.empty_like(xs[0])  # x's strides, as empty_like(x) keeps a dense x's
            dense(out).copy_(y)
            return (out,)
        return (y,)

    return run


def named(c: Case, stage: Callable[[Tensors], Tensors]) -> str | None:
    """cause() with the executor's judge: the stage run again, compared with what it returned."""
    def agrees(xs: Tensors, seen: Tensors) -> bool:
        return all(torch.equal(a, b) for a, b in zip(stage(xs), seen))

    return cause(c, stage(c.inputs), agrees, (("x", "w"), ("y",)))


def case(how: str, make: Callable[[torch.Tensor], torch.Tensor], *which: int) -> Case:
    gen = torch.Generator().manual_seed(7)
    xs = (torch.randn(6, 9, generator=gen), torch.randn(6, 9, generator=gen))
    return Case(f"{how}, size (6, 9)", tuple(make(x) if i in which else x for i, x in enumerate(xs)))


def test_dense_is_a_tensors_memory_read_in_order_from_its_first_element() -> None:
    wide = torch.arange(8.0)
    assert dense(wide[1::2]).tolist() == [1.0, 2.0, 3.0, 4.0]
    x = torch.arange(6.0).view(2, 3)
    assert dense(permuted(x)).tolist() == [[0.0, 3.0, 1.0], [4.0, 2.0, 5.0]]
    assert dense(x) is x


@pytest.mark.parametrize("how,make", [("non-contiguous", noncontiguous), ("permuted", permuted)])
@pytest.mark.parametrize("ignored", [(0,), (1,), (0, 1)])
def test_the_inputs_a_stage_reads_densely_are_named_and_only_they(how: str, make, ignored: tuple[int, ...]) -> None:
    found = named(case(how, make, 0, 1), kernel(ignores=ignored))
    assert found is not None
    assert found.startswith({(0,): "x read", (1,): "w read", (0, 1): "x and w read"}[ignored]), found


def test_a_stage_wrong_for_another_reason_too_still_has_its_layout_named() -> None:
    """seed_bias_gelu's way: its GELU cancels for large negative inputs whatever the layout."""
    found = named(case("non-contiguous", noncontiguous, 0, 1), kernel(ignores=(0, 1), also_wrong=lambda y: y.round()))
    assert found is not None and found.startswith("x and w read as if contiguous"), found


def test_an_output_written_densely_into_a_permuted_allocation_is_named() -> None:
    c = case("permuted", permuted, 0, 1)
    found = named(c, kernel(writes_densely=True))
    assert found is not None and found.startswith("y written as if contiguous"), found
    assert str(tuple(torch.empty_like(c.inputs[0]).stride())) in found
    both = named(c, kernel(ignores=(0,), writes_densely=True))
    assert both is not None and both.startswith("x read as if contiguous") and "y written as if contiguous" in both


@pytest.mark.parametrize("stage", [
    kernel(also_wrong=lambda y: y.roll(1, -1)),  # wrong the same way whatever the layout
    lambda xs: (torch.randn(6, 9),),  # a different answer each call: nothing reproduces it
])
def test_a_wrong_result_no_layout_explains_names_no_cause(stage) -> None:
    assert named(case("non-contiguous", noncontiguous, 0, 1), stage) is None


def test_a_case_of_contiguous_inputs_or_not_a_layout_case_names_no_cause() -> None:
    assert named(case("misaligned", misaligned, 0, 1), kernel(also_wrong=lambda y: y + 1)) is None
    plain = Case("size (6, 9)", case("non-contiguous", noncontiguous, 0).inputs)
    assert named(plain, kernel(ignores=(0,))) is None


@pytest.mark.parametrize("label,message,refused", [
    ("non-contiguous, size 9", "x must be contiguous\nException raised from forward at kernel.cu:12", True),
    ("permuted, size (3, 4)", "Expected x.is_contiguous() to be true, but got false.", True),
    ("misaligned, size 9", "x: data pointer must be 16-byte aligned", True),
    ("size 9", "x must be contiguous", False),  # an ordinary case: a failure, whatever it says
    ("non-contiguous, size 9", "CUDA error: an illegal memory access was encountered", False),
    # causal-conv1d's 16-byte load of a misaligned x: the kernel's fault, not a refusal, whatever it says
    ("misaligned, size 9", "/tmp/op/conv.cu:90: misaligned access in conv_kernel<float>, block (0, 0, 0), "
                           "thread (0, 0, 0): a 16-byte load at an address not a multiple of 16", False),
    ("misaligned, size 9", "CUDA error: misaligned address", False),
])
def test_a_layout_refusal_is_told_from_a_fault(label: str, message: str, refused: bool) -> None:
    found = declined(Case(label, ()), RuntimeError(message))
    assert (found is not None) == refused
    if refused:
        assert "Exception raised" not in found and ("contiguous" in found or "aligned" in found)
