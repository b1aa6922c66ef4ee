"""Ctrl-C and SIGTERM: brrr and everything it started end within 5 s, exit 130/143, files intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, copy_op, fake_toolkit, plant

from brrr_kernels.base import interrupts

OLD_JSON = '{"old": "report"}\n'
# How long a test waits for something that must happen (a moment to come, brrr to end, a killed
# process to be reaped) before it calls it a hang. Never a measure of speed: on a loaded machine
# (load average 9 on 2 cores) each of these took seconds, and a test that timed them failed there;
# with the suite's two workers beside a mutation run and two more test processes (2026-11-29), the
# slow op's reference stage took over 120 s to reach its compile.
HANG_S = 300.0

# The numba stage's forward announces itself, then every simulated thread waits forever.
SPIN_KERNEL = '''

@cuda.jit
def spin_kernel(x, n):
    while n >= 0:
        time.sleep(0.05)


def forward(x):
    (Path(os.environ["MARKS"]) / "spinning").touch()
    launch(spin_kernel, 1, 4, x.contiguous().view(-1), x.numel())
    return x
'''


def _tagged(tag: str) -> list[int]:
    """Live processes (not zombies) whose environment carries `tag`: brrr and all it started."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if tag.encode() in Path(f"/proc/{entry.name}/environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.fixture(scope="module")
def two_ops(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """Two small sigmoid copies: `spin`'s numba stage never ends; `slow`'s compile never ends."""
    root = tmp_path_factory.mktemp("ops")
    spin = plant(copy_op("sigmoid", root / "a"), "spec.py", 'name="sigmoid"', 'name="spin"')
    plant(spin, "spec.py", "sim_sizes=(1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17)", "sim_sizes=(1, 5)")
    plant(spin, "numba_kernel.py", "import math\n", "import math\nimport os\nimport time\nfrom pathlib import Path\n")
    text = (spin / "numba_kernel.py").read_text()
    (spin / "numba_kernel.py").write_text(text.replace("def forward(", "def unused_forward(") + SPIN_KERNEL)
    slow = plant(copy_op("sigmoid", root / "b"), "spec.py", 'name="sigmoid"', 'name="slow"')
    plant(slow, "spec.py", "sim_sizes=(1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17)", "sim_sizes=(1, 5)")
    plant(slow, "spec.py", '"numba": (torch.float32, torch.float64),', '"numba": (),')  # straight on to compiling
    return spin, slow, root / "cuda"


@dataclass(frozen=True)
class Moment:
    name: str
    ready: Callable[[Path], Callable[[str], bool]]  # marks folder -> (stderr so far -> is it the moment)
    signum: int
    to_group: bool  # to the process group, as a terminal's Ctrl-C (or `timeout -s INT`) sends it
    code: int  # the exit code expected


def _interrupt(tmp_path: Path, cuda: Path, args: list[str], moment: Moment) -> None:
    """Run `brrr ARGS` (validate: with --json out.json), send the signal at the moment, and check how it
    ends: within 5 s, with the code, one line on stderr and no traceback, no process left, the old JSON intact."""
    signum, code = moment.signum, moment.code
    marks = tmp_path / "marks"
    out = tmp_path / "out.json"
    out.write_text(OLD_JSON)
    tag = uuid.uuid4().hex
    env = {**os.environ, **fake_toolkit(cuda, marks, "forever"), "BRRR_CACHE": str(tmp_path / "cache"),
           "BRRR_TEST_TAG": tag}
    err_path = tmp_path / "stderr"
    with open(err_path, "w") as err:
        json_flag = ["--json", str(out)] if args[0] == "validate" else []
        proc = subprocess.Popen([sys.executable, "-m", "brrr_kernels", *args, *json_flag], cwd=tmp_path, env=env,
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        is_ready = moment.ready(marks)
        deadline = time.monotonic() + HANG_S
        while not is_ready(err_path.read_text()):
            assert proc.poll() is None, f"brrr ended before the moment {moment.name!r}:\n{err_path.read_text()}"
            assert time.monotonic() < deadline, f"the moment {moment.name!r} never came:\n{err_path.read_text()}"
            time.sleep(0.05)
        while not _handles_sigterm(proc.pid):  # brrr's handlers are in (before that, Python's own KeyboardInterrupt)
            assert proc.poll() is None and time.monotonic() < deadline, err_path.read_text()
            time.sleep(0.05)
        if moment.name == "in pdb":
            time.sleep(1.0)  # pdb taking over the thread (SIGTERM must end brrr whether it has or not)
        if moment.to_group:
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
        try:
            proc.wait(timeout=HANG_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"brrr still running {HANG_S:.0f} s after {signal.Signals(signum).name} ({moment.name}):\n"
                        f"{err_path.read_text()}")
        deadline = time.monotonic() + HANG_S
        while (left := _tagged(tag)) and time.monotonic() < deadline:  # a killed process is reaped in its time
            time.sleep(0.1)
        assert not left, f"processes survived brrr: {[Path(f'/proc/{p}/cmdline').read_bytes() for p in left]}"
        stderr = err_path.read_text()
        assert proc.returncode == code, stderr
        assert "Traceback" not in stderr, stderr
        assert stderr.rstrip().endswith("brrr: interrupted" if code == 130 else "brrr: terminated (SIGTERM)"), stderr
        assert out.read_text() == OLD_JSON
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.json")] == []
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        _kill_tagged(tag)  # a failed test leaves nothing either: workers have process groups of their own


def _handles_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM: brrr installs its handlers for SIGINT and SIGTERM
    at once, first thing (cli.entry), so from then on a signal gets brrr's answer. A fixed delay
    stood in for this, and on a loaded machine Ctrl-C came while Python was still starting."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def _kill_tagged(tag: str) -> None:
    for pid in _tagged(tag):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _spinning(marks: Path) -> Callable[[str], bool]:
    return lambda err: (marks / "spinning").exists()


def _both_busy(marks: Path) -> Callable[[str], bool]:
    return lambda err: (marks / "spinning").exists() and (marks / "compiles").exists()


MOMENTS = [
    Moment("starting", lambda marks: lambda err: True, signal.SIGINT, False, 130),
    Moment("workers starting", lambda marks: lambda err: "validating 2 ops in 2 processes" in err, signal.SIGINT,
           False, 130),
    Moment("simulating and compiling, Ctrl-C", _both_busy, signal.SIGINT, True, 130),
    Moment("simulating and compiling, SIGTERM", _both_busy, signal.SIGTERM, False, 143),
]


@pytest.mark.parametrize("moment", MOMENTS, ids=[m.name for m in MOMENTS])
def test_interrupt_two_op_validate_with_jobs(tmp_path: Path, two_ops: tuple[Path, Path, Path], moment: Moment) -> None:
    """One op spins in a simulated kernel, the other waits on a compiler that never ends (as brrr
    validate OPDIR1 OPDIR2 --jobs 2 did when Ctrl-C left it hanging, or its workers orphaned)."""
    spin, slow, cuda = two_ops
    _interrupt(tmp_path, cuda, ["validate", str(spin), str(slow), "--jobs", "2", "--stage", "numba", "--stage", "cuda"], moment)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_interrupt_one_op_in_the_simulator(tmp_path: Path, two_ops: tuple[Path, Path, Path], signum: int,
                                           code: int) -> None:
    spin, _, cuda = two_ops
    _interrupt(tmp_path, cuda, ["validate", str(spin), "--stage", "numba"],
               Moment("simulating", _spinning, signum, False, code))


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_interrupt_build_while_compiling(tmp_path: Path, two_ops: tuple[Path, Path, Path], signum: int, code: int) -> None:
    _, slow, cuda = two_ops
    compiling = Moment("compiling", lambda marks: lambda err: (marks / "compiles").exists(), signum, False, code)
    _interrupt(tmp_path, cuda, ["build", str(slow)], compiling)


def test_sigterm_ends_debug_while_pdb_waits(tmp_path: Path, two_ops: tuple[Path, Path, Path]) -> None:
    """In `brrr debug` Ctrl-C belongs to pdb; SIGTERM still ends it."""
    spin, _, cuda = two_ops
    _interrupt(tmp_path, cuda, ["debug", str(spin), "--index", "0"],
               Moment("in pdb", _spinning, signal.SIGTERM, False, 143))


KILL_TREE = """
import os, subprocess, time
from brrr_kernels.base import interrupts
child = subprocess.Popen(["sh", "-c", "sleep 1000 & wait"], start_new_session=True)
while len(interrupts.descendants(os.getpid())) < 2:
    time.sleep(0.02)
print(*interrupts.descendants(os.getpid()), flush=True)
interrupts.kill_descendants()
print(child.wait(timeout=120))
"""


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_kill_descendants_ends_the_whole_tree() -> None:
    """A child with a grandchild, the child in its own process group as a worker is: both end."""
    proc = subprocess.run([sys.executable, "-c", KILL_TREE], capture_output=True, text=True, timeout=HANG_S)
    assert proc.returncode == 0, proc.stderr
    tree, status = proc.stdout.splitlines()
    assert status == str(-signal.SIGKILL)
    pids = [int(p) for p in tree.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + HANG_S
    while any(_alive(p) for p in pids):
        assert time.monotonic() < deadline, "a process of the tree survived"
        time.sleep(0.02)


def test_interrupted_exit_codes() -> None:
    assert interrupts.Interrupted(signal.SIGINT).exit_code == 130
    assert interrupts.Interrupted(signal.SIGTERM).exit_code == 143
    assert isinstance(interrupts.Interrupted(signal.SIGTERM), KeyboardInterrupt)


def test_cli_entry_is_the_console_script() -> None:
    """The handlers are installed by `entry`, which both `brrr` and `python -m brrr_kernels` run."""
    assert "entry()" in (REPO / "pipeline" / "__main__.py").read_text()


def _sleep_forever(_: int) -> None:
    time.sleep(1000)


def _spawned_workers() -> list[int]:
    found = []
    for pid in interrupts.descendants(os.getpid()):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


def test_an_exception_in_the_caller_ends_the_workers() -> None:
    """in_processes kills its workers when the caller's wait ends in an exception (here an alarm's),
    those it started and any it was starting. The alarm goes off once a worker exists: on a busy
    machine the pool starts one worker and waits for a free CPU before the second (at_once), which
    took 11 minutes in CI when this test waited for both."""
    from brrr_kernels.base.workers import in_processes

    seen: set[int] = set()

    def alarm(signum: int, frame: object) -> None:
        seen.update(_spawned_workers())
        if not seen:  # still starting: look again shortly
            signal.setitimer(signal.ITIMER_REAL, 0.2)
            return
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(TimeoutError):
            next(in_processes(_sleep_forever, [1, 2], 2))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    seen.update(_spawned_workers())  # one started between the alarm and the kill is killed too
    assert seen
    deadline = time.monotonic() + HANG_S
    while any(_alive(p) for p in seen):
        assert time.monotonic() < deadline, "a worker survived"
        time.sleep(0.05)


def _outliving(tag: str) -> list[str]:
    """The processes carrying `tag` that are alive (not zombies), each with its command line."""
    found = []
    for pid in _tagged(tag):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # it ended meanwhile
            continue
        if state != "Z":
            found.append(f"{pid} [{Path(f'/proc/{pid}/comm').read_text().strip()}] {command[:160]}")
    return found


def _running_op_code(tag: str) -> bool:
    """Whether a process carrying `tag` is isolated.py's child, running an op's code."""
    for pid in _tagged(tag):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "brrr-cpu-exec":
                return True
        except OSError:
            continue
    return False


@pytest.mark.parametrize("jobs, signum", [(1, None), (2, None), (2, signal.SIGTERM)],
                         ids=["one process", "--jobs 2", "--jobs 2, SIGTERM while an op's code runs"])
def test_no_process_brrr_starts_outlives_a_validate(tmp_path: Path, jobs: int, signum: int | None) -> None:
    """The cuda stage on the CPU (isolated.py's child), a worker pool and its queue (multiprocessing's
    resource tracker): each has ended by the time brrr has, none of them left to end on its own,
    whether brrr ends by itself or by SIGTERM."""
    tag = uuid.uuid4().hex
    env = {**os.environ, "BRRR_TEST_TAG": tag}
    ops = ["sigmoid", "square"][:jobs]
    err_path = tmp_path / "stderr"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "brrr_kernels", "validate", *ops, "--stage", "cuda", "--jobs",
                                 str(jobs)], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)
    try:
        if signum is not None:
            deadline = time.monotonic() + HANG_S
            while not (_running_op_code(tag) and _handles_sigterm(proc.pid)):
                assert proc.poll() is None and time.monotonic() < deadline, err_path.read_text()
                time.sleep(0.05)
            os.kill(proc.pid, signum)
        proc.wait(timeout=900)
        left = _outliving(tag)  # at once: not "in their time", but with brrr
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        _kill_tagged(tag)
    assert proc.returncode == (0 if signum is None else 128 + signum), err_path.read_text()[-3000:]
    assert left == [], f"processes brrr started outlived it: {left}"
