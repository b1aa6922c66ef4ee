"""How much rounding an op's own math amplifies, element by element (the spread tolerances.py allows).

An element that is a small difference of large terms (a gradient crossing zero, x - mean with the
mean large, a row sum of both signs) is as exact as the terms, not as its own size: any correct
kernel is off there by about one rounding of the terms. No fixed rule knows which elements those
are, so brrr measures it. The reference is run again in the stage's dtype with every arithmetic
result nudged by up to one unit of its own precision, a random fraction of either sign (Monte
Carlo arithmetic): a
reduction of n terms (a sum, a running sum, a matrix product) is nudged as the n roundings it
makes, each a unit of its partial sum of the terms' sizes (reductions.py). Where the math
cancels the nudged result moves far from the exact one; elsewhere by a unit or two. The spread
is the largest move over a few draws.

What is computed in float64 inside the reference (layernorm's statistics) is nudged in float64
units: a kernel that rounds it to float32 still fails. Inputs are never nudged: they are exact
in the stage's dtype, so exp(x) at large x is allowed its own rounding, not x times it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch._decomp import decomposition_table
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from ..op.contract import Tensors
from .reductions import reduction_nudge

# Independent draws; the spread is the largest move. Where two terms cancel, one draw's nudges may
# cancel too: over 20001 points at swish's gradient zero (5144 beyond the fixed rule), 16 draws
# left none out of bounds in 3 seeds (worst 0.48 of the bound), 12 none (0.57), 8 up to 3 (9.5x):
# tests/test_rounding.py keeps the scan.
DRAWS = 16

# Results that are exact (a selection, a sign, a copy, a view): nudging them would invent error.
EXACT = frozenset({
    "abs", "neg", "relu", "sign", "floor", "ceil", "round", "trunc", "max", "min", "amax", "amin",
    "maximum", "minimum", "clamp", "clamp_min", "clamp_max", "where", "masked_fill", "threshold_backward",
    "cat", "stack", "index", "index_select", "gather", "scatter", "select", "slice", "expand", "flip", "roll",
    "repeat", "constant_pad_nd", "sort", "topk", "t", "transpose", "permute", "view", "reshape", "_unsafe_view",
    "unsqueeze", "squeeze", "clone", "contiguous", "detach", "alias", "lift_fresh", "lift_fresh_copy",
    "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "empty", "empty_like", "empty_strided",
    "new_zeros", "new_ones", "new_full", "new_empty", "new_empty_strided", "scalar_tensor", "arange", "fill",
    "copy", "_copy_from", "_copy_from_and_resize", "randn", "rand", "randint", "normal", "uniform",
})

# Reductions: nudged as the n roundings their n terms make (reductions.py: a step's rounding is a
# unit of its partial sum of the terms' sizes), so a kernel summing in another order passes; one
# reductions.py does not read is nudged by a unit of the same sum over the terms' sizes.
SUMS = frozenset({"sum", "mean", "mm", "bmm", "addmm", "baddbmm", "addmv", "mv", "dot", "vdot", "matmul",
                  "cumsum", "cumprod", "linear", "einsum", "tensordot", "nansum"})

# A library op is taken as the function it names, rounded once (an oracle is that function): a
# float32 layer_norm may not excuse a reference that computes its statistics in float32. Its
# backward is math that cancels whoever computes it, so it runs as its decomposition, each step
# nudged; so do the log-domain ops, whose x - logsumexp every implementation rounds, and softmax and
# the vector norms, whose sums are counted by their terms like any other.
DECOMPOSED = frozenset({"_softmax", "linalg_vector_norm", "norm", "_softmax_backward_data", "_log_softmax",
                        "_log_softmax_backward_data", "logsumexp",
                        "native_layer_norm_backward", "native_group_norm_backward", "native_batch_norm_backward",
                        "tanh_backward", "sigmoid_backward", "silu_backward", "gelu_backward", "mse_loss_backward"})


class _Nudged(TorchDispatchMode):
    """Every floating result of an inexact aten op, nudged by up to ±1 unit of its dtype (see module doc)."""

    def __init__(self, gen: torch.Generator) -> None:
        super().__init__()
        self.gen = gen

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if name in DECOMPOSED and func in decomposition_table:
            with self:
                return decomposition_table[func](*args, **kwargs)
        out = func(*args, **kwargs)
        schema = func._schema
        if name in EXACT or schema.is_mutable or any(r.alias_info is not None for r in schema.returns):
            return out
        if name == "_to_copy" and not _changes_dtype(args, out):
            return out
        if name in SUMS:  # counted by its terms (reductions.py), else one unit of the terms' sizes
            units = reduction_nudge(func, args, kwargs, out, self.gen)
            if units is not None:
                return self._shift(out, units)
        size = func(*tree_map(_magnitude, args), **tree_map(_magnitude, kwargs)) if name in SUMS else None
        return tree_map(lambda o: self._nudge(o, size), out)

    def _nudge(self, t: Any, size: Any) -> Any:
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0:
            return t
        fraction = torch.rand(t.shape, generator=self.gen, dtype=torch.float64).mul_(2).sub_(1)
        base = (size if isinstance(size, torch.Tensor) and size.shape == t.shape else t).abs()
        return self._shift(t, fraction.to(t.device) * base.to(torch.float64))

    @staticmethod
    def _shift(t: torch.Tensor, units: torch.Tensor) -> torch.Tensor:
        """t moved by `units` units of its dtype (a non-finite move is none)."""
        nudge = (units * torch.finfo(t.dtype).eps).to(device=t.device, dtype=t.dtype)
        return t + torch.where(torch.isfinite(nudge), nudge, torch.zeros_like(nudge))


def _magnitude(a: Any) -> Any:
    return a.abs() if isinstance(a, torch.Tensor) and a.is_floating_point() else a


def _changes_dtype(args: tuple[Any, ...], out: Any) -> bool:
    src = args[0] if args and isinstance(args[0], torch.Tensor) else None
    return src is None or not isinstance(out, torch.Tensor) or src.dtype != out.dtype


def spread(run: Callable[[], tuple[Tensors, Tensors]], seed: int) -> tuple[
        list[torch.Tensor | None], list[torch.Tensor | None]]:
    """The largest |nudged - plain| over DRAWS runs, for each output and each gradient (float64, CPU).

    `run()` computes (outputs, gradients) once; it is called once plainly and DRAWS times under the
    nudging mode. Measured against the plain run, not the exact values: a library op's own rounding
    (torch's float32 layer_norm) is not counted, only what the nudges move. An entry is None where
    a run failed or the runs do not line up.
    """
    gen = torch.Generator().manual_seed(seed)
    try:
        plain = run()
    except Exception:  # a function that cannot run here is judged by the fixed rule alone
        return [], []
    worst: list[list[torch.Tensor | None]] = [[None] * len(plain[0]), [None] * len(plain[1])]
    for _ in range(DRAWS):
        try:
            with _Nudged(gen):
                nudged = run()
        except Exception:
            return [None] * len(plain[0]), [None] * len(plain[1])
        for part, (got, want) in enumerate(zip(nudged, plain)):
            for i, (g, w) in enumerate(zip(got, want)):
                worst[part][i] = _larger(worst[part][i], g, w)
    return worst[0], worst[1]


def _larger(so_far: torch.Tensor | None, got: torch.Tensor | None, want: torch.Tensor | None) -> torch.Tensor | None:
    if got is None or want is None or got.shape != want.shape:
        return so_far
    move = (got.detach().to("cpu", torch.float64) - want.detach().to("cpu", torch.float64)).abs()
    move = torch.where(torch.isfinite(move), move, torch.zeros_like(move))
    return move if so_far is None else torch.maximum(so_far, move)
