"""Element-wise comparison of a stage's tensors against expected ones (faults.py: its exceptions).

Every comparison applies the rule of tolerances.py to each element and yields the numbers a
report row needs: the worst element's error over its bound ("of bound"), the largest relative
and absolute errors, and the worst element (its index, the input value there, expected, got):
the one with the largest error over its bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch

from ..op.tolerances import Rule, Terms, past_any_spread
from ..sim.writers import writer_of

Placed = Literal["observed", "intended"]


@dataclass
class Worst:
    tensor: str
    index: tuple[int, ...]
    flat_index: int
    expected: float
    got: float
    shape: tuple[int, ...] = ()
    input: float | None = None
    input_name: str = ""  # the spec's name of the input `input` was read from
    case: str = ""
    block: tuple[int, ...] | None = None
    thread: tuple[int, ...] | None = None
    kernel: str | None = None  # the kernel whose thread wrote it, where the simulator saw the write
    # How block and thread are known: "observed" (a run saw that thread write the element) or
    # "intended" (the spec's layout says which thread should: nothing observed it, as on a GPU).
    placed: Placed | None = None


@dataclass
class Comparison:
    ok: bool
    max_abs: float
    max_rel: float | None  # None where no element's bound is relative (see compare)
    excess: float  # worst |err| / allowed; > 1 means out of tolerance
    worst: Worst | None
    reason: str = ""
    bad_count: int = 0
    shape_ok: bool = True
    widened: tuple[str, ...] = ()  # "grad_x: why", for each of the spec's widenings the rule applied
    # Out of the fixed bound, with no spread measured, and by no more than a spread under rounding could
    # excuse: only the spread could say (tolerances.past_any_spread).
    unproven: bool = False


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for dim in reversed(shape):
        index.append(flat % dim if dim else 0)
        flat //= dim if dim else 1
    return tuple(reversed(index))


@dataclass(frozen=True)
class Around:
    """What the case adds to a comparison. `terms`: its tensors by name, for an output whose bound
    the spec widens; `probe`: an input of the output's shape, whose value at the worst index is
    reported; `spread`: the reference's own spread under rounding at each element (rounding.py),
    or a function that measures it, called only where the fixed rule alone finds an element out."""

    terms: Terms | None = None
    probe: torch.Tensor | None = None
    spread: torch.Tensor | Callable[[], torch.Tensor | None] | None = None
    probe_name: str = ""  # the spec's name of the probe input, as the report shows it


def compare(name: str, got: torch.Tensor, expected: torch.Tensor, rule: Rule, around: Around = Around()) -> Comparison:
    """Compare `got` with `expected` (same shape; expected may be a wider dtype) by `rule` (see tolerances.py)."""
    terms, probe = around.terms, around.probe
    if tuple(got.shape) != tuple(expected.shape):
        return Comparison(False, float("inf"), float("inf"), float("inf"), None,
                          reason=f"{name}: shape {tuple(got.shape)}, expected {tuple(expected.shape)}", shape_ok=False)
    if got.numel() == 0:
        return Comparison(True, 0.0, 0.0, 0.0, None)
    g = got.detach().to("cpu", torch.float64).reshape(-1)
    e = expected.detach().to("cpu", torch.float64).reshape(-1)
    cpu_terms = {k: v.detach().to("cpu", torch.float64) for k, v in terms.items()} if terms else None
    e_shaped = expected.detach().to("cpu", torch.float64)
    spread = None
    excess = rule.excess(g, e_shaped, cpu_terms)
    if around.spread is not None and _spread_may_excuse(g, e, excess, cpu_terms, rule):
        spread = around.spread() if callable(around.spread) else around.spread
        if spread is not None and spread.numel() == expected.numel():
            spread = spread.reshape(expected.shape)
            excess = rule.excess(g, e_shaped, cpu_terms, spread)
        else:
            spread = None
    agree = excess == 0
    err = torch.where(agree, torch.zeros_like(g), (g - e).abs().nan_to_num(nan=float("inf")))
    bad = excess > 1
    worst_flat = int(torch.argmax(excess).item())
    max_abs = float(err.max().item())
    # Relative error, |got - expected| / max(|expected|, tiny), where it is what bounds the element: not
    # where a widening or the spread under rounding sets the bound (an element near 0 among large terms
    # that cancel has a relative error of 1e+291 and passes, which says nothing).
    magnitude = e.abs().nan_to_num(nan=0.0, posinf=0.0).clamp_min(rule.tiny)
    rel = err / magnitude
    relative = rule.bound(e_shaped, cpu_terms, spread).reshape(-1) <= rule.ulps * rule.eps * magnitude
    max_rel = float(rel[relative].max().item()) if bool(relative.any()) else None
    shape = tuple(got.shape)
    worst = Worst(
        tensor=name,
        index=_unravel(worst_flat, shape),
        flat_index=worst_flat,
        expected=float(e[worst_flat].item()),
        got=float(g[worst_flat].item()),
        shape=shape,
        input=_value_at(probe, worst_flat, shape),
        input_name=around.probe_name if probe is not None else "",
    )
    writer = writer_of(got, worst_flat)  # a simulated kernel's output: the thread seen writing it
    if writer is not None:
        worst.block, worst.thread, worst.kernel = writer.block, writer.thread, writer.kernel
        worst.placed = "observed"
    n_bad = int(bad.sum().item())
    reason = ""
    if n_bad:
        unwritten = int((torch.isnan(g) & ~torch.isnan(e)).sum().item())
        relative_text = f", relative error {float(rel[worst_flat]):.3g}" if bool(relative[worst_flat]) else ""
        reason = (f"{name}: {n_bad} of {g.numel()} elements out of tolerance (worst: {float(excess.max()):.3g} "
                  f"times its bound{relative_text})")
        if unwritten:
            reason += f" ({unwritten} NaN where a number was expected: unwritten, or computed as NaN)"
    widened = tuple(f"{w.output}: {w.why}" for w in rule.widened)
    unproven = bool(n_bad) and spread is None and _spread_may_excuse(g, e, excess, cpu_terms, rule)
    return Comparison(n_bad == 0, max_abs, max_rel, float(excess.max().item()), worst, reason, n_bad, widened=widened,
                      unproven=unproven)


def _spread_may_excuse(g: torch.Tensor, e: torch.Tensor, excess: torch.Tensor, terms: Terms | None, rule: Rule) -> bool:
    """Whether measuring the spread could change the verdict: some element is out by the fixed rule,
    and none is out past what any spread admits (tolerances.past_any_spread), which fails whatever
    the spread is. Without the case's terms only a non-finite error counts as past."""
    out = excess > 1
    if not bool(out.any()):
        return False
    err = (g[out] - e[out]).abs().nan_to_num(nan=float("inf"))
    largest = max((float(t.abs().nan_to_num(nan=0.0, posinf=0.0, neginf=0.0).max()) for t in (terms or {}).values()
                   if t.is_floating_point() and t.numel()), default=float("inf"))
    return not bool(past_any_spread(err, max(largest, float(e.abs().nan_to_num(0.0, 0.0, 0.0).max())), rule.dtype).any())


def case_terms(spec: Any, inputs: Any, outputs: Any, upstream: Any = ()) -> dict[str, torch.Tensor]:
    """The tensors a widened bound is computed from, by name: inputs, params, outputs, upstream gradients."""
    terms = {n: x.detach() for n, x in zip(spec.inputs, inputs)}
    terms |= {k: torch.tensor(v, dtype=torch.float64) for k, v in spec.params.items() if isinstance(v, (int, float))}
    terms |= {n: o.detach() for n, o in zip(spec.outputs, outputs)}
    terms |= {f"grad_{n}": u for n, u in zip(spec.outputs, upstream)}
    return terms


def outputs_agree(spec: Any, stage: str, inputs: Any, got: Any, expected: Any) -> bool:
    """Every visible output of a forward call within the rule (for bench and tests that check one call)."""
    terms = case_terms(spec, inputs, expected)
    for name, g, e in zip(spec.outputs, got, expected):
        if not compare(name, g, e, spec.rule(name, g.dtype, stage), Around(terms)).ok:
            return False
    return True


def _value_at(probe: torch.Tensor | None, flat: int, shape: tuple[int, ...]) -> float | None:
    if probe is None or tuple(probe.shape) != shape:
        return None
    return float(probe.detach().reshape(-1)[flat].to("cpu", torch.float64).item())


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN payloads included): did a stage write into its input?"""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.detach().contiguous().view(torch.uint8), b.detach().contiguous().view(torch.uint8))
