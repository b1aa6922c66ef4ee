"""numba's CUDA simulator, run one thread at a time, with warp functions and a sanitizer.

numba's simulator runs every GPU thread of a block as a Python thread, all at once, and releases a
barrier when every running thread waits at any barrier. Here a block's threads take turns instead:
one runs until it reaches a barrier, a warp function or its end, then hands over to the next, in
the order of their linear thread ids. When no thread can run, the simulator looks at where they all
wait: at one barrier (release them), at a warp function every lane of the mask has reached (give
each its result), or somewhere that cannot go on, which is reported. Every run of a launch is then
the same interleaving, so each finding is the same, named the same way, on every run.

What is reported, as an exception from the kernel (the runner shows the file, line, block, thread):

- SharedMemoryRace: two threads touched one shared element between the same two barriers (and,
  in one warp, the same two syncwarps), at least one of them writing (shared_memory.py);
- UnwrittenSharedRead: a thread read a shared element no thread of its block had written;
- BarrierDivergence: threads wait at barriers on different lines, or some wait while another
  has returned from the kernel;
- WarpMaskError: a warp function's mask names a lane that has exited, does not exist, or waits
  at another call;
- KernelTimeLimit: the launch ran past the time limit; says where each unfinished thread is.

install() puts this in place of numba's block manager and kernel-side cuda module;
numba_env.import_cuda() calls it whenever the simulator is chosen.
"""

from __future__ import annotations

import ctypes
import dataclasses
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

FULL_MASK = 0xFFFFFFFF
WARP = 32
# A launch's time limit where BRRR_SIM_TIME_LIMIT is not set: this, and SIM_THREAD_S more for each
# simulated thread (about 4 times what one costs on a loaded machine), so a kernel that loops is
# stopped well within a minute at the simulator's sizes, and a large launch is not stopped for being large.
DEFAULT_TIME_LIMIT_S = 20.0
SIM_THREAD_S = 4e-3
_limit_override: list[float | None] = []
# Kernels that ran out of time, by their code, while remembering_time_outs() is on (one op's
# validation): a later launch fails at once with the same finding instead of being waited out again
# (each case, each check, each dtype).
_timed_out: dict[int, tuple[Any, Finding]] | None = None


# --- findings ---------------------------------------------------------------------------------


class SimulatorFinding(Exception):
    """A fact about a kernel that the sanitizer found; the message says which, where and who."""


class SharedMemoryRace(SimulatorFinding):
    pass


class UnwrittenSharedRead(SimulatorFinding):
    pass


class BarrierDivergence(SimulatorFinding):
    pass


class WarpMaskError(SimulatorFinding):
    pass


class KernelTimeLimit(SimulatorFinding):
    pass


class _Abort(BaseException):
    """Unwinds a simulated thread when its block stops (another thread failed)."""


Stack = list[tuple[FrameType, int]]  # kernel-code frames with the line each was at, innermost first

_INTERNAL_PREFIXES = ("numba.", "numba_cuda.", "threading", "contextlib", f"{__package__}.")  # all of sim/


def _internal(frame: FrameType) -> bool:
    return frame.f_globals.get("__name__", "").startswith(_INTERNAL_PREFIXES)


def kernel_stack(frame: FrameType | None) -> Stack:
    """The frames of kernel code (and its device functions) from `frame` outwards."""
    out = []
    while frame is not None:
        if not _internal(frame):
            out.append((frame, frame.f_lineno))
        frame = frame.f_back
    return out


def where(stack: Stack) -> str:
    """file:line in function, of the innermost kernel frame."""
    if not stack:
        return "(unknown line)"
    frame, line = stack[0]
    return f"{Path(frame.f_code.co_filename).name}:{line} in {frame.f_code.co_name}"


@dataclass
class Finding:
    """A finding tied to a thread and the kernel line it is about; raised from the launch."""

    kind: type[SimulatorFinding]
    message: str
    thread: SimThread
    stack: Stack

    def exception(self) -> BaseException:
        error = self.kind(f"{self.thread.place()}: {self.message}")
        tb = None
        for frame, line in self.stack:  # innermost first: each wraps the one inside it
            tb = TracebackType(tb, frame, frame.f_lasti, line)
        return error.with_traceback(tb)


def _time_limit(threads: int) -> float | None:
    """The launch's limit: an override (brrr debug: none), BRRR_SIM_TIME_LIMIT (checked: 0 is none), or
    the default scaled by the launch's threads."""
    from ..base.settings import number

    if _limit_override:
        return _limit_override[-1]
    value = number("BRRR_SIM_TIME_LIMIT", DEFAULT_TIME_LIMIT_S + SIM_THREAD_S * threads)
    return value if value > 0 else None


@contextmanager
def remembering_time_outs() -> Iterator[None]:
    """Within this block, a kernel that ran out of time is not launched again: its later launches fail
    at once with the first one's finding (so a looping kernel costs one time limit, not one a launch)."""
    global _timed_out
    was, _timed_out = _timed_out, {}
    try:
        yield
    finally:
        _timed_out = was


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Run launches under another time limit (None: none, as `brrr debug` needs while pdb waits)."""
    _limit_override.append(seconds)
    try:
        yield
    finally:
        _limit_override.pop()


# --- one simulated thread ---------------------------------------------------------------------

NEW, RUNNING, WAITING, DONE = "new", "running", "waiting", "done"
BARRIERS = ("syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or")


@dataclass
class Wait:
    """Where a thread waits: the call, its stack (its site is the lines of that stack) and its arguments."""

    kind: str
    stack: Stack
    mask: int = FULL_MASK
    args: tuple[Any, ...] = ()
    site: tuple[tuple[Any, int], ...] = field(init=False)

    def __post_init__(self) -> None:
        self.site = tuple((f.f_code, line) for f, line in self.stack)

    def describe(self) -> str:
        return f"cuda.{self.kind}() at {where(self.stack)}"


class Dim3:
    __slots__ = ("x", "y", "z")

    def __init__(self, x: int, y: int, z: int) -> None:
        self.x, self.y, self.z = x, y, z

    def __iter__(self) -> Iterator[int]:
        yield self.x
        yield self.y
        yield self.z

    def __str__(self) -> str:
        return f"({self.x}, {self.y}, {self.z})"

    __repr__ = __str__


class SimThread(threading.Thread):
    """One GPU thread: runs only while it holds its block's turn (see Block)."""

    def __init__(self, block: Block, target: Callable[[], Any], block_idx: tuple[int, ...],
                 thread_idx: tuple[int, ...], linear: int) -> None:
        super().__init__(daemon=True)
        self.block = block
        self._target_fn = target
        self.blockIdx = Dim3(*block_idx)
        self.threadIdx = Dim3(*thread_idx)
        self.thread_id = linear
        self.lane, self.warp = linear % WARP, linear // WARP
        self.writer = (block.kernel_name, tuple(block_idx), tuple(thread_idx))
        self.go = threading.Lock()
        self.go.acquire()
        self.state = NEW
        self.wait: Wait | None = None
        self.result: Any = None
        self.warp_epoch = 0  # changes at each syncwarp this thread completes (see shared_memory._unordered)

    def place(self) -> str:
        """numba's own prefix, which compare/checks read back as the block and thread."""
        return f"tid={list(self.threadIdx)} ctaid={list(self.blockIdx)}"

    def label(self) -> str:
        return f"thread {self.threadIdx}"

    def run(self) -> None:
        self.go.acquire()
        if self.block.aborted:
            return
        try:
            self._target_fn()
        except _Abort:
            return
        except Exception as e:  # the kernel's own error, reported as numba reports it
            self.block.thread_failed(self, e)
            return
        self.state = DONE
        self.block.hand_over()

    def wait_at(self, kind: str, mask: int = FULL_MASK, args: tuple[Any, ...] = ()) -> Any:
        self.wait = Wait(kind, kernel_stack(sys._getframe(2)), mask & FULL_MASK, args)
        self.state = WAITING
        self.block.hand_over()
        self.go.acquire()
        if self.block.aborted:
            raise _Abort
        return self.result

    # numba's kernel-side module calls these on threading.current_thread()
    def syncthreads(self) -> None:
        self.wait_at("syncthreads")

    def syncthreads_count(self, value: Any) -> int:
        return self.wait_at("syncthreads_count", args=(value,))

    def syncthreads_and(self, value: Any) -> int:
        return self.wait_at("syncthreads_and", args=(value,))

    def syncthreads_or(self, value: Any) -> int:
        return self.wait_at("syncthreads_or", args=(value,))


def current() -> SimThread:
    t = threading.current_thread()
    if not isinstance(t, SimThread):
        raise RuntimeError("a cuda.* function of a kernel was called outside a simulated kernel")
    return t


# --- a block: whose turn it is, and what happens when nobody can run -------------------------


class Block:
    """Runs one block's threads one at a time (in place of numba's BlockManager, same signature)."""

    def __init__(self, f: Callable[..., Any], grid_dim: tuple[int, ...], block_dim: tuple[int, ...],
                 debug: bool) -> None:
        self._f = f
        self._block_dim = block_dim
        self._debug = debug
        self.kernel_name = getattr(f, "__name__", "kernel")
        self.threads: list[SimThread] = []
        self.ready: deque[SimThread] = deque()
        self.failure: Finding | tuple[BaseException, Any] | None = None
        # The first race of this phase, held until its barrier completes: a barrier part of the block
        # skips shows as a race first, and is reported as the divergence it is (see hold_race).
        self.race: Finding | None = None
        self.aborted = False
        self.epoch = 0  # barriers passed: shared accesses in different epochs are ordered
        self.warp_syncs = 0
        self.finished = threading.Lock()
        self.finished.acquire()
        self.module: Any = None

    def run(self, grid_point: tuple[int, ...], *args: Any) -> None:
        from .numba_internals import internal

        self.module = internal("kernel", "_get_kernel_context")()
        if self.module is not None and hasattr(self.module, "begin_block"):
            self.module.begin_block(self)
        f = self._f

        def target() -> None:
            if self._debug:
                import numpy as np

                np.seterr(divide="raise")
            f(*args)

        code = getattr(self._f, "__code__", self._f)
        if _timed_out is not None and (known := _timed_out.get(id(code))) is not None and known[0] is code:
            self.failure = dataclasses.replace(known[1], message=known[1].message + (
                "; not run again: this kernel ran out of time in an earlier launch"))
            self._raise_failure()
        bx, by, _ = (tuple(self._block_dim) + (1, 1))[:3]
        for z, y, x in _ndindex_zyx(self._block_dim):
            linear = x + bx * (y + by * z)
            self.threads.append(SimThread(self, target, grid_point, (x, y, z), linear))
        self.threads.sort(key=lambda t: t.thread_id)
        for t in self.threads:
            t.start()
        self.ready.extend(self.threads)
        self.hand_over()
        limit = _time_limit(self._launch_threads())
        spent = getattr(self.module, "spent", None)
        if limit is None or spent is None:
            self.finished.acquire()
        elif not _finished_in_time(self.finished, spent, limit):
            self._time_out(limit)
            if isinstance(self.failure, Finding) and _timed_out is not None:
                code = getattr(self._f, "__code__", self._f)
                _timed_out[id(code)] = (code, self.failure)
        self._raise_failure()

    def _launch_threads(self) -> int:
        """Threads of the whole launch (every block's), from the kernel's context."""
        total = 1
        for dims in (getattr(self.module, "gridDim", None), getattr(self.module, "blockDim", None)):
            for d in (dims.x, dims.y, dims.z) if dims is not None else ():
                total *= int(d)
        return total

    # Called only by the thread that holds the turn (or the launching thread, before any runs).
    def hand_over(self) -> None:
        while True:
            if self.failure is not None:
                self.finished.release()
                return
            if self.ready:
                t = self.ready.popleft()
                t.state = RUNNING
                t.go.release()
                return
            if all(t.state == DONE for t in self.threads):
                finding = self.race or self._end_of_epoch_findings()
                if finding is None:
                    self.finished.release()
                    return
                self.failure = finding
                continue
            try:
                self._resolve()
            except _Found as found:
                self.failure = found.finding if found.finding.kind is BarrierDivergence else self.race or found.finding

    def thread_failed(self, t: SimThread, error: Exception) -> None:
        if self.failure is None:
            self.failure = self.race or (_with_place(error, t), error.__traceback__)
        t.state = DONE
        self.hand_over()

    def hold_race(self, finding: Finding) -> None:
        """A race from inside a running thread: kept (the first of the phase), and the thread runs on."""
        if self.race is None:
            self.race = finding

    def _resolve(self) -> None:
        """Every live thread waits: complete the warp calls that can be, else release a barrier, else report."""
        waiting = [t for t in self.threads if t.state == WAITING]
        released = False
        for t in waiting:
            if t.state == WAITING and t.wait is not None and t.wait.kind not in BARRIERS:
                group = self._warp_group(t)
                warp_call(t.wait.kind, group, self)
                for m in group:
                    m.state = NEW
                released = True
        if released:
            self.ready.extend(t for t in self.threads if t.state == NEW)
            return
        first = waiting[0]
        assert first.wait is not None
        for t in waiting[1:]:
            assert t.wait is not None
            if t.wait.site != first.wait.site:
                raise _Found(self._divergence((
                    f"barrier divergence: {first.label()} waits at {first.wait.describe()}, "
                    f"{t.label()} at {t.wait.describe()}: every thread of a block must reach the same barriers"),
                    t, t.wait.stack))
        gone = [t for t in self.threads if t.state == DONE]
        if gone:
            raise _Found(self._divergence((
                f"barrier divergence: {first.label()} waits at {first.wait.describe()}, which "
                f"{_count(gone)} ({_span(gone)}) never reach: they returned from the kernel first"),
                first, first.wait.stack))
        if self.race is not None:  # every thread reached this barrier: the race held is no divergence's
            raise _Found(self.race)
        finding = self._end_of_epoch_findings()
        if finding is not None:
            raise _Found(finding)
        values = [t.wait.args[0] for t in waiting if t.wait and t.wait.args]
        result = {"syncthreads": None, "syncthreads_count": sum(1 for v in values if v),
                  "syncthreads_and": int(all(values)), "syncthreads_or": int(any(values))}[first.wait.kind]
        self.epoch += 1
        for t in waiting:
            t.result = result
            t.state = NEW
        self.ready.extend(waiting)

    def _divergence(self, message: str, t: SimThread, stack: Stack) -> Finding:
        """Barrier divergence, with the race held (if any) that the threads past the barrier made."""
        if self.race is not None:
            message += f"; the race it leaves unordered: {self.race.message}"
        return Finding(BarrierDivergence, message, t, stack)

    def _warp_group(self, t: SimThread) -> list[SimThread]:
        """The lanes t's call names, all waiting at the same call with the same mask, or a WarpMaskError."""
        wait = t.wait
        assert wait is not None
        base = t.warp * WARP
        if wait.kind == "activemask":
            return [m for m in self.threads[base:base + WARP] if m.state == WAITING and m.wait and m.wait.site == wait.site]
        group = []
        for lane in range(WARP):
            if not wait.mask >> lane & 1:
                continue
            index = base + lane
            if index >= len(self.threads):
                self._mask_error(t, f"names lane {lane}, which does not exist: the block has "
                                    f"{len(self.threads)} threads, so warp {t.warp} ends at lane "
                                    f"{len(self.threads) - base - 1}")
            m = self.threads[index]
            if m.state == DONE:
                self._mask_error(t, f"names lane {lane} ({m.label()}), which has exited")
            assert m.wait is not None
            if m.wait.site != wait.site or m.wait.kind != wait.kind:
                self._mask_error(t, f"names lane {lane} ({m.label()}), which waits at {m.wait.describe()} instead")
            if m.wait.mask != wait.mask:
                self._mask_error(t, f"names lane {lane} ({m.label()}), whose mask is {m.wait.mask:#010x}")
            group.append(m)
        return group

    def _mask_error(self, t: SimThread, what: str) -> None:
        assert t.wait is not None
        raise _Found(Finding(WarpMaskError, f"warp function cuda.{t.wait.kind}() with mask {t.wait.mask:#010x} "
                                            f"at {where(t.wait.stack)} {what}", t, t.wait.stack))

    def _end_of_epoch_findings(self) -> Finding | None:
        shared = getattr(self.module, "shared_arrays", None)
        return shared() if shared is not None else None

    def _raise_failure(self) -> None:
        failure = self.failure
        if failure is None:
            return
        self._abort()
        if isinstance(failure, Finding):
            raise failure.exception()
        error, tb = failure
        raise error.with_traceback(tb)

    def _abort(self) -> None:
        self.aborted = True
        for t in self.threads:
            if t.state in (NEW, WAITING):
                t.go.release()

    def _time_out(self, limit: float) -> None:
        frames = sys._current_frames()
        running = [t for t in self.threads if t.state == RUNNING]
        parts = []
        stack: Stack = []
        for t in running:
            stack = kernel_stack(frames.get(t.ident or -1))
            parts.append(f"{t.label()} is still running at {where(stack)}")
        waits: dict[str, list[SimThread]] = {}
        for t in self.threads:
            if t.state == WAITING and t.wait is not None:
                waits.setdefault(t.wait.describe(), []).append(t)
            elif t.state == NEW:
                waits.setdefault("its turn (it has not started)", []).append(t)
        parts += [f"{_count(ts)} ({_span(ts)}) wait at {what}" for what, ts in waits.items()]
        culprit = running[0] if running else self.threads[0]
        self.failure = self.race or Finding(KernelTimeLimit, (
            f"time limit: the launch of {self.kernel_name} ran for more than {limit:g} s of CPU time, or "
            f"{WALL_FACTOR * limit:g} s (BRRR_SIM_TIME_LIMIT); " + "; ".join(parts)), culprit, stack)
        for t in running:  # a pure-Python loop stops at its next bytecode
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(t.ident or 0), ctypes.py_object(_Abort))


# A launch's limit is CPU time, as the CPU execution's runtime counts it: on a loaded machine a launch
# gets a fraction of a core, and a slow launch there is no hang (at load 17 on 2 cores a 4099-thread
# launch at 1 ms a thread takes about 35 s of wall time, its 36 s limit). Threads blocked outside the
# simulator spend no CPU time: WALL_FACTOR times the limit in wall time stops them.
WALL_FACTOR = 4.0


def _finished_in_time(finished: threading.Lock, spent: Callable[[], tuple[float, float]], limit: float) -> bool:
    """Wait for the launch to finish: False once it has spent `limit` seconds of this process's CPU
    time, or WALL_FACTOR times that in wall time."""
    while True:
        cpu, wall = spent()
        if cpu > limit or wall > WALL_FACTOR * limit:
            return False
        if finished.acquire(timeout=min(1.0, max(0.0, limit - cpu), WALL_FACTOR * limit - wall)):
            return True


class _Found(Exception):
    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def _ndindex_zyx(dims: tuple[int, ...]) -> Iterator[tuple[int, int, int]]:
    x, y, z = (tuple(dims) + (1, 1))[:3]
    for k in range(z):
        for j in range(y):
            for i in range(x):
                yield k, j, i


def _count(threads: list[SimThread]) -> str:
    return "1 thread" if len(threads) == 1 else f"{len(threads)} threads"


def _span(threads: list[SimThread]) -> str:
    if len(threads) <= 3:
        return ", ".join(str(t.threadIdx) for t in threads)
    return f"{threads[0].threadIdx} ... {threads[-1].threadIdx}"


def _with_place(error: Exception, t: SimThread) -> Exception:
    text = str(error)
    message = f"{t.place()}: {text}" if text else t.place()
    try:
        return type(error)(message)
    except Exception:  # an exception type that takes other arguments keeps its own message
        return RuntimeError(f"{message} ({type(error).__name__})")


# --- warp functions -----------------------------------------------------------------------------


def _signed32(bits: int) -> int:
    return bits - (1 << 32) if bits & (1 << 31) else bits


def _shuffle_source(kind: str, lane: int, b: int) -> int | None:
    """The lane a shuffle reads (numba on a GPU: PTX shfl.sync with c = 0x1f, 0 for up), None: its own value."""
    if kind == "shfl_sync":
        return b & 31
    j = {"shfl_up_sync": lane - b, "shfl_down_sync": lane + b, "shfl_xor_sync": lane ^ b}[kind]
    return j if 0 <= j < WARP else None


def warp_call(kind: str, group: list[SimThread], block: Block) -> None:
    """Give each lane of a completed warp call its result."""
    by_lane = {m.lane: m for m in group}
    bits = sum(1 << m.lane for m in group)
    if kind == "syncwarp":
        block.warp_syncs += 1
        for m in group:
            m.warp_epoch = block.warp_syncs
            m.result = None
    elif kind == "activemask":
        for m in group:
            m.result = bits
    elif kind.startswith("shfl"):
        for m in group:
            value, b = m.wait.args  # type: ignore[union-attr]
            src = _shuffle_source(kind, m.lane, int(b))
            if src is None or src == m.lane:
                m.result = value
            elif src in by_lane:
                m.result = by_lane[src].wait.args[0]  # type: ignore[union-attr]
            else:
                block._mask_error(m, f"reads lane {src}, which the mask does not name")
    elif kind in ("ballot_sync", "any_sync", "all_sync", "eq_sync"):
        votes = [bool(m.wait.args[0]) for m in group]  # type: ignore[union-attr]
        ballot = sum(1 << m.lane for m, v in zip(group, votes) if v)
        result = {"ballot_sync": _signed32(ballot), "any_sync": any(votes), "all_sync": all(votes),
                  "eq_sync": all(votes) or not any(votes)}[kind]
        for m in group:
            m.result = result
    elif kind in ("match_any_sync", "match_all_sync"):
        values = {m.lane: m.wait.args[0] for m in group}  # type: ignore[union-attr]
        same = all(v == values[group[0].lane] for v in values.values())
        for m in group:
            peers = _signed32(sum(1 << lane for lane, v in values.items() if v == values[m.lane]))
            m.result = peers if kind == "match_any_sync" else ((_signed32(bits) if same else 0), same)
    else:
        raise AssertionError(kind)
