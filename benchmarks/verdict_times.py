"""How long brrr's verdicts take, where the time goes, and how many threads each process runs.

    .venv/bin/python benchmarks/verdict_times.py [--only NAME ...] [--beside] [--tests] [--out DIR]

Each measurement is a `brrr` command in a new process, the build cache as the machine has it
(run once first for a warm cache). For each it records the wall time, the load average before and
after (the machine may be shared: compare ratios taken in the same run, not absolute times across
runs), the CPU time of the command and every process below it that was waited for (user + sys,
from wait4: a measure load does not stretch as it stretches wall time), the time the report's rows
give to the build, to each check, to the spread under rounding and to saving a failing case's inputs
(`--json` rows: `seconds`, extras `spread_s`, `save_s`), and the threads of the command's processes
(sampled from /proc every 0.2 s): the most held at once, and the most and the average of those
runnable at once (state R). Held threads overstate what competes for the cores: the numba
simulator holds a Python thread per GPU thread of a block, and they take turns, one runnable at a time.

Measurements (--only picks some):
  ops          `brrr validate` of the seven ops, all stages, then of every built-in op
  row          `brrr validate examples/rmsnorm_shuffle --stage cuda`: RMS normalization, 3x70001 among its sizes
  sigmoid      a copy of sigmoid, cuda stage, clean and with its last element unwritten (bugs/cuda_last_element.bug)
  bias_gelu    a copy of bias_gelu, cuda stage, clean and with GELU's constant 0.044715 as 0.044725
  mutate       `brrr mutate sigmoid --stage cuda`: seconds per mutant
  tests        the README's test command, with --durations (only with --tests: it is long)
--beside runs each measurement a second time beside a parallel `brrr validate` of every op,
restarted until the measurement ends, and gives the ratio to the first.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BRRR = [sys.executable, "-m", "brrr_kernels"]
ROW_OP = ROOT / "examples" / "rmsnorm_shuffle"
# The seven ops; the library has grown since (matmul_tc, attention: "every built-in op").
SEVEN = ("sigmoid", "mul", "square", "bias_gelu", "softmax", "layernorm", "matmul")
# The README's test command (Quick start, second command) after the install.
TEST_COMMAND = [sys.executable, "-m", "pytest", "-n", "auto", "-q", "--durations=40"]


@dataclass
class Measured:
    name: str
    command: list[str]
    wall_s: float
    exit_code: int
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    threads_max: int  # threads of all the command's processes at once, at most
    threads_per_process: dict[str, int] = field(default_factory=dict)  # the most each process (pid: name) held
    processes_max: int = 0
    runnable_max: int = 0  # threads in state R (running or waiting for a core) at once, at most
    runnable_mean: float = 0.0  # and on average over the samples
    cpu_s: float = 0.0  # user + sys of the command and the processes below it it waited for
    build_s: float = 0.0
    spread_s: float = 0.0
    save_s: float = 0.0
    checks: dict[str, float] = field(default_factory=dict)  # "op stage check dtype": seconds
    extra: dict[str, float | str] = field(default_factory=dict)
    failing: list[str] = field(default_factory=list)  # each failing row and the first line of why


def _children(pid: int) -> list[int]:
    """pid and every process below it, from /proc."""
    parent: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parent.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += parent.get(p, [])
    return found


def _threads(pid: int) -> tuple[int, str]:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0, ""
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    return int(fields.get("Threads", "0")), fields.get("Name", "").strip()


def _runnable(pid: int) -> int:
    """Threads of `pid` in state R: running, or ready and waiting for a core."""
    count = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            count += Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()[0] == "R"
        except (OSError, IndexError):
            continue
    return count


def run(name: str, command: list[str], cwd: Path = ROOT, json_out: Path | None = None) -> Measured:
    """Run `command`, sampling its processes' threads; the rows of `json_out` (brrr --json) give the breakdown."""
    load_before = os.getloadavg()
    start = time.monotonic()
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    threads_max, processes_max = 0, 0
    per: dict[str, int] = {}
    runnable: list[int] = []
    stderr: list[str] = []
    import threading

    reader = threading.Thread(target=lambda: stderr.extend(proc.stderr or []), daemon=True)
    reader.start()
    while True:
        # wait4 rather than poll(): the exit's resource usage covers the whole tree brrr waited for.
        pid_done, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid_done == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            break
        total, pids = 0, _children(proc.pid)
        runnable.append(sum(_runnable(pid) for pid in pids))
        for pid in pids:
            n, pname = _threads(pid)
            total += n
            key = f"{pid} {pname}"
            per[key] = max(per.get(key, 0), n)
        threads_max, processes_max = max(threads_max, total), max(processes_max, len(pids))
        time.sleep(0.2)
    wall = time.monotonic() - start
    reader.join(timeout=5)
    m = Measured(name, [str(c) for c in command], round(wall, 2), proc.returncode, load_before, os.getloadavg(),
                 threads_max, per, processes_max, max(runnable, default=0),
                 round(sum(runnable) / max(1, len(runnable)), 2), round(usage.ru_utime + usage.ru_stime, 2))
    if proc.returncode not in (0, 1):
        m.extra["stderr_tail"] = "".join(stderr[-20:])
    if json_out is not None and json_out.is_file():
        _breakdown(m, json.loads(json_out.read_text()))
    return m


def _breakdown(m: Measured, report: dict) -> None:
    # A forward row and the backward row paired with it share one time window: count it once.
    seen: set[tuple[str, str, float]] = set()
    for row in report.get("rows", []):
        key = f"{row['op']} {row['stage']} {row['check']} {row['dtype']}"
        m.checks[key] = round(row["seconds"], 2)
        if row["check"] == "compile":
            m.build_s += row["seconds"]
        extras = row.get("extras", {})
        window = (row["op"], row["dtype"], round(row["seconds"], 3))
        if window not in seen:
            seen.add(window)
            m.spread_s += extras.get("spread_s", 0.0)
        m.save_s += extras.get("save_s", 0.0)
    m.build_s, m.spread_s, m.save_s = round(m.build_s, 2), round(m.spread_s, 2), round(m.save_s, 2)
    failing = [r for r in report.get("rows", []) if r["verdict"] == "FAIL"]
    m.extra["failed_rows"] = len(failing)
    m.failing = [f"{r['op']} {r['stage']} {r['check']} {r['dtype']}: {(r.get('detail') or '').splitlines()[0][:300]}"
                 for r in failing if r.get("detail")][:40]


def validate(name: str, targets: list[str], stages: tuple[str, ...], tmp: Path) -> Measured:
    out = tmp / f"{name}.json"
    command = [*BRRR, "validate", *targets, "--quiet", "--seed", "1", "--json", str(out)]
    command += [a for s in stages for a in ("--stage", s)]
    return run(name, command, json_out=out)


def stages() -> Path:
    """The built-in ops of the brrr_kernels this runs (PYTHONPATH may point at another version's)."""
    import brrr_kernels.stages

    return Path(brrr_kernels.stages.__file__).parent


def copy_of(op: str, tmp: Path, edit: Callable[[Path], None] | None, label: str) -> Path:
    folder = tmp / label / op
    shutil.copytree(stages() / op, folder, ignore=shutil.ignore_patterns("__pycache__"))
    if edit is not None:
        edit(folder)
    return folder


def unwritten_last(folder: Path) -> None:
    from brrr_kernels.mutate.bug_files import apply_bug, read_bug

    apply_bug(read_bug(stages() / "sigmoid" / "bugs" / "cuda_last_element.bug"), folder)


def wrong_gelu_constant(folder: Path) -> None:
    kernel = folder / "kernel.cu"
    text = kernel.read_text()
    assert text.count("0.044715;") == 1, "bias_gelu's kernel.cu no longer spells its constant 0.044715"
    kernel.write_text(text.replace("0.044715;", "0.044725;"))


def failing_pair(op: str, edit: Callable[[Path], None], tmp: Path) -> list[Measured]:
    clean = validate(f"{op} clean copy", [str(copy_of(op, tmp, None, "clean"))], ("cuda",), tmp)
    bad = validate(f"{op} failing copy", [str(copy_of(op, tmp, edit, "failing"))], ("cuda",), tmp)
    bad.extra["x_clean"] = round(bad.wall_s / clean.wall_s, 2)
    return [clean, bad]


def mutate(tmp: Path) -> list[Measured]:
    out = tmp / "mutate.json"
    m = run("mutate sigmoid --stage cuda", [*BRRR, "mutate", "sigmoid", "--stage", "cuda", "--seed", "1",
                                            "--json", str(out)])
    if out.is_file():
        report = json.loads(out.read_text())
        m.extra |= {"mutants": report["mutants"], "score": report["score"], "killed": report["killed"],
                    "s_per_mutant": round(m.wall_s / max(1, report["mutants"]), 2),
                    "cpu_s_per_mutant": round(m.cpu_s / max(1, report["mutants"]), 2),
                    "hangs": sum(r["reason"].startswith("ran past") for r in report["results"])}
    return [m]


def tests(tmp: Path) -> list[Measured]:
    log = tmp / "tests.log"
    command = ["sh", "-c", f"exec {' '.join(TEST_COMMAND)} > {log} 2>&1"]
    m = run("test suite", command)
    text = log.read_text() if log.is_file() else ""
    m.extra["summary"] = text.strip().splitlines()[-1] if text.strip() else ""
    m.extra["durations"] = "\n".join(ln for ln in text.splitlines() if ln[:1].isdigit() and "s " in ln)[:20000]
    return [m]


MEASUREMENTS: dict[str, Callable[[Path], list[Measured]]] = {
    "ops": lambda tmp: [validate("seven ops, all stages", list(SEVEN), (), tmp),
                        validate("every built-in op, all stages", [], (), tmp)],
    "row": lambda tmp: [validate("rmsnorm_shuffle 3x70001, cuda stage", [str(ROW_OP)], ("cuda",), tmp)],
    "sigmoid": lambda tmp: failing_pair("sigmoid", unwritten_last, tmp),
    "bias_gelu": lambda tmp: failing_pair("bias_gelu", wrong_gelu_constant, tmp),
    "mutate": mutate,
}


class Beside:
    """A parallel `brrr validate` of every op, started again each time it ends, until stopped."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.stopped = False
        self.runs = 0

    def __enter__(self) -> Beside:
        import threading

        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()
        time.sleep(3)
        return self

    def _loop(self) -> None:
        while not self.stopped:
            self.proc = subprocess.Popen([*BRRR, "validate", "--quiet", "--seed", "2"], cwd=ROOT,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            self.proc.wait()
            self.runs += 1

    def __exit__(self, *exc: object) -> None:
        self.stopped = True
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: the validate and its workers
            self.proc.wait()
        self.thread.join(timeout=10)


def machine() -> dict[str, str | int]:
    import torch

    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    import brrr_kernels

    return {"brrr_kernels": str(Path(brrr_kernels.__file__).parent), "cpu": cpu, "cpus": os.cpu_count() or 0,
            "affinity": len(os.sched_getaffinity(0)),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none",
            "python": platform.python_version(), "torch": torch.__version__,
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                     text=True).stdout.strip()}


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def show(m: Measured, idle: Measured | None = None) -> str:
    ratio = f"  x{m.wall_s / idle.wall_s:.2f} of idle" if idle else ""
    extra = "  ".join(f"{k}={v}" for k, v in m.extra.items() if k not in ("durations", "stderr_tail"))
    return (f"{m.name:34s} {m.wall_s:8.1f}s  cpu {m.cpu_s:6.1f}s  exit {m.exit_code}  "
            f"load {m.load_before[0]:.1f}->{m.load_after[0]:.1f}  "
            f"build {m.build_s:.1f}s spread {m.spread_s:.1f}s save {m.save_s:.1f}s  threads<= {m.threads_max} "
            f"in {m.processes_max} processes, runnable<= {m.runnable_max} (mean {m.runnable_mean:.1f}){ratio}  {extra}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=sorted(MEASUREMENTS), help="measure only these")
    parser.add_argument("--beside", action="store_true", help="each again beside a parallel brrr validate of all ops")
    parser.add_argument("--tests", action="store_true", help="also the test suite (long)")
    parser.add_argument("--out", type=Path, help="write results.json and results.txt here")
    args = parser.parse_args()
    names = args.only or list(MEASUREMENTS)
    chosen = {n: MEASUREMENTS[n] for n in names} | ({"tests": tests} if args.tests else {})
    results: dict[str, list[dict]] = {"idle": [], "beside": []}
    lines = [f"machine: {json.dumps(machine())}", f"uptime: {uptime()}"]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory(prefix="brrr-verdict-times-") as tmp_name:
        tmp = Path(tmp_name)
        idle_of: dict[str, Measured] = {}
        for name, measure in chosen.items():
            for m in measure(tmp / "idle" / name):
                idle_of[m.name] = m
                results["idle"].append(asdict(m))
                lines.append("idle   " + show(m))
                print(lines[-1], flush=True)
        if args.beside:
            for name, measure in chosen.items():
                with Beside():
                    found = measure(tmp / "beside" / name)
                for m in found:
                    results["beside"].append(asdict(m) | {"x_idle": round(m.wall_s / idle_of[m.name].wall_s, 2)})
                    lines.append("beside " + show(m, idle_of.get(m.name)))
                    print(lines[-1], flush=True)
    lines.append(f"uptime: {uptime()}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps({"machine": machine(), **results}, indent=2))
        (args.out / "results.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
