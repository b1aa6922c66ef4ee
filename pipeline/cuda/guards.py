"""Guard bands: every tensor a cuda-stage call receives or makes sits between canary bytes.

A kernel that writes one element past a tensor (a loop bound `i <= n`) lands in whatever the
allocator put there: on a GPU the caching allocator's slack, invisible to any comparison. Here each
tensor a call receives (forward's inputs, backward's upstream gradients; saved tensors are those)
is copied into an allocation of its own with a band of known bytes before and after it, and every
tensor the call allocates (its outputs, stats and any workspace, through torch's factories, which a
dispatch mode sees even from binding.cpp's C++) is moved into one too. After the call a band whose
bytes changed names the tensor, the side and how far from it the write landed, in elements.

It runs the same on a GPU and on the CPU execution; in the checked build the allocation registry is
told each tensor's own extent (memcheck.narrow_allocation), so the memory checks still stop the
access first, at its line. Active only while validation watches the call (function.watching_writes).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from ..base.errors import BrrrError

CANARY = 0xA5  # the bands' byte: as a float32 word -2.9e-16, as bfloat16 -2.9e-16, as float16 -0.022
ALIGN = 64  # torch's CPU alignment; a band is a multiple, so a tensor keeps its alignment mod 64

# The factories whose result is a new tensor the call then writes (at::empty, empty_like, zeros, ...).
FACTORIES = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like",
                       "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full", "clone"})


def guards_on() -> bool:
    """On unless BRRR_GUARD_BANDS=0 (to measure what they cost)."""
    return os.environ.get("BRRR_GUARD_BANDS", "1") != "0"


# Set while validation watches a call (validation/function.watching_writes): only then are the call's
# tensors banded. opcheck and torch.compile call the op too, and a result that is a view into a banded
# buffer (a storage offset) is not what the op returns outside validation.
_watched: ContextVar[bool] = ContextVar("brrr_guards_watched", default=False)


@contextmanager
def watched() -> Iterator[None]:
    token = _watched.set(True)
    try:
        yield
    finally:
        _watched.reset(token)


def active() -> bool:
    """Guard bands around the calls made now: validation is watching them, and they are not turned off."""
    return _watched.get() and guards_on()


class GuardBandError(BrrrError):
    """A call wrote outside a tensor it received or made: into a guard band."""


@dataclass
class Guard:
    """One guarded tensor: its buffer, where its elements start and end in it (bytes), its name."""

    buffer: torch.Tensor  # uint8, band + data + band
    start: int
    end: int
    itemsize: int
    elements: int
    name: str | None = None

    def changed(self) -> list[str]:
        """How each band was written, empty where both are intact."""
        found = []
        bands = self.buffer.detach().cpu()
        before = (bands[:self.start] != CANARY).nonzero()
        if len(before):
            first = int(before[0])
            count = -(-(self.start - first) // self.itemsize)
            found.append(f"before the start of {self.label}: {count} element{'s' * (count != 1)} before its first "
                         f"(guard band, {self.start - first} bytes before)")
        after = (bands[self.end:] != CANARY).nonzero()
        if len(after):
            past = int(after[0]) // self.itemsize
            found.append(f"after the end of {self.label}: at {self.name or 'it'}[{self.elements + past}], "
                         f"{past + 1} element{'s' * (past != 0)} past its last")
        return found

    @property
    def label(self) -> str:
        return f"{self.name or 'a tensor the call allocated'} ({self.elements} elements)"

    def owns(self, t: torch.Tensor) -> bool:
        return t.untyped_storage().data_ptr() == self.buffer.untyped_storage().data_ptr()


# A band holds one row of a matrix (a write a row off lands in it); a flat tensor's "row" is all of
# it, so the row part stops here: 2 x 1 MB of bands per 2^18 floats cost 15x a copy of the tensor.
ROW_CAP = 16384


def band_bytes(t: torch.Tensor) -> int:
    """At least 64 bytes, and one row (the last dimension) up to ROW_CAP, rounded up to ALIGN."""
    row = min((t.shape[-1] if t.dim() else 1) * t.element_size(), ROW_CAP)
    return -(-max(ALIGN, row) // ALIGN) * ALIGN


def _span(t: torch.Tensor) -> int:
    """Bytes from element 0 to the end of the last element (views have non-negative strides)."""
    if t.numel() == 0:
        return 0
    return (sum((s - 1) * st for s, st in zip(t.shape, t.stride())) + 1) * t.element_size()


def guarded_like(t: torch.Tensor, name: str | None = None) -> tuple[torch.Tensor, Guard]:
    """A tensor of t's shape, strides, dtype, device and alignment (mod 64) in a banded buffer,
    holding t's values; its Guard."""
    band, span = band_bytes(t), _span(t)
    pad = t.data_ptr() % ALIGN if t.numel() else 0
    start = band + pad
    buffer = torch.full((start + span + band,), CANARY, dtype=torch.uint8, device=t.device)
    buffer[start:start + span].zero_()  # the gaps of a strided view are inside the tensor, not a band
    # 0 elements: the pointer lies between the two bands, so a write through it lands in one
    made = buffer.view(t.dtype).as_strided(t.shape, t.stride(), start // t.element_size())
    if t.numel() and torch._debug_has_internal_overlap(t) == 1:  # an expanded view (stride 0): copy its bytes
        source = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
        offset = t.storage_offset() * t.element_size()
        buffer[start:start + span].copy_(source[offset:offset + span])
    else:
        made.copy_(t)
    _narrow(buffer, made, span)
    return made, Guard(buffer, start, start + span, t.element_size(), t.numel(), name)


def _narrow(buffer: torch.Tensor, made: torch.Tensor, span: int) -> None:
    if buffer.device.type == "cpu":
        from .memcheck import narrow_allocation

        narrow_allocation(buffer.data_ptr(), made.data_ptr(), span)


def narrow_to_span(t: torch.Tensor) -> None:
    """Bound a received tensor (the child of isolated.py unpacks each into a buffer of its own) by its
    own elements in the allocation registry: a guard band, the gaps before a misaligned view's first
    element, are out of bounds for the memory checks."""
    storage = t.untyped_storage()
    if t.device.type == "cpu" and storage.nbytes():
        _narrow(torch.empty(0, dtype=torch.uint8).set_(storage), t, _span(t))


_paused: ContextVar[bool] = ContextVar("brrr_guards_paused", default=False)


@contextmanager
def paused() -> Iterator[None]:
    """brrr's own tensors (isolated.py's transfers) are made here unguarded."""
    token = _paused.set(True)
    try:
        yield
    finally:
        _paused.reset(token)


def adopt(t: torch.Tensor, name: str) -> Guard | None:
    """The Guard of a tensor guarded elsewhere (in isolated.py's child) and returned with its whole
    storage: the bytes outside its own elements are its bands. None where it has none."""
    storage = t.untyped_storage()
    start = t.storage_offset() * t.element_size()
    end = start + _span(t)
    if start < ALIGN or storage.nbytes() - end < ALIGN:
        return None
    buffer = torch.empty(0, dtype=torch.uint8, device=t.device).set_(storage)
    return Guard(buffer, start, end, t.element_size(), t.numel(), name)


class Guarding(TorchDispatchMode):
    """While entered, each tensor torch's factories make is moved into a banded buffer (see module doc).
    `receive` guards what the call is given (before entering: its own allocations are not the call's)."""

    def __init__(self) -> None:
        super().__init__()
        self.guards: list[Guard] = []

    def receive(self, received: dict[str, Any]) -> dict[str, Any]:
        """Guarded copies of the tensors a call receives, by name (anything else as it is)."""
        out = {}
        for name, t in received.items():
            if isinstance(t, torch.Tensor) and t.layout == torch.strided:
                with torch.no_grad():
                    t, guard = guarded_like(t.detach(), name)
                self.guards.append(guard)
            out[name] = t
        return out

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket.__name__ not in FACTORIES or _paused.get():
            return out

        def move(t: Any) -> Any:
            if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
                return t
            made, guard = guarded_like(t)
            self.guards.append(guard)
            return made

        return tree_map(move, out)

    def check(self, phase: str, results: dict[str, Any], unnamed_only: bool = False) -> None:
        """Name the guards of the tensors the call returned, then raise if any band was written
        (`unnamed_only`: only the workspace's, those of no result: the caller checks the results')."""
        for name, r in results.items():
            if not isinstance(r, torch.Tensor):
                continue
            owner = next((g for g in self.guards if g.owns(r)), None)
            if owner is None:  # made where this mode could not see it: guarded there, if at all
                owner = adopt(r, name)
                self.guards += [owner] if owner is not None else []
            elif owner.name is None:
                owner.name = name
        found = [f"{phase} wrote {c}" for g in self.guards if not (unnamed_only and g.name) for c in g.changed()]
        if found:
            raise GuardBandError("; ".join(found))
