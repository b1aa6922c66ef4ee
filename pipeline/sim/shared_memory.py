"""Shared memory that remembers who touched it: races and reads of unwritten elements.

Each `cuda.shared.array` of a simulated kernel is a SharedArray: every element access records the
thread, its line and its epoch (the block's barrier count, and for threads of one warp the last
syncwarp they completed). Two accesses to one element by different threads in one epoch, at least
one a write, are a race: nothing orders them on a GPU. Atomics do not race with each other, only
with plain accesses. A read of an element no thread of the block has written is held until the
epoch ends (a write by another thread before then makes it a race instead) and then reported.

Shared memory holds NaN (floats) at the start of each block, so a value read before it is written
shows as NaN even where the read is not reported (a slice, see SharedArray).
"""

from __future__ import annotations

import linecache
import re
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np

from .numba_internals import internal
from .scheduler import Finding, SharedMemoryRace, SimThread, UnwrittenSharedRead, kernel_stack, where

# An access: (epoch, warp, warp epoch, thread, frame, line, atomic)
Access = tuple[int, int, int, SimThread, FrameType, int, bool]

_NAME = re.compile(r"(\w+)\s*=\s*cuda\.shared\.array")

FakeCUDAShared = internal("kernelapi", "FakeCUDAShared")
FakeCUDAAtomic = internal("kernelapi", "FakeCUDAAtomic")


def _unordered(a: Access, t: SimThread, epoch: int) -> bool:
    """Nothing orders access `a` before thread t's access now: same epoch, another thread, no syncwarp between."""
    return a[0] == epoch and a[3] is not t and not (a[1] == t.warp and a[2] != t.warp_epoch)


def _line_of(frame: FrameType, line: int) -> str:
    return f"{Path(frame.f_code.co_filename).name}:{line} in {frame.f_code.co_name}"


class SharedArray:
    """A shared array that records each access (see the module doc). Indexing by whole elements is
    tracked; a slice or a partial index counts as an access to every element it covers, and what
    it returns (a plain numpy view) is not tracked further."""

    __slots__ = ("data", "name", "owner", "writes", "reads")

    def __init__(self, data: np.ndarray, name: str, owner: TrackedShared) -> None:
        self.data = data
        self.name = name
        self.owner = owner
        self.writes: dict[Any, Access] = {}
        self.reads: dict[Any, list[Access]] = {}

    def reset(self) -> None:
        self.writes.clear()
        self.reads.clear()
        if self.data.dtype.kind in "fc":
            self.data.fill(np.nan)

    def __getattr__(self, name: str) -> Any:  # shape, dtype, size, ndim ...
        return getattr(self.data, name)

    def __len__(self) -> int:
        return len(self.data)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.data if dtype is None else self.data.astype(dtype)

    def _keys(self, idx: Any) -> list[Any]:
        ndim = self.data.ndim
        if ndim == 1 and isinstance(idx, (int, np.integer)):
            return [int(idx) % self.data.shape[0] if idx < 0 else int(idx)]
        if isinstance(idx, tuple) and len(idx) == ndim and all(isinstance(i, (int, np.integer)) for i in idx):
            key = tuple(int(i) % n if i < 0 else int(i) for i, n in zip(idx, self.data.shape))
            return [key[0] if ndim == 1 else key]
        flat = np.arange(self.data.size).reshape(self.data.shape)[idx]
        coords = np.unravel_index(np.ravel(flat), self.data.shape)
        return [int(c[0]) if ndim == 1 else tuple(int(v) for v in c) for c in zip(*coords)]

    def __getitem__(self, idx: Any) -> Any:
        value = self.data[idx]  # out-of-bounds raises here, before anything is recorded
        t = threading.current_thread()
        if isinstance(t, SimThread):
            frame = sys._getframe(1)
            for key in self._keys(idx):
                self.read(key, t, frame, False)
        return value

    def __setitem__(self, idx: Any, value: Any) -> None:
        self.data[idx] = value
        t = threading.current_thread()
        if isinstance(t, SimThread):
            frame = sys._getframe(1)
            for key in self._keys(idx):
                self.write(key, t, frame, False)

    def read(self, key: Any, t: SimThread, frame: FrameType, atomic: bool) -> None:
        epoch = t.block.epoch
        w = self.writes.get(key)
        if w is None:
            self.owner.unwritten(self, key, t, frame)
        elif _unordered(w, t, epoch) and not (atomic and w[6]):
            self.owner.race(self, key, w, ("wrote", "reads"), t, frame)
        access = (epoch, t.warp, t.warp_epoch, t, frame, frame.f_lineno, atomic)
        seen = self.reads.get(key)
        if seen is None or seen[0][0] != epoch:
            self.reads[key] = [access]
        elif len(seen) < 3 and all(s[3] is not t for s in seen):
            seen.append(access)

    def write(self, key: Any, t: SimThread, frame: FrameType, atomic: bool) -> None:
        epoch = t.block.epoch
        w = self.writes.get(key)
        if w is not None and _unordered(w, t, epoch) and not (atomic and w[6]):
            self.owner.race(self, key, w, ("wrote", "writes"), t, frame)
        for r in self.reads.get(key, ()):
            if _unordered(r, t, epoch) and not (atomic and r[6]):
                self.owner.race(self, key, r, ("read", "writes"), t, frame)
        self.writes[key] = (epoch, t.warp, t.warp_epoch, t, frame, frame.f_lineno, atomic)

    def element(self, key: Any) -> str:
        inside = ", ".join(map(str, key)) if isinstance(key, tuple) else str(key)
        return f"{self.name}[{inside}]"


class TrackedShared(FakeCUDAShared):  # type: ignore[misc]
    """numba's shared-memory allocator, handing out SharedArrays (one per allocating line, as numba's)."""

    def __init__(self, dynshared_size: int) -> None:
        super().__init__(dynshared_size)
        self._tracked: dict[tuple[str, int], SharedArray] = {}
        self._pending: Finding | None = None

    def array(self, shape: Any, dtype: Any, alignment: Any = None) -> SharedArray:
        frame = sys._getframe(1)
        site = (frame.f_code.co_filename, frame.f_lineno)
        found = self._tracked.get(site)
        if found is not None:
            return found
        from numba.cuda import types
        from numba.cuda.np import numpy_support

        if alignment is not None:
            raise RuntimeError("Array alignment is not supported in cudasim")
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        dtype = np.dtype(dtype)
        if shape == 0:  # dynamic shared memory: every such array views the launch's one buffer
            data = np.frombuffer(self._dynshared.data, dtype=dtype, count=self._dynshared_size // dtype.itemsize)
        else:
            data = np.empty(shape, dtype)
        m = _NAME.search(linecache.getline(site[0], site[1]))
        name = m.group(1) if m else f"shared array of {Path(site[0]).name}:{site[1]}"
        found = self._tracked[site] = SharedArray(data, name, self)
        found.reset()
        return found

    def begin_block(self, block: Any) -> None:
        self._pending = None
        for a in self._tracked.values():
            a.reset()

    def unwritten(self, array: SharedArray, key: Any, t: SimThread, frame: FrameType) -> None:
        if self._pending is None:  # the first one speaks; unless a write makes it a race, it is reported
            stack = kernel_stack(frame)
            self._pending = Finding(UnwrittenSharedRead, (
                f"read of unwritten shared memory: {t.label()} reads {array.element(key)} at {where(stack)}, "
                f"which no thread of block {t.blockIdx} has written"), t, stack)

    def race(self, array: SharedArray, key: Any, first: Access, verbs: tuple[str, str], t: SimThread,
             frame: FrameType) -> None:
        """`first` and thread t touched one element between two barriers; `verbs`: what each did to it."""
        if t.block.race is not None:
            return  # the block holds its first race of the phase already
        did, does = verbs
        stack = kernel_stack(frame)
        other = first[3]
        between = "cuda.syncthreads()" if other.warp != t.warp else "cuda.syncthreads() or cuda.syncwarp()"
        t.block.hold_race(Finding(SharedMemoryRace, (
            f"shared-memory race on {array.element(key)}: {other.label()} {did} it at {_line_of(first[4], first[5])}, "
            f"then {t.label()} {does} it at {where(stack)}, with no {between} between them"), t, stack))

    def end_of_epoch(self) -> Finding | None:
        pending, self._pending = self._pending, None
        return pending


class TrackedAtomic(FakeCUDAAtomic):  # type: ignore[misc]
    """numba's atomics, recording an atomic access (a read and a write) on shared arrays."""


def _atomic(name: str) -> Any:
    original = getattr(FakeCUDAAtomic, name)

    def op(self: Any, array: Any, index: Any, *rest: Any) -> Any:
        if isinstance(array, SharedArray):
            t = threading.current_thread()
            if isinstance(t, SimThread):
                frame = sys._getframe(1)
                key = (0,) * array.data.ndim if name == "compare_and_swap" else index
                for k in array._keys(key):
                    array.read(k, t, frame, True)
                    array.write(k, t, frame, True)
            array = array.data
        return original(self, array, index, *rest)

    op.__name__ = name
    return op


for _name in ("add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax", "nanmin",
              "compare_and_swap", "cas"):
    setattr(TrackedAtomic, _name, _atomic(_name))
