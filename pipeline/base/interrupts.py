"""Ctrl-C and SIGTERM: every process brrr started ends within seconds, and brrr exits 130 or 143.

The command's process gets the signal; what it started may not (a worker in its own process
group, a compiler when the signal came from `kill PID`), and what it waits for may never
return (a worker pool's shutdown, a join). So the signal does three things:

1. in C, at once: wakes a watcher thread (signal.set_wakeup_fd), which stops and then kills
   every descendant process (workers, their compilers, multiprocessing's resource tracker)
   and, if the command has not ended GRACE_S later, ends it with os._exit;
2. in the main thread: raises Interrupted, so `finally` blocks run (a file being written is
   removed, never left half-written) and the CLI prints one line, then exits as usual (so
   multiprocessing's finalizers remove what they created);
3. a second signal ends the process at once.

Worker processes call `worker_start`: their own process group (the terminal's Ctrl-C goes to
brrr's main process, which ends them), and the kernel kills them if that process dies.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import defaultdict
from types import FrameType

GRACE_S = 2.0  # after the signal, how long the command may take to unwind before it is ended (5 s promised)
HANDLED = (signal.SIGINT, signal.SIGTERM)
_PR_SET_PDEATHSIG = 1


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM arrived; the exit code is 128 + the signal's number (130, 143)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_received: int | None = None
_announced = False
_interactive = False


def received() -> int | None:
    """The signal that interrupted this process, if one did."""
    return _received


def install(interactive: bool = False) -> None:
    """Handle SIGINT and SIGTERM in this (main) process as the module docstring says.

    interactive (brrr debug: pdb reads the terminal): Ctrl-C stays pdb's, a KeyboardInterrupt
    that pdb catches; only SIGTERM ends the process and its descendants.
    """
    global _interactive
    _interactive = interactive
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    threading.Thread(target=_watch, args=(read_end,), name="brrr-signals", daemon=True).start()
    for signum in HANDLED:
        if interactive and signum == signal.SIGINT:
            continue
        signal.signal(signum, _on_signal)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _received
    if _received is not None:  # the second signal: no more unwinding
        exit_now(128 + _received)
    _received = signum
    raise Interrupted(signum)


def _watch(read_end: int) -> None:
    while True:
        try:
            data = os.read(read_end, 64)
        except InterruptedError:
            continue
        if not data:
            return
        signums = [s for s in data if s in HANDLED and not (_interactive and s == signal.SIGINT)]
        if signums:
            break
    kill_descendants()
    time.sleep(GRACE_S)
    exit_now(128 + (_received or signums[0]))


def announce(code: int) -> None:
    """The one line an interrupted command ends with (once, whoever gets there first)."""
    global _announced
    if not _announced:
        _announced = True
        sys.stderr.write("brrr: terminated (SIGTERM)\n" if code == 143 else "brrr: interrupted\n")


def exit_now(code: int) -> None:
    """End this process now: what was printed is flushed, what it started is killed, nothing is awaited."""
    if code in (130, 143):
        try:
            announce(code)
        except Exception:  # a closed stream must not keep the process alive
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream must not keep the process alive
            pass
    kill_descendants()
    end_resource_tracker()
    os._exit(code)


def _children_by_parent() -> dict[int, list[int]]:
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                stat = f.read()
        except OSError:  # it ended meanwhile
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the command name may hold spaces and parentheses
        children[ppid].append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children, ...), from /proc."""
    children = _children_by_parent()
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _resource_tracker() -> int | None:
    """multiprocessing's resource tracker, if this process started one. It is spared: it ends by
    itself once every process holding its pipe has, after removing the semaphores they left, and
    killing it early only makes multiprocessing start another while brrr unwinds."""
    module = sys.modules.get("multiprocessing.resource_tracker")
    tracker = getattr(module, "_resource_tracker", None)
    return getattr(tracker, "_pid", None)


def kill_descendants() -> None:
    """SIGKILL every process below this one (but multiprocessing's resource tracker). Each is
    stopped first and the tree read again until nothing new appears, so a process forking at
    that moment cannot leave an orphan behind."""
    if not os.path.isdir("/proc"):  # not Linux: the workers are what can be found
        import multiprocessing

        for child in multiprocessing.active_children():
            child.kill()
        return
    me = os.getpid()
    spared = _resource_tracker()
    stopped: set[int] = {spared} if spared else set()
    for _ in range(50):
        new = [p for p in descendants(me) if p not in stopped]
        if not new:
            break
        for pid in new:
            _send(pid, signal.SIGSTOP)
            stopped.add(pid)
    for pid in stopped - {spared}:
        _send(pid, signal.SIGKILL)
    _wait_ended(stopped - {spared})


def _wait_ended(pids: set[int], wait_s: float = 2.0) -> None:
    """Wait (at most `wait_s`) until each killed process has ended, so none outlives brrr: SIGKILL is
    delivered when the process next runs, which on a loaded machine is not at once. A zombie has
    ended; its parent, or init, reaps it."""
    deadline = time.monotonic() + wait_s
    for pid in pids:
        while time.monotonic() < deadline and _running(pid):
            time.sleep(0.01)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:  # gone
        return False


def _send(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def end_resource_tracker(wait_s: float = 1.0) -> None:
    """End multiprocessing's resource tracker if this process started it (a worker pool's queue does,
    for its semaphores) and wait for it. It ends by itself once every process holding its pipe has,
    which is after this one: without this it outlived brrr, an orphan, for as long as that took.
    Called once the workers are gone (at exit, or after kill_descendants); one still holding the
    pipe after `wait_s` has it killed."""
    module = sys.modules.get("multiprocessing.resource_tracker")
    tracker = getattr(module, "_resource_tracker", None)
    fd, pid = getattr(tracker, "_fd", None), getattr(tracker, "_pid", None)
    if fd is None or pid is None:  # none, or one a parent process started (a worker's is brrr's)
        return
    tracker._fd = tracker._pid = None  # (private to multiprocessing: the names its own _stop() uses)
    os.close(fd)  # its end of the pipe: the tracker reads the end of it and exits
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        time.sleep(0.01)
    _send(pid, signal.SIGKILL)
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def end_resource_tracker_at_exit() -> None:
    """end_resource_tracker as this process exits: after multiprocessing's own exit handler has
    removed the semaphores (their finalizers tell the tracker) and joined the children."""
    from multiprocessing import util

    global _tracker_ended_at_exit
    if not _tracker_ended_at_exit:
        _tracker_ended_at_exit = True
        util.Finalize(None, end_resource_tracker, exitpriority=-100)  # the last of util's exit pass


_tracker_ended_at_exit = False


def worker_start(parent: int) -> None:
    """Run first in each worker process: its own process group, and killed with brrr's main process.
    A process forked from brrr (isolated.py's child) drops brrr's signal handling: its signals would
    otherwise reach brrr's watcher through the wakeup pipe they share, as if brrr had been signalled."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # not the main thread: it has none to drop
        pass
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the main process kills its workers on the way out
        pass
    if os.getppid() != parent:  # the main process ended before prctl took effect
        os._exit(1)
