"""Comparisons: tolerances, NaN from unwritten outputs, infinities, the worst element."""

from __future__ import annotations

import torch

from brrr_kernels.op.tolerances import rule_for
from brrr_kernels.verdict.compare import Around, compare, same_bits

F32 = rule_for("y", torch.float32, "numba")


def test_equal_tensors_pass() -> None:
    x = torch.randn(100)
    c = compare("y", x, x.double(), F32)
    assert c.ok and c.max_abs == 0


def test_nan_where_a_number_is_expected_fails_and_is_named() -> None:
    expected = torch.randn(10, dtype=torch.float64)
    got = expected.float().clone()
    got[7] = float("nan")
    c = compare("y", got, expected, F32, Around(probe=expected))
    assert not c.ok
    assert c.worst is not None and c.worst.flat_index == 7
    assert "NaN where a number was expected" in c.reason


def test_matching_infinities_pass_and_opposite_fail() -> None:
    e = torch.tensor([float("inf"), float("-inf"), 1.0], dtype=torch.float64)
    assert compare("y", e.float(), e, F32).ok
    flipped = torch.tensor([float("-inf"), float("-inf"), 1.0])
    assert not compare("y", flipped, e, F32).ok


def test_worst_is_the_largest_violation() -> None:
    e = torch.ones(5, dtype=torch.float64)
    g = e.float().clone()
    g[1] += 1e-3
    g[3] += 1e-1
    c = compare("y", g, e, F32)
    assert not c.ok and c.bad_count == 2 and c.worst.index == (3,)


def test_shape_mismatch_is_reported() -> None:
    c = compare("y", torch.zeros(3), torch.zeros(4, dtype=torch.float64), F32)
    assert not c.ok and "shape (3,), expected (4,)" in c.reason


def test_float32_tolerance_catches_a_relative_error_of_1e_4() -> None:
    e = torch.rand(1000, dtype=torch.float64) + 1
    assert not compare("y", (e * (1 + 1e-4)).float(), e, F32).ok
    assert compare("y", e.float(), e, F32).ok


def test_same_bits_sees_a_write_and_nan_payloads() -> None:
    a = torch.tensor([1.0, float("nan")])
    assert same_bits(a, a.clone())
    b = a.clone()
    b[0] = 2.0
    assert not same_bits(a, b)


def test_no_relative_error_where_the_bound_is_not_relative() -> None:
    from brrr_kernels.op.tolerances import Widen

    # Terms of size 1 that cancel to about 1e-9: relative errors of 1e-2 that the widening allows.
    expected = torch.tensor([1e-9, 2e-9, 1.0], dtype=torch.float64)
    got = (expected + torch.tensor([1e-11, 1e-11, 0.0], dtype=torch.float64)).float()
    widened = rule_for("y", torch.float32, "numba", (Widen("y", "terms cancel", scale=lambda t: t["x"]),))
    terms = {"x": torch.ones(3, dtype=torch.float64)}
    c = compare("y", got, expected, widened, Around(terms))
    assert c.ok and c.max_rel is not None and c.max_rel < 1e-6  # only the element of size 1 is bounded relatively
    only_cancelling = compare("y", got[:2], expected[:2], widened, Around({"x": torch.ones(2, dtype=torch.float64)}))
    assert only_cancelling.ok and only_cancelling.max_rel is None
    # The spread under rounding bounds an element the same way: where it sets the bound, no relative error.
    spread = torch.tensor([1e-10, 1e-10, 0.0], dtype=torch.float64)
    by_spread = compare("y", got, expected, F32, Around(spread=spread))
    assert by_spread.ok and by_spread.max_rel is not None and by_spread.max_rel < 1e-6
    assert F32.ulps * F32.eps < 1e-2  # the relative error of the first element would have read 1e-2


def test_the_worst_element_names_its_input_by_the_spec_name() -> None:
    target = torch.tensor([801, 3, 5])
    c = compare("loss", torch.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64), F32,
                Around(probe=target, probe_name="target"))
    assert c.worst is not None and c.worst.input_name == "target" and c.worst.input == 5.0


class Spread:
    """A spread under rounding that counts how often it was measured."""

    def __init__(self, value: torch.Tensor) -> None:
        self.value, self.calls = value, 0

    def __call__(self) -> torch.Tensor:
        self.calls += 1
        return self.value


def test_the_spread_is_measured_only_where_it_could_excuse_an_element() -> None:
    expected = torch.tensor([1.0, -2.0, 1e-9, 3.0], dtype=torch.float64)
    terms = {"x": torch.tensor([1.0, 2.0, 1.0, 3.0], dtype=torch.float64)}
    wide = Spread(torch.full((4,), 1e-6, dtype=torch.float64))
    # Element 2 is off by 1e-7 against a bound of 8 ulps of 1e-9: out by the fixed rule, and a spread
    # of 1e-6 (a gradient crossing zero, say) excuses it: measured once, the comparison passes.
    near = expected.float().clone()
    near[2] = 1e-9 + 1e-7
    assert compare("y", near, expected, F32, Around(terms, spread=wide)).ok and wide.calls == 1
    # Nothing out by the fixed rule: not measured.
    assert compare("y", expected.float(), expected, F32, Around(terms, spread=wide)).ok and wide.calls == 1
    # A NaN, an infinity, or an element off by a tenth of the case's largest number: no spread the
    # math admits could excuse them, so they fail without it, named as before.
    for bad in (float("nan"), float("inf"), 1e-9 + 0.3):
        got = near.clone()
        got[2] = bad
        c = compare("y", got, expected, F32, Around(terms, spread=wide))
        assert not c.ok and c.worst is not None and c.worst.flat_index == 2
        assert wide.calls == 1


def test_an_element_past_any_spread_fails_even_beside_one_a_spread_excuses() -> None:
    expected = torch.tensor([1e-9, 1.0], dtype=torch.float64)
    got = torch.tensor([1e-9 + 1e-7, 1.5], dtype=torch.float32)
    spread = Spread(torch.full((2,), 1e-6, dtype=torch.float64))
    c = compare("y", got, expected, F32, Around({"x": torch.ones(2, dtype=torch.float64)}, spread=spread))
    assert not c.ok and c.bad_count == 2 and spread.calls == 0


def test_an_error_a_spread_could_excuse_is_unproven_without_one_and_a_large_one_is_not() -> None:
    expected = torch.full((4,), 1.0, dtype=torch.float64)
    near = expected.float().clone()
    near[1] += 1e-5  # ~84 ulps: out of 8, far inside float32's past-any-spread (1.9% of the largest)
    far = expected.float().clone()
    far[1] = 2.0
    around = Around(terms={"x": expected})  # the case's numbers: what "past any spread" is measured against
    assert compare("y", near, expected, F32, around).unproven
    assert not compare("y", far, expected, F32, around).unproven
    assert not compare("y", expected.float(), expected, F32, around).unproven  # nothing out: nothing to prove
