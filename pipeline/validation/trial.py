"""One call of a stage on one case: outputs poisoned with NaN, inputs checked bit for bit for writes.

Also where cases come from: fresh random inputs from the spec, its named edge inputs, and the
same values viewed with a stride (non-contiguous), or laid out dense in another order (permuted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from ..base.errors import OpLoadError, is_device_fault
from ..op.contract import Tensors, as_tuple
from ..op.loaders import Stage
from ..op.spec import Inputs, Op, Size
from ..verdict.compare import same_bits
from .function import call, watching_writes

Fn = Callable[..., Tensors]  # inputs -> the visible outputs, differentiable


@dataclass
class Case:
    label: str  # how a report names it: "size 401", an edge case's name, "non-contiguous, size 401", "misaligned, size 401",
    # "permuted, size (3, 37)"
    inputs: Inputs


@contextmanager
def poisoned() -> Iterator[None]:
    """Make every torch.empty* (Python and C++) fill with NaN, so unwritten outputs show."""
    was = torch.are_deterministic_algorithms_enabled()
    was_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    was_fill = torch.utils.deterministic.fill_uninitialized_memory
    _deterministic(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        _deterministic(was, warn_only=was_warn)
        torch.utils.deterministic.fill_uninitialized_memory = was_fill


def _deterministic(mode: bool, warn_only: bool) -> None:
    """ATen's deterministic mode alone, which is what fills torch.empty* with NaN. The public
    torch.use_deterministic_algorithms also sets inductor's config, 4.5 ms a call: twice a case, it was
    1.3 of sigmoid's 6.6 s."""
    setter = getattr(torch._C, "_set_deterministic_algorithms", None)
    if setter is None:  # a torch without it: the public call, slower, the same effect here
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    else:
        setter(mode, warn_only=warn_only)


def noncontiguous(t: torch.Tensor) -> torch.Tensor:
    """The same values as `t`, viewed with a stride of 2 in the last dimension."""
    if t.dim() == 0:
        return t
    wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
    wide[..., ::2] = t
    return wide[..., ::2]


class Trial:
    """Forward, then (if asked) backward, through `fn` on copies of the inputs on `device`.

    Outputs are poisoned (see `poisoned`), and every tensor a stage call receives is compared bit
    for bit before and after the call (function.watching_writes), so a stage that writes into any
    of them is caught and the tensor named.
    """

    def __init__(self, fn: Fn, inputs: Inputs, device: str, dtype: torch.dtype | None) -> None:
        self.xs = []
        for x in inputs:
            moved = x.to(device=device, dtype=dtype if (dtype and x.is_floating_point()) else x.dtype)
            self.xs.append(moved.detach().requires_grad_(moved.is_floating_point()))
        self.before = [x.detach().clone() for x in self.xs]
        self.writes: list[str] = []  # "forward wrote into x", "backward wrote into grad_y", ...
        with poisoned(), watching_writes() as writes:
            try:
                self.outputs = fn(*self.xs)
            finally:
                self.writes += writes
        self.grads: tuple[torch.Tensor | None, ...] = ()

    def backward(self, upstream: Tensors) -> None:
        wrt = [x for x in self.xs if x.requires_grad]
        ups = [u.to(device=o.device, dtype=o.dtype) for u, o in zip(upstream, self.outputs)]
        with poisoned(), watching_writes() as writes:
            try:
                grads = iter(torch.autograd.grad(self.outputs, wrt, ups, allow_unused=True))
            finally:
                self.writes += writes
        self.grads = tuple(next(grads) if x.requires_grad else None for x in self.xs)

    def written(self, names: tuple[str, ...]) -> list[str]:
        """Every tensor a call of this trial wrote into, by name: each call's own record (forward's
        inputs, backward's upstream gradients and saved tensors), and the inputs compared after all."""
        found = list(dict.fromkeys(self.writes))
        for name, x, b in zip(names, self.xs, self.before):
            if not same_bits(x, b) and not any(w.endswith(f"into {name}") for w in found):
                found.append(f"a call wrote into {name}")
        return found


# --- cases -------------------------------------------------------------------------------------


def spec_inputs(op: Op, what: str, make: Callable[..., Inputs], *args: Any) -> Inputs:
    """Inputs from the op's spec; a spec that fails to make them is a loading error, named as such."""
    try:
        return tuple(make(*args))
    except Exception as e:
        if is_device_fault(e):  # an earlier kernel's fault on the GPU, surfacing here: not the spec's
            raise
        given = ", ".join(str(a) for a in args[:2])
        raise OpLoadError(f"{op.path('spec')}: {what}({given}) raised {type(e).__name__}: {e}") from e


def random_inputs(op: Op, size: Size, dtype: torch.dtype, device: str, gen: torch.Generator) -> Inputs:
    return spec_inputs(op, "make_inputs", op.spec.make_inputs, size, dtype, torch.device(device), gen)


def random_cases(op: Op, sizes: tuple[Size, ...], dtype: torch.dtype, device: str, gen: torch.Generator) -> list[Case]:
    return [Case(f"size {s}", random_inputs(op, s, dtype, device, gen)) for s in sizes]


def edge_cases(op: Op, dtype: torch.dtype, device: str) -> list[Case]:
    return [Case(name, spec_inputs(op, f"edge case {name!r}", make, dtype, torch.device(device)))
            for name, make in op.spec.edge_cases.items()]


def misaligned(t: torch.Tensor) -> torch.Tensor:
    """The same values, contiguous, starting one element past the start of their allocation: a
    kernel that loads 16-byte packs must take its element-by-element path for it."""
    if t.dim() == 0 or not t.is_floating_point():
        return t
    flat = torch.zeros(t.numel() + 1, dtype=t.dtype, device=t.device)
    view = flat[1:].view(t.shape)
    view.copy_(t)
    return view


def permuted(t: torch.Tensor) -> torch.Tensor:
    """The same values, dense (no gaps), with the dimensions laid out in reverse order in memory: a 2-D
    tensor's transpose made contiguous and transposed back. A stride-2 view has no dense layout to copy,
    so only this case shows a binding that allocates its output with empty_like(x), taking x's permuted
    strides, for a kernel that writes it as row-major."""
    if t.dim() < 2:
        return t
    reverse = tuple(reversed(range(t.dim())))
    return t.permute(reverse).contiguous().permute(reverse)


def strided_cases(cases: list[Case]) -> list[Case]:
    """Each case viewed with a stride of 2, and each shifted one element off its alignment; the last
    (largest) one also laid out permuted, where that changes any input's layout (1-D inputs have no
    other dense order)."""
    made = [Case(f"{how}, {c.label}", tuple(make(x) for x in c.inputs))
            for how, make in (("non-contiguous", noncontiguous), ("misaligned", misaligned)) for c in cases]
    if cases:
        last = cases[-1]
        inputs = tuple(permuted(x) for x in last.inputs)
        if any(not x.is_contiguous() for x in inputs if isinstance(x, torch.Tensor)):
            made.append(Case(f"permuted, {last.label}", inputs))
    return made


def upstream_for(outputs: Tensors, gen: torch.Generator) -> Tensors:
    """A random upstream gradient for each output, in float64."""
    return tuple(torch.randn(o.shape, dtype=torch.float64, generator=gen) for o in outputs)


def stage_fn(stage: Stage) -> Fn:
    def fn(*xs: torch.Tensor) -> Tensors:
        return call(stage, *xs)

    fn.stage = stage  # type: ignore[attr-defined]  # so a failure of this side is charged to its stage
    return fn


def oracle_fn(op: Op) -> Fn:
    oracle = op.spec.oracle
    assert oracle is not None
    return lambda *xs: as_tuple(oracle(*xs, *op.spec.param_values))
