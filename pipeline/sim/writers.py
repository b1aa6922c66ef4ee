"""Which simulated thread wrote each element of a tensor: observed, not declared.

numba_env.launch() registers every tensor it passes to a simulated kernel (track()); the kernel
side's array __setitem__ then records, for each element written, the kernel, block and thread of
the writer (the last one wins). writer_of(tensor, flat_index) answers for any tensor that shares
memory with a registered one, while the tensor launch() saw is alive: reports name the thread
behind a failing element, and `brrr debug --index I` stops in it.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class Writer:
    kernel: str
    block: Dim3
    thread: Dim3


class _Memory:
    """One registered tensor's memory: byte range, element size, and writers by element offset."""

    __slots__ = ("start", "end", "itemsize", "owner", "writes")

    def __init__(self, start: int, end: int, itemsize: int, owner: torch.Tensor) -> None:
        self.start, self.end, self.itemsize = start, end, itemsize
        self.owner = weakref.ref(owner)
        self.writes: dict[int, tuple[str, Dim3, Dim3]] = {}


# id(numpy view given to a kernel) -> the view, its memory, and the view's byte offset in it
_by_array: dict[int, tuple[np.ndarray, _Memory, int]] = {}
_memories: list[_Memory] = []


def _root(t: torch.Tensor) -> torch.Tensor:
    return t._base if t._base is not None else t


def _span(t: torch.Tensor) -> tuple[int, int]:
    if t.numel() == 0:
        return t.data_ptr(), t.data_ptr()
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if n > 0)
    return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()


def track(tensor: torch.Tensor, array: np.ndarray) -> None:
    """Remember that `array` (handed to a kernel) is `tensor`'s memory, so writes into it are attributed."""
    owner = _root(tensor)
    start, end = _span(owner)
    _memories[:] = [m for m in _memories if m.owner() is not None]
    memory = next((m for m in _memories if m.owner() is owner and m.start == start), None)
    if memory is None:
        for m in _memories:  # memory freed and handed out again: the old records are stale
            if m.start < end and start < m.end:
                m.writes.clear()
        memory = _Memory(start, end, tensor.element_size(), owner)
        _memories.append(memory)
    _by_array[id(array)] = (array, memory, array.__array_interface__["data"][0] - start)


def forget_arrays() -> None:
    """After a launch: its numpy views are gone, their ids may be reused."""
    _by_array.clear()


def _memory_at(address: int) -> _Memory | None:
    for m in reversed(_memories):
        if m.start <= address < m.end and m.owner() is not None:
            return m
    return None


def record(array: np.ndarray, idx: Any, thread: Any) -> None:
    """A simulated thread wrote array[idx] (whole elements only; slices are not attributed)."""
    entry = _by_array.get(id(array))
    if entry is not None and entry[0] is array:
        memory, offset = entry[1], entry[2]
    else:  # a sub-array the kernel took (x[row]): found by its address
        address = array.__array_interface__["data"][0]
        found = _memory_at(address)
        if found is None:
            return
        memory, offset = found, address - found.start
    index = idx if isinstance(idx, tuple) else (idx,)
    if len(index) != array.ndim or not all(isinstance(i, (int, np.integer)) for i in index):
        return
    for i, n, s in zip(index, array.shape, array.strides):
        offset += (int(i) + n if i < 0 else int(i)) * s
    memory.writes[offset // memory.itemsize] = thread.writer


def writer_of(tensor: torch.Tensor, flat_index: int) -> Writer | None:
    """The thread that last wrote element `flat_index` (row-major) of `tensor`, if one was seen."""
    if tensor.device.type != "cpu" or not 0 <= flat_index < tensor.numel():
        return None
    coords = np.unravel_index(flat_index, tuple(tensor.shape)) if tensor.dim() else ()
    address = tensor.data_ptr() + sum(int(c) * s for c, s in zip(coords, tensor.stride())) * tensor.element_size()
    memory = _memory_at(address)
    if memory is None:
        return None
    found = memory.writes.get((address - memory.start) // memory.itemsize)
    return Writer(*found) if found is not None else None


_installed = False


def install() -> None:
    """Record writers in the simulator's kernel-side arrays (numba's FakeWithinKernelCUDAArray)."""
    global _installed
    if _installed:
        return
    from .numba_internals import internal

    FakeWithinKernelCUDAArray = internal("cudadrv.devicearray", "FakeWithinKernelCUDAArray")

    from .scheduler import SimThread

    def setitem(self: Any, idx: Any, val: Any) -> None:
        item = self._item
        item.__setitem__(idx, val)
        t = threading.current_thread()
        if isinstance(t, SimThread) and type(idx) is not str:
            record(item._ary, idx, t)

    FakeWithinKernelCUDAArray.__setitem__ = setitem
    _installed = True
