"""The comparison rule: how far an element of a stage's result may be from the expected value.

`expected` is the stage before, evaluated in float64 on the same inputs (rounded to the stage's
dtype). An element `got` of a stage computed in `dtype` passes when

    |got - expected| <= max(ulps * eps * max(scale, tiny), SPREAD * spread)

or when both are below tiny in size (a subnormal result, flushed to zero or not), or both are
NaN, or both the same infinity. Nothing else passes a non-finite value.

- eps is the dtype's machine epsilon (the gap between 1 and the next number): float64 2.2e-16,
  float32 1.2e-7, float16 9.8e-4, bfloat16 7.8e-3;
- scale is the element's own magnitude, |expected|, unless the op's spec widens that output (`Widen`);
- ulps is the dtype's default below, or the spec's number for that output;
- tiny is the dtype's smallest normal number (float64 2.2e-308, float32 and bfloat16 1.2e-38,
  float16 6.1e-5). There is no other floor: an error is judged against the element it is in, so a
  float64 result of 1e-13 off by 1e-16 fails as a result of 1 off by 1e-3 does.

- spread is how far the reference itself lands from the exact value at that element when each of
  its operations is rounded (rounding.py measures it): about a unit of |expected| where nothing
  cancels, and the size of the terms where something does (a gradient crossing zero, a row sum of
  both signs). It is how a newly written op that cancels passes without a hand-made widening, and
  it never admits an error larger than the op's own math makes.

A spec may also widen the bound of one output where its computation really cancels (terms of both
signs summed, 1 - y with y near 1, x - mean with the mean large): the element's error is then
measured against the size of the terms that cancel, not against their small difference, and the
spec says why; the report shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

# A case's tensors by name, in float64, as the expected side saw and made them: the op's inputs,
# visible outputs, its params (as 0-d tensors), for backward the upstream gradients ("grad_" +
# output name), and the stage dtype's "eps" and "tiny". A widened scale is computed from these.
Terms = Mapping[str, torch.Tensor]
Scale = Callable[[Terms], torch.Tensor]


@dataclass(frozen=True)
class Tolerance:
    """A dtype's default: how many of its ulps an element may be off, relative to its own magnitude."""

    ulps: float
    why: str


DEFAULT: dict[torch.dtype, Tolerance] = {
    # An element a few operations deep: the output's own rounding (1/2 ulp), each arithmetic
    # operation's (1/2), and a transcendental function's (CUDA's exp, log and tanh: up to 2 ulps
    # in float32 and 1 in float64; numba's simulator calls Python's math, correctly rounded
    # nearly always). Sums of positive terms (softmax's denominator) add ~1/2 ulp per level of a
    # tree. 8 ulps holds all of that with room, and is 10^5 times tighter than the 1e-10
    # relative error a float64 bug would commonly make.
    torch.float64: Tolerance(8, "the output's rounding, a few arithmetic roundings and a libm call (<= 2 ulps)"),
    torch.float32: Tolerance(8, "the output's rounding, a few arithmetic roundings and a libm call (<= 2 ulps)"),
    # 16-bit kernels compute in float32 and round once to the output: 1/2 ulp of the dtype, plus
    # float32's error, 1/8000 of a float16 ulp. The inputs are the same rounded values on both sides.
    torch.float16: Tolerance(2, "computed in float32 and rounded once: 1/2 ulp, float32's error is 1/8000 ulp"),
    torch.bfloat16: Tolerance(2, "computed in float32 and rounded once: 1/2 ulp, float32's error is 1/65000 ulp"),
}


# Tensor cores (mma.sync, wmma): |D - (C + A B)| for the exact product of the rounded inputs is at most
# this times K-term's magnitude |C| + sum_k |A B|. The CPU adds the exact products to C one at a time
# in float32: K roundings, each within 2^-24 of a partial sum no larger than that magnitude. A GPU
# adds each k-group with wider alignment but may truncate rather than round: twice the bound holds both.
def tensor_core_bound(k: int) -> float:
    return 2.0 * (k + 1) * 2.0**-24


# rounding.py nudges each result by up to a whole unit, twice what round-to-nearest makes, so the
# spread is about the error of the reference's own order of operations, or more. A kernel sums in another
# order (a tree for a loop): 2x holds that, and at a cancellation it is still 10^5 times tighter
# than a float32 intermediate in a float64 kernel would make.
SPREAD = 2.0

# The dtype the reference is nudged in, for a stage of each dtype: 16-bit stages compute in float32
# and round once (their rounding is the ulps term), so a bfloat16 intermediate still fails.
NUDGED_IN: dict[torch.dtype, torch.dtype] = {torch.float64: torch.float64, torch.float32: torch.float32,
                                             torch.float16: torch.float32, torch.bfloat16: torch.float32}


# An element whose error is more than eps**PAST_SPREAD_DIGITS of the largest number in its case
# (inputs, params, expected outputs, upstream gradients), eps that of the dtype the reference is
# nudged in, is past any spread the op's math admits: rounding every operation by a unit moves a
# result that far only where the reference itself has lost three quarters of its digits against
# the case's own numbers (float32: 1.9% of the largest; float64: 1.2e-4). Such an element fails
# without measuring the spread (rounding.py: 16 reruns of the reference, most of a failing
# verdict's time at a GPU's sizes); so does a NaN or an infinity where a number was expected, or a
# number where one was, which no spread can excuse. A wrong index, a missing barrier or a zeroed
# gradient is past; a constant wrong in its 4th digit is not, and is judged with its spread.
# Not a quarter of the digits less: a float32 reference computing a variance as E[x^2] - E[x]^2 at
# x ~ 1e4 spreads by ~10 on a variance of 100 (1e-3 of x), and a kernel doing the same passes.
PAST_SPREAD_DIGITS = 0.25


def past_any_spread(err: torch.Tensor, largest: float, dtype: torch.dtype) -> torch.Tensor:
    """Which of these errors (float64) no spread under rounding could excuse: not finite, or past
    eps**PAST_SPREAD_DIGITS of the case's largest number (`largest`), eps that of the dtype the
    reference is nudged in for a stage of `dtype`."""
    eps = torch.finfo(NUDGED_IN.get(dtype, dtype)).eps
    return ~torch.isfinite(err) | (err > eps**PAST_SPREAD_DIGITS * largest)


@dataclass(frozen=True)
class Widen:
    """A spec's wider bound for one output, where its computation really cancels.

    `scale(terms)` gives each element's magnitude to measure its error against (broadcast to the
    output's shape), in place of |expected|: typically the sum of the absolute values of the terms
    that cancel. `ulps` replaces the dtype's default. `dtypes` and `stages` restrict where it applies
    (empty: everywhere); `stages=("reference",)` widens only the comparison with the oracle, for an
    oracle that is itself less exact than the reference. `ulps_of` counts the ulps of that dtype
    instead of the stage's, for errors made in float64 whatever the stage's dtype (statistics the
    contract keeps in float64, or the float64 expected side's own rounding).
    """

    output: str
    why: str
    ulps: float | None = None
    scale: Scale | None = None
    dtypes: tuple[torch.dtype, ...] = ()
    stages: tuple[str, ...] = ()
    ulps_of: torch.dtype | None = None

    def applies(self, output: str, dtype: torch.dtype, stage: str) -> bool:
        return (self.output == output and (not self.dtypes or dtype in self.dtypes)
                and (not self.stages or stage in self.stages))


@dataclass(frozen=True)
class Rule:
    """The bound for one output of one stage in one dtype, as the comparison applies it."""

    dtype: torch.dtype
    ulps: float
    widened: tuple[Widen, ...] = ()

    @property
    def eps(self) -> float:
        return torch.finfo(self.dtype).eps

    @property
    def tiny(self) -> float:
        return torch.finfo(self.dtype).tiny

    def describe(self) -> str:
        """One line: the rule in numbers, and each widening's reason."""
        parts = [f"|err| <= max({self.ulps:g} ulps x |expected|, {self.tiny:.3g}, {SPREAD:g} x the reference's "
                 "spread under rounding)"]
        for w in self.widened:
            ulps = self.ulps if w.ulps is None else w.ulps
            size = "the size of the terms that cancel" if w.scale is not None else "|expected|"
            of = f" of {str(w.ulps_of).removeprefix('torch.')}" if w.ulps_of is not None else ""
            parts.append(f"widened for {w.output}: {ulps:g} ulps{of} x {size} ({w.why})")
        return "; ".join(parts)

    def bound(self, expected: torch.Tensor, terms: Terms | None = None,
              spread: torch.Tensor | None = None) -> torch.Tensor:
        """Each element's allowed error (float64, expected's shape); `spread` from rounding.py, if measured."""
        magnitude = expected.abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).clamp_min(self.tiny)
        allowed = self.ulps * self.eps * magnitude
        if terms is not None:  # a scale may use the stage dtype's numbers (a flushed subnormal costs tiny)
            terms = {**terms, "eps": torch.tensor(self.eps, dtype=torch.float64),
                     "tiny": torch.tensor(self.tiny, dtype=torch.float64)}
        for w in self.widened:
            scale = magnitude if w.scale is None or terms is None else _scale(w.scale, terms, expected)
            ulps = self.ulps if w.ulps is None else w.ulps
            eps = self.eps if w.ulps_of is None else torch.finfo(w.ulps_of).eps
            allowed = torch.maximum(allowed, ulps * eps * torch.maximum(scale, magnitude))
        if spread is not None and spread.shape == expected.shape:
            allowed = torch.maximum(allowed, SPREAD * spread.to(torch.float64))
        return allowed

    def excess(self, got: torch.Tensor, expected: torch.Tensor, terms: Terms | None = None,
               spread: torch.Tensor | None = None) -> torch.Tensor:
        """|got - expected| over each element's bound (float64, flat): above 1 fails, 0 where they agree."""
        g = got.detach().to(torch.float64).reshape(-1)
        e = expected.detach().to(torch.float64).reshape(-1)
        agree = (torch.isnan(g) & torch.isnan(e)) | (torch.isinf(g) & (g == e))
        agree |= (g.abs() < self.tiny) & (e.abs() < self.tiny)  # subnormal or zero on both sides
        err = (g - e).abs().nan_to_num(nan=float("inf"))
        ratio = err / self.bound(expected.detach().to(torch.float64), terms, spread).reshape(-1)
        return torch.where(agree, torch.zeros_like(ratio), ratio)


def stored_magnitude(value: torch.Tensor, terms: Terms) -> torch.Tensor:
    """What to measure the rounding of `value` to the stage's dtype against, for a scale: |value|, or the
    dtype's smallest normal (terms["tiny"]) where |value| is smaller.

    A stage that saves a result in its dtype and reads it back in backward (sigmoid's y) carries that
    result's rounding, while the expected side uses its float64 value. Where the value is normal that is
    eps/2 of |value|; below the smallest normal the steps are tiny * eps apart whatever the value, so
    its rounding is up to tiny * eps/2, many ulps of the value itself. Seen on an H100: float16's
    sigmoid(-10.875) = 1.8925e-5 saved as 1.8954e-5 (317 steps of 2^-24, 0.15% high, 3 ulps), and
    grad_x = grad_y * y * (1 - y) 2 ulps off while every operation of the kernel rounded correctly."""
    return value.abs().clamp_min(terms["tiny"])


def _scale(scale: Scale, terms: Terms, expected: torch.Tensor) -> torch.Tensor:
    s = torch.broadcast_to(scale(terms).to(torch.float64).abs(), expected.shape)
    # A scale that is not finite (an infinite input) would allow anything: fall back to |expected|.
    return torch.where(torch.isfinite(s), s, torch.zeros_like(s))


def rule_for(output: str, dtype: torch.dtype, stage: str, widenings: tuple[Widen, ...] = ()) -> Rule:
    """The dtype's default, widened by every entry of the spec's that names this output, dtype and stage."""
    found = tuple(w for w in widenings if w.applies(output, dtype, stage))
    return Rule(dtype=dtype, ulps=DEFAULT[dtype].ulps, widened=found)
