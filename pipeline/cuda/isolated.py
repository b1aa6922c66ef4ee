"""The CPU execution of an op's compiled code in a child process brrr can lose.

A segfault or abort in binding.cpp, a kernel overflowing its fiber's stack or a wild pointer ends
the process it runs in. So validation calls the op's library through `Isolated`: each call's
tensors go to a child (a fork of brrr's own process, started once for the op and reused by each
call), which runs it and sends back the results and any input it wrote into. A child that
dies becomes a `Crashed` exception for that call, with the facts its crash handler wrote
(include/cpu/brrr_cpu_crash.cpp: the signal, the kernel, block and thread or the last launch, a
stack overflow named as one) and the kernel.cu or binding.cpp line addr2line finds; the next call
starts a new child. A call running past `hard_limit_s` (a loop in host code, where the runtime's
kernel time limit cannot reach) kills the child the same way.

Tensors travel as their whole storage (offset and strides kept, so a misaligned or strided view
stays one), allocated by torch's CPU allocator in the child, where the memory checks' allocation
registry sees them.
"""

from __future__ import annotations

import contextvars
import multiprocessing
import os
import signal
import subprocess
from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..base.files import shown
from ..base.settings import seconds_setting
from . import guards
from .isolated_targets import Target, target_of
from .printed import Printed

CHILD_NAME = "brrr-cpu-exec"
_PR_SET_NAME = 15
# A call's time limit beyond the runtime's own (BRRR_CPU_TIMEOUT a launch): for host code that loops.
HOST_GRACE_S = 30.0


# A call's limit is the child's CPU time, as the runtime's launch limit is: on a loaded machine a call
# gets a fraction of a core, and a slow call there is no endless loop. A child blocked (a lock, a
# read) spends none: WALL_FACTOR times the limit in wall time stops it.
WALL_FACTOR = 4.0


def _answered(calls: Any, pid: int, limit: float) -> bool:
    """Whether the child answers on `calls` before it has spent `limit` seconds of CPU time in this
    call, or WALL_FACTOR times that in wall time."""
    import time

    cpu_before, start = _cpu_seconds(pid), time.monotonic()
    while True:
        wall = time.monotonic() - start
        now = _cpu_seconds(pid)
        cpu = now - cpu_before if now is not None and cpu_before is not None else wall
        if cpu > limit or wall > WALL_FACTOR * limit:
            return bool(calls.poll(0))
        if calls.poll(min(1.0, max(0.0, limit - cpu), WALL_FACTOR * limit - wall)):
            return True


def _cpu_seconds(pid: int) -> float | None:
    """User and system CPU seconds of process `pid`, all its threads (Linux's /proc); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class Crashed(RuntimeError):
    """The child process running the op's code died (a signal) or was killed past its time limit."""


@dataclass(frozen=True)
class Packed:
    """A tensor as it crosses the pipe: its whole storage, and how the tensor views it."""

    dtype: Any
    size: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int
    data: bytes

    @staticmethod
    def of(t: Any) -> Packed:
        storage = t.untyped_storage()
        return Packed(t.dtype, tuple(t.shape), tuple(t.stride()), t.storage_offset(), storage_bytes(storage))

    def unpack(self) -> Any:
        import torch

        buffer = torch.empty(len(self.data), dtype=torch.uint8)  # torch's allocator: the registry sees it
        if self.data:
            buffer.copy_(torch.frombuffer(bytearray(self.data), dtype=torch.uint8))
        return torch.empty(0, dtype=self.dtype).set_(buffer.untyped_storage(), self.offset, self.size, self.stride)


def storage_bytes(storage: Any) -> bytes:
    """A storage's bytes in one copy (bytes(storage) goes element by element in Python: 30 ms for
    32 KB, which made every call of an isolated op cost more than the op)."""
    import torch

    return torch.empty(0, dtype=torch.uint8).set_(storage).numpy().tobytes()


def _pack(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return Packed.of(value.detach())
    if isinstance(value, (list, tuple)):
        return type(value)(_pack(v) for v in value)
    return value


def _flat(value: Any) -> list[Any]:
    return [x for v in value for x in _flat(v)] if isinstance(value, (list, tuple)) else [value]


def _unpack(value: Any) -> Any:
    if isinstance(value, Packed):
        return value.unpack()
    if isinstance(value, (list, tuple)):
        return type(value)(_unpack(v) for v in value)
    return value


# --- the child's side --------------------------------------------------------------------------------


def _child(target: Target, checked: bool, env: dict[str, str], calls: Any, crash_fd: Any) -> None:
    """The child's life, in a context of its own: the ContextVars of the call that forked it (guards
    paused, validation watching) are the parent's, not the child's."""
    contextvars.Context().run(_serve, target, checked, env, calls, crash_fd)


def _as_a_new_process() -> None:
    """Undo what the fork copied from the moment brrr forked: torch's dispatch modes (a fork during a
    guarded call would run every tensor op of the child through the parent's guard bands), grad mode,
    and stdout and stderr objects whose locks another thread of brrr's (a ticker) may have held."""
    import sys

    import torch
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, _pop_mode

    for _ in _get_current_dispatch_mode_stack():
        _pop_mode()
    torch.set_grad_enabled(True)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115  (fd 1 and 2 stay open: the process's own)
    sys.stderr = open(2, "w", closefd=False, buffering=1)  # noqa: SIM115


def _serve(target: Target, checked: bool, env: dict[str, str], calls: Any, crash_fd: Any) -> None:
    """Load the op's code and serve calls until the pipe closes."""
    import ctypes

    import torch

    from ..base.interrupts import worker_start

    _as_a_new_process()
    worker_start(os.getppid())  # dies with brrr, ignores the terminal's Ctrl-C (brrr handles it)
    try:  # its name in ps and /proc/PID/comm, so what runs an op's code can be told apart from brrr
        ctypes.CDLL(None).prctl(_PR_SET_NAME, CHILD_NAME.encode())
    except (OSError, AttributeError):
        pass
    os.environ.update(env)
    torch.set_num_threads(1)
    if checked:
        from .memcheck import install_allocation_registry

        install_allocation_registry()
    library = target.library
    function = target.load()
    ctypes.CDLL(library).brrr_cpu_crash_install(crash_fd.fileno())
    printf = Printed(library)
    printf.keep()  # a kernel's printf lines go back with the call's answer, to the row that made them
    while True:
        try:
            name, args, guarded, poisoned = calls.recv()
        except EOFError:
            return
        received = _unpack(args)
        _poison(poisoned)  # as the parent: what the call allocates and leaves unwritten reads NaN
        for a in received:  # each tensor's own elements are its bounds, not the storage it came in
            if checked and isinstance(a, torch.Tensor):
                guards.narrow_to_span(a)
        before = [storage_bytes(a.untyped_storage()) if isinstance(a, torch.Tensor) else None for a in received]
        try:
            # what the call allocates sits between guard bands; the parent checks those it returns, by
            # name, and the workspace it does not is checked here
            with guards.Guarding() if guarded else nullcontext() as mode:
                result = function(name)(*received)
            if mode is not None:
                mode.check(name, {f"result {i}": r for i, r in enumerate(_flat(result))}, unnamed_only=True)
        except Exception as e:  # the op's own error (a fault the runtime reported, a TORCH_CHECK): the parent's to raise
            calls.send(("error", type(e).__name__, str(e), printf.take()))
            continue
        written = {i: storage_bytes(a.untyped_storage()) for i, (a, b) in enumerate(zip(received, before))
                   if b is not None and storage_bytes(a.untyped_storage()) != b}
        calls.send(("ok", _pack(result), written, printf.take()))


def _poisoning() -> bool:
    """Whether this process fills what torch allocates with NaN now (validation/trial.poisoned)."""
    import torch

    return torch.are_deterministic_algorithms_enabled() and torch.utils.deterministic.fill_uninitialized_memory


def _poison(on: bool) -> None:
    """The child allocates as the parent would: NaN-filled while validation poisons outputs."""
    import torch

    if on == _poisoning():
        return
    torch.use_deterministic_algorithms(on, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = on


def _imported_before_the_fork() -> None:
    """What the child imports lazily at its first call, imported once here, where every child forked
    later has it: torch.use_deterministic_algorithms, the first time, imports torch._inductor's config
    and torch._dynamo (0.85 s of CPU, which each child paid again: most of what isolation still
    cost). Called with the state it has, it changes nothing."""
    import torch

    torch.use_deterministic_algorithms(torch.are_deterministic_algorithms_enabled(),
                                       warn_only=torch.is_deterministic_algorithms_warn_only_enabled())


def _context() -> Any:
    """fork: the child is a copy of this process, torch and the op's library already loaded, so starting
    it costs a fork (about 10 ms of CPU). A forkserver, which imported torch again for each run, made
    isolation cost 31% of a warm validate's CPU time, 50% of its wall time (benchmarks/results/
    2026-11-25-isolation-cost). Forking after brrr has started
    threads is safe here as it is for torch's DataLoader workers: the child starts no thread pool of
    the parent's (torch.set_num_threads(1); brrr's runtime starts its threads at each launch) and
    undoes the rest (_as_a_new_process)."""
    return multiprocessing.get_context("fork")


# --- the parent's side -------------------------------------------------------------------------------


class Isolated:
    """An op's CPU build (builder.Extension, or module_build.ModuleBuild: the seeds' single-.cu layout)
    whose calls run in a child process; forward, backward and variants() as the build's, so a Stage
    cannot tell the difference."""

    def __init__(self, extension: Any, checked: bool, hard_limit_s: float | None = None) -> None:
        self.extension = extension
        self.checked = checked
        self.hard_limit_s = hard_limit_s if hard_limit_s is not None else cpu_time_limit() + HOST_GRACE_S
        self.process: Any = None
        self.calls: Any = None
        self.crashes: Any = None
        self.seconds = getattr(extension, "seconds", 0.0)
        self.cached = getattr(extension, "cached", True)
        self.found = getattr(extension, "found", ())  # a module's own source problems (module_build)
        self.printed = ""  # the kernels' printf lines since the last take_printed (a crash loses its call's)

    @property
    def forward(self) -> Any:
        return self.function("forward")

    @property
    def backward(self) -> Any:
        return self.function("backward")

    def variants(self) -> dict[str, Any]:
        return {name: self.function(name) for name in self.extension.variants()}

    def function(self, name: str) -> Any:
        def call(*args: Any) -> Any:
            return self.call(name, args)

        call.__name__ = name
        return call

    def start(self) -> None:
        context = _context()
        self.calls, child_end = context.Pipe()
        self.crashes, crash_end = context.Pipe(duplex=False)
        env = {k: v for k, v in os.environ.items() if k.startswith("BRRR_")}
        self.process = context.Process(target=_child, daemon=True, name="brrr-cpu-execution",
                                       args=(target_of(self.extension), self.checked,
                                             env, child_end, crash_end))
        _imported_before_the_fork()
        self.process.start()
        child_end.close()
        crash_end.close()

    def call(self, name: str, args: tuple[Any, ...]) -> Any:
        with guards.paused():  # the transfers are brrr's, not the op's allocations
            return self._call(name, args)

    def _call(self, name: str, args: tuple[Any, ...]) -> Any:
        import torch

        if self.process is None or not self.process.is_alive():
            self.close()
            self.start()
        try:
            self.calls.send((name, _pack(args), guards.active(), _poisoning()))
            if not _answered(self.calls, self.process.pid, self.hard_limit_s):
                self.kill()
                raise Crashed(f"{name} ran for more than {self.hard_limit_s:.0f} s of CPU time (or "
                              f"{WALL_FACTOR * self.hard_limit_s:.0f} s) and was stopped: a loop that does not end, "
                              "in host code (binding.cpp) or where the kernel time limit cannot reach it")
            answer = self.calls.recv()
        except (EOFError, ConnectionError, BrokenPipeError, OSError):
            raise self.crash(name) from None
        self.printed += answer[-1]
        if answer[0] == "error":  # its type named where it is not torch's usual one (a spec adapter's TypeError)
            kind, message = answer[1], answer[2]
            raise RuntimeError(message if kind == "RuntimeError" else f"{kind}: {message}")
        _, result, written, _ = answer
        for i, data in written.items():  # what the op wrote into an input, so validation sees the write
            target = args[i].untyped_storage()
            target.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8).untyped_storage())
        return _unpack(result)

    def take_printed(self) -> str:
        """The device printf lines of the calls since the last take, each prefixed with block and thread."""
        text, self.printed = self.printed, ""
        return text

    def crash(self, name: str) -> Crashed:
        """The child died: what its handler wrote, and how it ended."""
        self.process.join(5)
        code = self.process.exitcode
        record = _read_raw(self.crashes)
        self.close()
        return Crashed(describe_crash(record.decode(errors="replace"), code, name))

    def kill(self) -> None:
        if self.process is not None and self.process.pid is not None and self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.join(5)

    def close(self) -> None:
        """End the child (called when the validation is done; a closed pipe ends it too)."""
        for end in (self.calls, self.crashes):
            if end is not None:
                end.close()
        self.calls = self.crashes = None
        if self.process is not None and self.process.pid is not None:  # started
            self.kill()
            self.process.join(5)
            self.process.close()
        self.process = None


def _read_raw(connection: Any) -> bytes:
    """The crash handler writes raw bytes, not a framed message: read what is in the pipe."""
    data = b""
    fd = connection.fileno()
    os.set_blocking(fd, False)
    while True:
        try:
            chunk = os.read(fd, 65536)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        data += chunk
    return data


# --- what a crash was -----------------------------------------------------------------------------------

_SIGNALS = {
    signal.SIGSEGV: "segmentation fault", signal.SIGBUS: "bus error", signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "arithmetic exception", signal.SIGABRT: "abort()", signal.SIGTRAP: "trap",
    signal.SIGKILL: "killed",
}


def describe_crash(record: str, exit_code: int | None, name: str) -> str:
    """One crash as a fault line: "FILE:LINE: crash (SIGSEGV, ...) in KERNEL, block (..), thread (..): ..."
    inside a kernel (the form verdict.faults reads), else naming binding.cpp's line and the last launch."""
    facts = dict(part.split("=", 1) for part in record.strip().split("\n")[-1].split("\t")[1:] if "=" in part)
    signum = int(facts.get("signal", -(exit_code or 0)) or 0)
    try:
        sig = signal.Signals(signum).name
    except ValueError:
        sig = f"exit code {exit_code}"
    what = f"{sig} ({_SIGNALS.get(signum, 'signal')})" if signum else f"the process ended ({sig})"
    place = first_source_line(facts.get("frames", ""))
    if "overflow" in facts:
        kb = int(facts["overflow"]) // 1024
        what = (f"stack overflow ({sig}): this thread's locals or calls took more than its {kb} KB stack "
                "(a large local array or deep recursion; BRRR_CPU_STACK_KB sets the size)")
    if "kernel" in facts and "block" in facts:
        block = facts["block"].replace(",", ", ")
        thread = facts["thread"].replace(",", ", ")
        at = place or facts.get("site", "?:0")
        return f"{at}: crash in {facts['kernel']}, block ({block}), thread ({thread}): {what}"
    after = f"; the last launch entered: {facts['last']} at {_shown(facts['site'])}" if "last" in facts else ""
    at = f"{_shown(place)}: " if place else ""
    return f"{at}{name} crashed the process: {what}{after}"


def _shown(place: str) -> str:
    file, _, line = place.rpartition(":")
    return f"{shown(Path(file))}:{line}" if file else place


def first_source_line(frames: str) -> str:
    """The first frame, from the faulting instruction out, that addr2line places in a file of the op's
    own (not a system or torch header, not brrr's runtime): "FILE:LINE", or ""."""
    for frame in (f for f in frames.split(";") if f):
        library, _, offset = frame.removeprefix("pc:").rpartition("+")
        if not library.endswith(".so") or "/ext/" not in library:
            continue  # only the op's own library has its lines
        place = _addr2line(library, offset)
        if place and not _system(place):
            return place
    return ""


def _system(place: str) -> bool:
    file = place.rpartition(":")[0]
    return (file.startswith(("/usr/", "??")) or "/include/cpu/" in file or "/torch/include/" in file
            or "site-packages" in file or not Path(file).is_file())


@lru_cache(maxsize=256)
def _addr2line(library: str, offset: str) -> str:
    try:
        out = subprocess.run(["addr2line", "-e", library, offset], capture_output=True, text=True, timeout=20,
                             check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    file, _, line = out.partition(" ")[0].rpartition(":")
    return f"{file}:{line}" if file and line.isdigit() and line != "0" else ""


def cpu_time_limit() -> float:
    """BRRR_CPU_TIMEOUT, validated: the most a launch of the CPU execution may run (see the runtime)."""
    return seconds_setting("BRRR_CPU_TIMEOUT", DEFAULT_LAUNCH_LIMIT_S)


# The runtime's default time limit for a launch, as a cap (it scales it with the launch's threads).
DEFAULT_LAUNCH_LIMIT_S = 30.0
