"""A library reduction's rounding error, counted by its terms: the nudge rounding.py gives it.

A sum of n terms rounds n - 1 partial sums. Whatever order a kernel adds in (a loop, a tree, tiles
with a carry), its error is a sum of those roundings, each a fraction of a unit of a partial sum.
Taken as one rounding of the result, `cumsum` over 70,000 terms would allow one unit where a correct
tiled scan makes tens. So each reduction is nudged as the sequential sum it stands for: step k's
partial sum moves by delta_k units of S_k, the sum of the first k terms' sizes, with delta_k drawn
in [-1, 1]. Summed over the steps that is, for term l, |term_l| times D_l = sum of delta_k over the
steps k >= l that include it; the nudge is the reduction itself applied to |terms| * D, one extra
call of the op.

The deltas are shared by every output element (one per position along the reduced axis): each
element still sees independent steps, and the spread is taken element by element. All of it in the
result's dtype's units (the stage's dtype): a float32 running sum in a float64 kernel is still 10^8
units out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def _units(n: int, gen: torch.Generator) -> torch.Tensor:
    """n draws in [-1, 1] (float64, CPU)."""
    return torch.rand(n, generator=gen, dtype=torch.float64).mul_(2).sub_(1)


def walk_weights(n: int, gen: torch.Generator) -> torch.Tensor:
    """D_l for a sequential sum of n terms: the steps' deltas that include term l (step 0 is exact)."""
    delta = _units(n, gen)
    delta[0] = 0.0
    return delta.flip(0).cumsum(0).flip(0)


def _float(t: Any) -> Any:
    return t.detach().abs().to(torch.float64) if isinstance(t, torch.Tensor) and t.is_floating_point() else t


def _dims(x: torch.Tensor, dim: Any) -> list[int]:
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(x.dim()))
    dims = list(dim) if isinstance(dim, (list, tuple)) else [dim]
    return sorted(d % max(x.dim(), 1) for d in dims)


def _along(weights: torch.Tensor, x: torch.Tensor, dims: list[int]) -> torch.Tensor:
    """Weights over the reduced dims (row-major over them), shaped to broadcast against x."""
    reduced = [x.shape[d] for d in dims]
    shape = [x.shape[d] if d in dims else 1 for d in range(x.dim())]
    return weights.reshape(reduced).reshape(shape).to(x.device)


def _sum_like(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], gen: torch.Generator) -> torch.Tensor:
    """sum, nansum, mean over `dim` (all dims without one): the op on |x| * D."""
    x = _float(args[0])
    dims = _dims(x, args[1] if len(args) > 1 else kwargs.get("dim"))
    n = 1
    for d in dims:
        n *= x.shape[d]
    rest = {k: v for k, v in kwargs.items() if k != "dtype"}
    return func(x * _along(walk_weights(max(n, 1), gen), x, dims), *args[1:], **rest)


def _cumsum(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], gen: torch.Generator) -> torch.Tensor:
    """Output j is the running sum's j-th partial sum: sum over k <= j of delta_k S_k, with C the
    running sum of the deltas, is C_j S_j - sum over l <= j of |x_l| C_(l-1)."""
    x = _float(args[0])
    dim = (args[1] if len(args) > 1 else kwargs["dim"]) % max(x.dim(), 1)
    n = x.shape[dim] if x.dim() else 1
    delta = _units(n, gen)
    delta[0] = 0.0
    c = _along(delta.cumsum(0), x, [dim]) if x.dim() else delta.cumsum(0)[0]
    before = torch.cat([torch.zeros_like(c.narrow(dim, 0, 1)), c.narrow(dim, 0, n - 1)], dim) if x.dim() else 0.0
    return c * x.cumsum(dim) - (x * before).cumsum(dim)


def _cumprod(out: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any], gen: torch.Generator) -> torch.Tensor:
    """Each product's rounding is relative: output j moves by the running sum of the first j deltas."""
    dim = (args[1] if len(args) > 1 else kwargs["dim"]) % max(out.dim(), 1)
    n = out.shape[dim] if out.dim() else 1
    delta = _units(n, gen)
    delta[0] = 0.0
    c = _along(delta.cumsum(0), out, [dim]) if out.dim() else delta.cumsum(0)[0]
    return _float(out) * c


# The contracted operand and its contracted axis, and where the operands start in args.
_CONTRACTIONS: dict[str, int] = {"mm": 0, "bmm": 0, "mv": 0, "dot": 0, "vdot": 0, "addmm": 1, "baddbmm": 1, "addmv": 1}


def _contraction(name: str, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                 gen: torch.Generator) -> torch.Tensor:
    """A product contracted over k: each of the k products rounds (a unit of its own size) and each
    partial sum; the op on (|A| * (D + product deltas), |B|). A bias added (addmm) rounds once more."""
    first = _CONTRACTIONS[name]
    a = _float(args[first])
    k = a.shape[-1]
    weights = walk_weights(k, gen) + _units(k, gen)
    rest = [_float(v) for v in args[first + 1:]]
    bias = [_float(args[0]) * _units(1, gen).to(a.device)] if first else []
    magnitudes = {key: abs(v) if isinstance(v, (int, float)) else v for key, v in kwargs.items()}
    return func(*bias, a * weights.to(a.device), *rest, **magnitudes)


def reduction_nudge(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any,
                    gen: torch.Generator) -> torch.Tensor | None:
    """The nudge of a reduction's result in units of its dtype (float64, out's shape), or None where
    `func` is no reduction counted by terms (rounding.py nudges it by one unit of its result)."""
    name = func.overloadpacket.__name__
    handlers: dict[str, Callable[[], Any]] = {
        "sum": lambda: _sum_like(func, args, kwargs, gen),
        "nansum": lambda: _sum_like(func, args, kwargs, gen),
        "mean": lambda: _sum_like(func, args, kwargs, gen),
        "cumsum": lambda: _cumsum(func, args, kwargs, gen),
        "cumprod": lambda: _cumprod(out, args, kwargs, gen),
        **{c: (lambda c=c: _contraction(c, func, args, kwargs, gen)) for c in _CONTRACTIONS},
    }
    if name not in handlers or not isinstance(out, torch.Tensor) or not out.is_floating_point():
        return None
    try:
        nudge = handlers[name]()
    except (RuntimeError, IndexError, TypeError, KeyError):  # an overload this does not read: one rounding
        return None
    if not isinstance(nudge, torch.Tensor) or nudge.shape != out.shape:
        return None
    return nudge
