"""workers.py: results in order from worker processes, and a worker that outlives brrr ends silently."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from brrr_kernels.base import workers

STOCK = "from multiprocessing.spawn import spawn_main; spawn_main({args})"


def square(n: int) -> int:
    return n * n


def torch_threads(_: int) -> int:
    import torch

    return torch.get_num_threads()


def idle(monkeypatch: pytest.MonkeyPatch, load: float = 0.0) -> None:
    """The machine's runnable threads (other than brrr's reader) as brrr reads them."""
    monkeypatch.setattr(workers, "runnable", lambda: load)


@pytest.mark.parametrize("jobs", [1, 2, 64])
def test_workers_share_the_cpus_for_torchs_threads(jobs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    idle(monkeypatch)
    shares = list(workers.in_processes(torch_threads, [0, 1], jobs))
    assert shares == [max(1, workers.cpus() // min(jobs, 2))] * 2


def test_on_a_busy_machine_the_default_is_one_worker_and_workers_get_one_torch_thread(
        monkeypatch: pytest.MonkeyPatch) -> None:
    idle(monkeypatch, load=4.0 * (os.cpu_count() or 1))
    assert workers.free_cpus() == 1
    assert list(workers.in_processes(torch_threads, [0, 1, 2], 2)) == [1, 1, 1]


@pytest.mark.parametrize("load, free", [(0.0, 1.0), (0.5, 0.5), (0.99, 0.0), (3.0, 0.0)])
def test_free_cpus_are_the_cpus_less_the_load(load: float, free: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """load and free are fractions of the machine's CPUs; at least one CPU is always free."""
    machine = os.cpu_count() or 1
    idle(monkeypatch, load * machine)
    share = workers.cpus() / machine  # this process's share of the machine (a container's limit)
    assert workers.free_cpus() == max(1, round(workers.cpus() - load * machine * share))
    assert 1 <= workers.free_cpus() <= workers.cpus()
    assert workers.free_cpus() == max(1, round(free * workers.cpus()))


def test_results_come_in_the_order_asked() -> None:
    assert list(workers.in_processes(square, [3, 1, 2], 2)) == [9, 1, 4]


@pytest.mark.parametrize("bootstrap, quiet", [(workers._BOOTSTRAP, True), (STOCK, False)], ids=["brrr's", "stock"])
def test_a_worker_whose_parent_closed_its_pipe_ends_without_a_traceback(bootstrap: str, quiet: bool) -> None:
    """Ctrl-C while workers start: brrr ends and closes the pipe a worker reads its start-up data from.
    multiprocessing's own command line prints EOFError's traceback there; brrr's exits 1 silently."""
    read, write = os.pipe()
    os.close(write)
    try:
        proc = subprocess.run([sys.executable, "-c", bootstrap.format(args=f"pipe_handle={read}"),
                               "--multiprocessing-fork"], pass_fds=(read,), capture_output=True, text=True, timeout=60)
    finally:
        os.close(read)
    assert proc.returncode == 1
    assert (proc.stderr == "") is quiet, proc.stderr
    assert ("EOFError" in proc.stderr) is not quiet


def test_a_process_spawned_but_never_registered_is_killed_with_the_workers() -> None:
    """Ctrl-C while multiprocessing writes a new worker's start-up data: the pool never learns its pid."""
    from multiprocessing import util

    spawned: set[int] = set()
    with workers._quiet_bootstrap(spawned):
        pid = util.spawnv_passfds(b"/bin/sleep", [b"sleep", b"30"], ())
    assert spawned == {pid}
    workers._kill_workers(object(), spawned)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def nap_or_die(seconds: float) -> float:
    """An item: sleep that long (forever, in effect, past the pool's limit); a negative one kills its worker."""
    import time

    if seconds < 0:
        os._exit(3)
    time.sleep(seconds)
    return seconds


def test_the_pool_replaces_a_worker_past_its_limit_or_dead_and_goes_on() -> None:
    """brrr mutate's hangs and crashes: the item is lost, said why, and the items after it still run."""
    pool = workers.Pool(nap_or_die, 1, limit=2.0)
    try:
        results = dict(pool.run([0.0, 600.0, -1.0, 0.1]))
    finally:
        pool.close(kill=True)
    assert results[0] == 0.0 and results[3] == 0.1
    hang, crash = results[1], results[2]
    assert isinstance(hang, workers.Lost) and hang.overdue and hang.why == "ran past 2s"
    assert isinstance(crash, workers.Lost) and not crash.overdue and "exit code 3" in crash.why
    assert all(not p.is_alive() for p in pool._processes.values())


def test_an_exception_in_a_worker_is_raised_in_the_caller() -> None:
    with pytest.raises(ZeroDivisionError):
        list(workers.in_processes(reciprocal, [1, 0], 2))


def reciprocal(n: int) -> float:
    return 1 / n


def crash_on_zero(n: int) -> int:
    if n == 0:
        os.kill(os.getpid(), signal.SIGSEGV)  # as an op's code crashing a worker would
    return n * n


def test_a_worker_that_dies_costs_its_item_only_when_asked() -> None:
    """validate --jobs: an op whose worker dies is that op's error; the other ops' results still come,
    in order (it was BrokenProcessPool, both lost)."""
    got = list(workers.in_processes(crash_on_zero, [3, 0, 2], 2, if_lost=lambda item, lost: f"lost {item}"))
    assert got == [9, "lost 0", 4]
    with pytest.raises(RuntimeError, match="a worker process was lost"):
        list(workers.in_processes(crash_on_zero, [0], 1))


def started(n: int) -> float:
    import time

    return time.monotonic()


def test_order_says_which_item_starts_first_and_results_still_come_in_the_order_asked() -> None:
    # One worker takes the items one after another, in `order`: their start times follow it.
    starts = list(workers.in_processes(started, [0, 1, 2, 3], 1, schedule=workers.Schedule(order=[2, 0, 3, 1])))
    assert sorted(range(4), key=lambda i: starts[i]) == [2, 0, 3, 1]
    assert list(workers.in_processes(square, [3, 1, 2], 2, schedule=workers.Schedule(order=[2, 1, 0]))) == [9, 1, 4]


def test_as_done_hears_of_each_result_as_it_arrives_before_the_ones_ahead_of_it_are_ready() -> None:
    # One worker, the second item first: the in-order results wait for the first item, the word does not.
    events: list[tuple[str, int]] = []
    schedule = workers.Schedule(order=[1, 0], as_done=lambda index, result: events.append(("done", index)))
    for result in workers.in_processes(square, [3, 2], 1, schedule=schedule):
        events.append(("yield", result))
    assert events == [("done", 1), ("done", 0), ("yield", 9), ("yield", 4)]


def test_an_order_that_is_not_a_permutation_is_refused() -> None:
    with pytest.raises(ValueError, match="permutation"):
        list(workers.in_processes(square, [3, 1, 2], 1, schedule=workers.Schedule(order=[0, 0, 1])))


def spans(n: int) -> tuple[float, float]:
    import time

    start = time.monotonic()
    time.sleep(0.4)
    return start, time.monotonic()


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    return max(sum(s <= t < e for s, e in intervals) for t, _ in intervals)


def test_as_many_items_run_at_once_as_cpus_are_free_whatever_the_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    idle(monkeypatch, load=4.0 * (os.cpu_count() or 1))  # others keep every CPU busy: one item at a time
    assert most_at_once(list(workers.in_processes(spans, list(range(4)), 4))) == 1
    if workers.cpus() >= 2:
        idle(monkeypatch)
        assert most_at_once(list(workers.in_processes(spans, list(range(4)), 2))) == 2


def test_runnable_reads_the_kernels_count_now_less_the_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """procs_running of /proc/stat, averaged, the reading thread itself not counted; the load average
    where there is no /proc/stat."""
    if not os.path.exists("/proc/stat"):
        pytest.skip("no /proc/stat here")
    assert 0.0 <= workers.runnable() < 64 * (os.cpu_count() or 1)
    import builtins

    real_open = builtins.open
    reads = iter([b"cpu 1 2 3\nprocs_running 3\n", b"procs_running 5\n"] * 5)

    def fake_open(path: object, *args: object, **kwargs: object) -> object:
        import io

        return io.BytesIO(next(reads)) if path == "/proc/stat" else real_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(workers, "RUNNABLE_GAP_S", 0.0)
    assert workers.runnable() == pytest.approx((3 + 5 + 3 + 5 + 3) / 5 - 1)

    def no_proc(path: object, *args: object, **kwargs: object) -> object:
        raise FileNotFoundError(path)

    monkeypatch.setattr(builtins, "open", no_proc)
    monkeypatch.setattr(os, "getloadavg", lambda: (2.5, 1.0, 1.0))
    assert workers.runnable() == 2.5


def test_only_the_others_load_takes_cpus_from_brrr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "cpus", lambda: 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    idle(monkeypatch, load=2.0)
    assert workers.at_once(2, 2) == 2  # the runnable threads are brrr's own two items
    assert workers.at_once(2, 0) == 1  # they are others': no CPU free, and still at least one item
    idle(monkeypatch, load=3.0)
    assert workers.at_once(2, 2) == 1  # one more runnable beside brrr's two: it gives one back
    assert workers.at_once(8, 0) == 1
    idle(monkeypatch, load=0.0)
    assert workers.at_once(8, 0) == 2  # never more items at once than CPUs, whatever the jobs
