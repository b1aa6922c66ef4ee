"""Run one function over several items in worker processes, results in the order asked.

Workers are spawned (forking after torch and numba have started threads is unsafe), each in its
own process group and killed with brrr's main process (see interrupts.worker_start). However the
caller stops (Ctrl-C, SIGTERM, an exception, or it simply stops reading), the workers and what
they started are killed, not awaited: a worker in the middle of a simulation would otherwise keep
the pool's shutdown, and so brrr, waiting.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from .interrupts import worker_start

T = TypeVar("T")


def in_processes(fn: Callable[..., T], items: Sequence[Any], jobs: int, *extra: Any) -> Iterator[T]:
    """fn(item, *extra) for each item in up to `jobs` processes (a default: free_cpus()); each result
    as soon as it and those before it are ready. fn and its arguments must be picklable (a
    module-level function)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    workers = max(1, min(jobs, len(items)))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_start, initargs=(os.getpid(), share_of_cpus(workers)))
    finished = False
    spawned: set[int] = set()
    try:
        with _quiet_bootstrap(spawned):
            futures = [pool.submit(fn, item, *extra) for item in items]
        for future in futures:
            yield future.result()
        finished = True
    finally:
        if not finished:
            _kill_workers(pool, spawned)
        pool.shutdown(wait=finished, cancel_futures=True)


def cpus() -> int:
    """The CPUs this process may run on (a container's limit, where os.cpu_count() sees the host's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def free_cpus() -> int:
    """The CPUs no one else is using now: this process's CPUs less the machine's load (the 1-minute
    average, scaled to this process's share of the machine's CPUs), at least 1.

    brrr's processes and threads are sized to these, never to all CPUs: on a busy machine (a laptop,
    CI, a shared server) more threads than free cores only take turns, each paying for the others'
    switches, and torch's spinning pool threads take cores from the work itself."""
    mine, machine = cpus(), os.cpu_count() or 1
    try:
        load = os.getloadavg()[0] * mine / max(mine, machine)
    except OSError:  # no load average here
        return mine
    return max(1, min(mine, round(mine - load)))


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
    caller's: the executor's workers, and any process spawned for it that it never registered."""
    for pid in {*(getattr(pool, "_processes", None) or {}), *spawned}:
        try:
            os.killpg(pid, signal.SIGKILL)  # a group of its own since worker_start
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(pid, signal.SIGKILL)  # killed before worker_start made its group
            except ProcessLookupError:
                pass
