"""rounding.py: the reference's spread under rounding is wide where its math cancels, and only there."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from brrr_kernels.op.tolerances import SPREAD, rule_for
from brrr_kernels.verdict import rounding

EPS32 = torch.finfo(torch.float32).eps
EPS64 = torch.finfo(torch.float64).eps


def swish_grad(x: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(x)
    return s * (1 + x * (1 - s))  # zero near x = -1.2785: two terms of size ~0.22 cancel


def centred(x: torch.Tensor) -> torch.Tensor:
    """x - mean in float64 whatever x's dtype, as layernorm's reference does."""
    xd = x.double()
    return (xd - xd.mean(dim=-1, keepdim=True)).to(x.dtype)


def row_sum(x: torch.Tensor) -> torch.Tensor:
    return x.sum(dim=-1)


def spread_of(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    outs, _ = rounding.spread(lambda: ((fn(x.to(dtype)),), ()), seed=0)
    assert outs[0] is not None
    return outs[0]


def test_a_gradient_crossing_zero_is_judged_against_its_terms() -> None:
    x = torch.linspace(-1.4, -1.15, 20001, dtype=torch.float32)
    exact, got = swish_grad(x.double()), swish_grad(x).double()  # float32 evaluation: a correct kernel
    rule = rule_for("grad_x", torch.float32, "numba")
    assert (rule.excess(got, exact) > 1).any(), "the fixed rule alone fails a correct float32 evaluation here"
    spread = spread_of(swish_grad, x, torch.float32)
    assert not (rule.excess(got, exact, spread=spread) > 1).any()
    terms = (torch.sigmoid(x.double()) * (1 + x.double().abs())).abs()
    assert (spread <= 8 * EPS32 * terms).all(), "never wider than a few units of the terms"


@pytest.mark.parametrize("fn", [torch.exp, torch.tanh, torch.sigmoid], ids=["exp", "tanh", "sigmoid"])
def test_a_well_conditioned_element_gets_a_unit_or_two(fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Inputs are exact in the stage's dtype: exp(10) is allowed its own rounding, not 10 times it."""
    x = torch.linspace(-10, 10, 501, dtype=torch.float32)
    spread = spread_of(fn, x, torch.float32)
    assert (SPREAD * spread <= 4 * EPS32 * fn(x.double()).abs()).all()


def test_what_the_reference_computes_in_float64_is_nudged_in_float64() -> None:
    """A float32 mean near 1e4 (layernorm's planted cuda_rounded_mean) is still far out of bounds."""
    gen = torch.Generator().manual_seed(1)
    x = (1e4 + torch.randn(4, 64, generator=gen, dtype=torch.float64)).float()
    spread = spread_of(centred, x, torch.float32)
    exact = centred(x.double())
    rounded_mean = (x.double() - x.mean(dim=-1, keepdim=True).double())  # mean rounded to float32
    assert (rule_for("y", torch.float32, "cuda").excess(rounded_mean, exact, spread=spread) > 1).any()


def test_a_sum_of_n_terms_is_nudged_as_its_n_roundings() -> None:
    # a running sum's error is a walk of n - 1 roundings, each a unit of a partial sum of sizes: about
    # sqrt(n) units of the terms' sizes, more than the one unit of a single rounding, never n
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(64, 4096, generator=gen, dtype=torch.float32)
    spread = spread_of(row_sum, x, torch.float32)
    sizes = x.double().abs().sum(dim=-1)
    assert (spread >= 4 * EPS32 * sizes).float().mean() > 0.5, "more than one rounding of the sum"
    assert (spread <= 4096 ** 0.5 * EPS32 * sizes).all(), "a random walk, not the worst case of n units"


def tiled_scan(x: torch.Tensor, accumulate: torch.dtype, tile: int = 256) -> torch.Tensor:
    """A row scan as a kernel writes it: a tree within each tile (Hillis-Steele), then a carry across
    tiles, summed in `accumulate`."""
    rows, n = x.shape
    t = torch.nn.functional.pad(x.to(accumulate), (0, -n % tile)).reshape(rows, -1, tile)
    step = 1
    while step < tile:
        t = torch.cat([t[..., :step], t[..., step:] + t[..., :-step]], -1)
        step *= 2
    out, carry = t.clone(), torch.zeros(rows, dtype=accumulate)
    for j in range(t.shape[1]):
        out[:, j] = t[:, j] + carry[:, None]
        carry = carry + t[:, j, -1]
    return out.reshape(rows, -1)[:, :n].to(x.dtype)


@pytest.mark.parametrize("size", [(37, 1000), (3, 70001)], ids=["37x1000", "3x70001"])
def test_a_tiled_float64_scan_passes_against_cumsum_and_a_float32_carry_fails(size: tuple[int, int]) -> None:
    # the reference calls torch.cumsum: counted as the running sum it is, not one rounding, so a scan
    # summing in another order passes with no Widen; accumulating in float32 is still far out
    # positive terms: every partial sum is as large as its terms' sizes, so nothing hides in cancellation
    x = torch.rand(*size, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    exact = torch.cumsum(x, -1)
    spread = spread_of(lambda t: torch.cumsum(t, -1), x, torch.float64)
    rule = rule_for("y", torch.float64, "cuda")
    correct = tiled_scan(x, torch.float64)
    assert (rule.excess(correct, exact) > 1).any(), "the fixed rule alone fails the correct scan"
    assert (rule.excess(correct, exact, spread=spread) <= 1).all()
    assert (rule.excess(tiled_scan(x, torch.float32), exact, spread=spread) > 1e5).any()


def test_a_matrix_product_in_another_order_passes_and_a_float32_product_fails() -> None:
    gen = torch.Generator().manual_seed(5)
    a = torch.randn(16, 4096, generator=gen, dtype=torch.float64)
    b = torch.randn(4096, 8, generator=gen, dtype=torch.float64)
    exact = a @ b
    outs, _ = rounding.spread(lambda: ((a @ b,), ()), seed=0)
    rule = rule_for("y", torch.float64, "cuda")
    pairwise = (a[:, :2048] @ b[:2048]) + (a[:, 2048:].flip(1) @ b[2048:].flip(0))  # two halves, reversed
    assert (rule.excess(pairwise, exact, spread=outs[0]) <= 1).all()
    assert (rule.excess((a.float() @ b.float()).double(), exact, spread=outs[0]) > 1e5).any()


def test_a_float32_accumulation_in_a_float64_stage_still_fails() -> None:
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(16, 1000, generator=gen, dtype=torch.float64)
    exact = row_sum(x)
    spread = spread_of(row_sum, x, torch.float64)
    float32_sum = x.float().sum(dim=-1).double()
    assert (rule_for("y", torch.float64, "cuda").excess(float32_sum, exact, spread=spread) > 1e5).all()


def test_a_reference_that_raises_under_nudging_leaves_the_fixed_rule() -> None:
    def broken() -> tuple[tuple[torch.Tensor, ...], tuple[()]]:
        raise RuntimeError("cannot run")

    outs, grads = rounding.spread(broken, seed=0)
    assert outs == [] and grads == []
