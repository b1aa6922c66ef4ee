"""The one process pool: run one function over several items in worker processes.

Workers are spawned (forking after torch and numba have started threads is unsafe), each in its
own process group and killed with brrr's main process (see interrupts.worker_start). However the
caller stops (Ctrl-C, SIGTERM, an exception, or it simply stops reading), the workers and what
they started are killed, not awaited: a worker in the middle of a simulation would otherwise keep
the pool's shutdown, and so brrr, waiting. An item running past the pool's time limit has its
worker killed and replaced (brrr mutate: a mutant that hangs); `in_processes` gives the results in
the order asked, `Pool.run` as each is done.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from .interrupts import end_resource_tracker_at_exit, worker_start

T = TypeVar("T")


@dataclass(frozen=True)
class Schedule:
    """How in_processes hands items out and tells of them. `order`: the items' indices in the order to
    start them (the results still come in the order of the items). `as_done(index, result)`: called
    as each result arrives, before the ones ahead of it are ready (progress: a long first item would
    otherwise hold back every word about the others)."""

    order: Sequence[int] | None = None
    as_done: Callable[[int, Any], None] | None = None


def in_processes(fn: Callable[..., T], items: Sequence[Any], jobs: int, *extra: Any,
                 if_lost: Callable[[Any, Lost], T] | None = None, schedule: Schedule = Schedule()) -> Iterator[T]:
    """fn(item, *extra) for each item in up to `jobs` processes (a default: free_cpus()); each result
    as soon as it and those before it are ready. fn and its arguments must be picklable (a
    module-level function); an exception fn raises is raised here. An item whose worker died gives
    if_lost(item, lost) where given (the other items go on), else raises. `schedule`: the order to
    start them in, and who hears of each as it arrives."""
    pool = Pool(fn, max(1, min(jobs, len(items))), extra)
    finished = False
    try:
        done: dict[int, Any] = {}
        following = 0
        for index, result in pool.run(items, schedule.order):
            if isinstance(result, Lost):
                if if_lost is None:
                    raise RuntimeError(f"a worker process was lost: {result.why}")
                result = if_lost(items[index], result)
            if schedule.as_done is not None:
                schedule.as_done(index, result)
            done[index] = result
            while following in done:
                yield done.pop(following)
                following += 1
        finished = True
    finally:
        pool.close(kill=not finished)


@dataclass(frozen=True)
class Lost:
    """What an item gives whose worker is gone: killed past the pool's time limit (overdue), or dead
    on its own (a crash in an op's code)."""

    why: str
    seconds: float
    overdue: bool = False


class Pool:
    """Up to `jobs` worker processes running fn(item, *extra), fed from one queue, each answering on a
    pipe of its own (written as it goes, so a worker that dies has said which item it took). As many
    items run at once as there are free CPUs when each is handed out (at_once): the pool starts with
    the workers the free CPUs call for and starts more, up to `jobs`, as CPUs come free. `limit`:
    seconds after which an item's worker is killed (its process group) and replaced, the item
    giving Lost; None, no limit (it may be set later, as brrr mutate does from the op's own time)."""

    def __init__(self, fn: Callable[..., Any], jobs: int, extra: tuple[Any, ...] = (), limit: float | None = None) -> None:
        import multiprocessing

        self.context = multiprocessing.get_context("spawn")
        end_resource_tracker_at_exit()  # the queue's semaphores start multiprocessing's resource tracker
        self.tasks = self.context.Queue()
        self.fn, self.extra, self.limit = fn, extra, limit
        self.jobs = jobs
        self.threads = share_of_cpus(jobs)
        self._processes: dict[int, Any] = {}  # pid -> process (the name _kill_workers reads)
        self.answers: dict[int, Any] = {}  # pid -> the reading end of its pipe
        self.spawned: set[int] = set()
        self.lost_workers = 0
        self.items = 0  # given to run() so far
        try:
            for _ in range(max(1, min(jobs, free_cpus()))):
                self._spawn()
        except BaseException:  # Ctrl-C while workers start: none of them outlives brrr
            _kill_workers(self, self.spawned)
            raise

    def _spawn(self) -> None:
        reader, writer = self.context.Pipe(duplex=False)
        # Not a daemon: a worker runs an op's code in a child of its own (cuda/isolated.py), and a daemon
        # may have no children. It still dies with brrr (worker_start: PDEATHSIG) and close() ends it.
        process = self.context.Process(target=_serve, daemon=False, args=(
            self.fn, self.extra, self.tasks, writer, os.getpid(), self.threads))
        with _quiet_bootstrap(self.spawned):
            process.start()
        writer.close()  # the worker's copy is the only one: its end reads as the end of the pipe
        self._processes[process.pid] = process
        self.answers[process.pid] = reader

    def run(self, items: Sequence[Any], order: Sequence[int] | None = None) -> Iterator[tuple[int, Any]]:
        """(index, result) for each item as it is done; Lost for one whose worker was killed past the
        limit or died. `order`: the indices in the order the workers take them (default: as given)."""
        from collections import deque
        from multiprocessing.connection import wait

        order = range(len(items)) if order is None else order
        if sorted(order) != list(range(len(items))):
            raise ValueError(f"order {list(order)} is not a permutation of the {len(items)} items' indices")
        self.items += len(items)
        pending = deque(order)
        handed: dict[int, float] = {}  # item index -> when it was handed out, until it is done
        running: dict[int, tuple[int, float]] = {}  # worker pid -> (item index, start)
        left = len(items)
        while left:
            # Items are handed out one at a time, as many at once as there are free cores (at_once):
            # a machine that got busy since the workers started gets fewer of brrr's, not more.
            while pending and len(handed) < min(self.jobs, cpus()) and len(handed) < at_once(self.jobs, len(handed)):
                if len(handed) >= len(self._processes):  # every worker has an item: one more
                    self._spawn()
                index = pending.popleft()
                handed[index] = time.monotonic()
                self.tasks.put((index, items[index]))
            by_reader = {r: pid for pid, r in self.answers.items()}
            for reader in wait(list(by_reader), timeout=1.0):
                pid = by_reader[reader]
                try:
                    event, index, value = reader.recv()
                except (EOFError, OSError):  # the worker is gone
                    if pid in running:
                        index, began = running.pop(pid)
                        handed.pop(index, None)
                        left -= 1
                        code = self._retire(pid)
                        yield index, Lost(f"its worker process {ended(code)}", time.monotonic() - began)
                    else:
                        self._retire(pid)
                    continue
                if event == "start":
                    running[pid] = (index, time.monotonic())
                    continue
                running.pop(pid, None)
                handed.pop(index, None)
                left -= 1
                if event == "raised":
                    raise value
                yield index, value
            for pid, (index, began) in list(running.items()):
                if self.limit is not None and time.monotonic() - began > self.limit:
                    _kill_group(pid)
                    del running[pid]
                    handed.pop(index, None)
                    left -= 1
                    self._retire(pid)
                    yield index, Lost(f"ran past {self.limit:.0f}s", self.limit, overdue=True)

    def _retire(self, pid: int) -> int | None:
        """A worker that is gone, killed or dead, is replaced; its exit code. Each item may take one
        worker with it: more are workers that end as they start, and the pool gives up."""
        process = self._processes.pop(pid)
        self.answers.pop(pid).close()
        process.join(timeout=5)
        self.lost_workers += 1
        if self.lost_workers > self.items:
            raise RuntimeError(f"worker processes end as they start (exit code {process.exitcode})")
        self._spawn()
        return process.exitcode

    def close(self, kill: bool = False) -> None:
        """Stop the workers: each ends after its current item, or with kill, at once (and what it started)."""
        if kill:
            _kill_workers(self, self.spawned)
        else:
            for _ in self._processes:
                self.tasks.put(None)
        for process in self._processes.values():
            process.join(timeout=None if not kill else 5)
        for reader in self.answers.values():
            reader.close()


def _serve(fn: Callable[..., Any], extra: tuple[Any, ...], tasks: Any, answers: Any, parent: int, threads: int) -> None:
    """A worker's life: its start (worker_start, its share of torch's threads), then items until told to stop."""
    _start(parent, threads)
    while (item := tasks.get()) is not None:
        index, value = item
        answers.send(("start", index, os.getpid()))
        try:
            answers.send(("done", index, fn(value, *extra)))
        except Exception as e:  # raised where the caller reads it
            answers.send(("raised", index, e))


def ended(exit_code: int | None) -> str:
    """How a process ended, said: "was killed by SIGSEGV" (a negative exit code is the signal), or its code."""
    if exit_code is not None and exit_code < 0:
        try:
            return f"was killed by {signal.Signals(-exit_code).name}"
        except ValueError:
            pass
    return f"ended with exit code {exit_code}"


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)  # a group of its own since worker_start
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def cpus() -> int:
    """The CPUs this process may run on (a container's limit, where os.cpu_count() sees the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


RUNNABLE_READS = 5      # reads of /proc/stat a measurement averages ...
RUNNABLE_GAP_S = 0.02   # ... this far apart: a tenth of a second in all


def runnable() -> float:
    """Threads that run or wait for a CPU on the machine now, the caller not counted: /proc/stat's
    procs_running (which counts the reading thread itself), the mean of RUNNABLE_READS reads.

    Not the load average: that is a 1-minute average, so for a minute after any command ends (the
    previous `brrr validate`, a build) an idle machine reads as busy, and brrr ran its ops one at a
    time on 2 idle cores (the seven ops in 129 s instead of about 60). Where there is no /proc/stat
    (macOS), the 1-minute load average is all there is."""
    reads: list[int] = []
    try:
        for i in range(RUNNABLE_READS):
            if i:
                time.sleep(RUNNABLE_GAP_S)
            with open("/proc/stat", "rb") as f:
                line = next(ln for ln in f if ln.startswith(b"procs_running "))
            reads.append(int(line.split()[1]))
    except (OSError, StopIteration, ValueError):
        try:
            return os.getloadavg()[0]
        except OSError:  # no load average either
            return 0.0
    return max(0.0, sum(reads) / len(reads) - 1.0)


def busy_elsewhere(mine: int = 0) -> float:
    """CPUs of this process's share of the machine (a container's limit) that others keep busy now:
    the runnable threads less `mine`, brrr's own items running (a busy worker is about one)."""
    mine_cpus, machine = cpus(), os.cpu_count() or 1
    return max(0.0, runnable() * mine_cpus / max(mine_cpus, machine) - mine)


def free_cpus() -> int:
    """The CPUs no one else is using now: this process's CPUs less those others keep busy
    (busy_elsewhere), at least 1.

    brrr's processes and threads are sized to these, never to all CPUs: on a busy machine (a laptop,
    CI, a shared server) more threads than free cores only take turns, each paying for the others'
    switches, and torch's spinning pool threads take cores from the work itself."""
    return max(1, min(cpus(), round(cpus() - busy_elsewhere())))


def at_once(workers: int, running: int) -> int:
    """How many of `workers` should run items now, `running` of brrr's own items running: the CPUs
    the others leave free (busy_elsewhere), at least 1, never more than the CPUs.

    Sized at each item rather than once at the start, so a brrr that started on an idle machine gives
    cores back as others start, and one that started beside a finishing run takes them up as it ends."""
    return max(1, min(workers, cpus(), round(cpus() - busy_elsewhere(running))))


def share_of_cpus(workers: int) -> int:
    """torch threads for each of `workers` processes: the free CPUs (free_cpus) shared among them.
    Each would otherwise start a thread per CPU, and N times as many threads as CPUs spinning in
    torch's thread pool cost 12% of `brrr validate` on 2 cores (56 s against 49 s)."""
    return max(1, free_cpus() // max(1, workers))


def use_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


def _start(parent: int, threads: int) -> None:
    """Run first in each worker: worker_start, and its share of the CPUs for torch's own threads."""
    worker_start(parent)
    use_threads(threads)


# What a spawned worker runs first, before multiprocessing's own bootstrap: Ctrl-C reaches the whole
# process group, a worker included while it still reads its start-up data from brrr, and if brrr
# has gone (closed that pipe) the worker ends without a word instead of printing a traceback.
_BOOTSTRAP = """import os, signal
signal.signal(signal.SIGINT, signal.SIG_IGN)
from multiprocessing.spawn import spawn_main
try:
    spawn_main({args})
except (EOFError, BrokenPipeError, ConnectionResetError):
    os._exit(1)
"""


@contextmanager
def _quiet_bootstrap(spawned: set[int]) -> Iterator[None]:
    """Workers spawned inside start with _BOOTSTRAP (multiprocessing.spawn's command line, rewritten),
    and each one's pid goes into `spawned` the moment it exists: Ctrl-C while multiprocessing still
    writes a worker's start-up data leaves a process that no pool or list of children knows."""
    from multiprocessing import spawn, util

    original = spawn.get_command_line
    original_spawn = util.spawnv_passfds

    def spawn_recorded(path: Any, args: Any, passfds: Any) -> int:
        pid = original_spawn(path, args, passfds)
        spawned.add(pid)
        return pid

    def command_line(**kwds: Any) -> list[str]:
        command = original(**kwds)
        if "-c" in command:
            args = ", ".join(f"{k}={v!r}" for k, v in kwds.items())
            command[command.index("-c") + 1] = _BOOTSTRAP.format(args=args)
        return command

    spawn.get_command_line = command_line
    util.spawnv_passfds = spawn_recorded
    try:
        yield
    finally:
        spawn.get_command_line = original
        util.spawnv_passfds = original_spawn


def _kill_workers(pool: Any, spawned: set[int]) -> None:
    """SIGKILL each worker's process group (the worker and what it started), and nothing else of the
    caller's: the pool's workers, and any process spawned for it that it never registered."""
    for pid in {*(getattr(pool, "_processes", None) or {}), *spawned}:
        _kill_group(pid)
