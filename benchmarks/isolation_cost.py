"""What running the op's compiled code in a child process (pipeline/cuda/isolated.py) costs a warm
`brrr validate OP --stage cuda` on the CPU.

    .venv/bin/python benchmarks/isolation_cost.py [--ops sigmoid ...] [--pairs 3] [--out DIR]

Each op is validated once with isolation on and once off (BRRR_CPU_ISOLATION=off: the op's code in
brrr's own process) to warm the build cache, then `--pairs` times more in on/off pairs, the order
alternating from pair to pair, so a change in the machine's load falls on both sides alike. Each
run records its wall time, its CPU time (this script is the runs' subreaper: the forkserver and
the children it forks are reaped here, so their CPU time is counted, which brrr's own rusage
misses) and the load average before and after; a run that compiled (a header changed meanwhile in
a shared tree) is left out of the medians. The machine may be shared: CPU time is the figure
that load disturbs least; wall time is what a user waits. A run's processes that outlive it (an
orphan brrr left behind) are named in the results.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BRRR = [sys.executable, "-m", "brrr_kernels"]
OPS = ("sigmoid", "bias_gelu", "layernorm", "softmax")
MODES = ("on", "off")
_PR_SET_CHILD_SUBREAPER = 36


@dataclass
class Run:
    op: str
    mode: str
    pair: int  # -1: the warm-up
    wall_s: float
    cpu_s: float  # user + system of the run and every process below it
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    exit_code: int
    rows: int
    passed: int
    outlived: list[str] = field(default_factory=list)  # "pid name" of each process that outlived brrr
    build: str = ""  # the compile row's first words: "cached in 1.2s" for a warm run


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap_orphans(wait_s: float = 10.0) -> list[str]:
    """Processes of the run that outlived brrr (reparented to this subreaper): each named, then
    waited for (they end by themselves once brrr has gone, or the run would leave them forever)."""
    named: list[str] = []
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        for pid in _my_children():
            label = f"{pid} {_comm(pid)}"
            if label not in named:
                named.append(label)
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return named
        if pid == 0:
            time.sleep(0.05)
    return named + ["(still running after the wait)"]


def _my_children() -> list[int]:
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return found


def _comm(pid: int) -> str:
    try:
        return " ".join(Path(f"/proc/{pid}/cmdline").read_text().split("\0")[:4]) or Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def run_once(op: str, mode: str, pair: int, scratch: Path) -> Run:
    out = scratch / f"{op}-{mode}-{pair}.json"
    env = {**os.environ, "BRRR_CPU_ISOLATION": mode}
    load_before = os.getloadavg()
    cpu_before = _children_cpu()
    start = time.monotonic()
    proc = subprocess.run([*BRRR, "validate", op, "--stage", "cuda", "--json", str(out)], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    outlived = _reap_orphans()
    cpu = _children_cpu() - cpu_before
    rows = json.loads(out.read_text())["rows"] if out.is_file() else []
    if proc.returncode != 0:
        print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
    build = next((r["detail"].split(";")[0] for r in rows if r["check"] == "compile"), "")
    return Run(op, mode, pair, round(wall, 2), round(cpu, 2), load_before, os.getloadavg(), proc.returncode,
               len(rows), sum(r["verdict"] == "pass" for r in rows), outlived, build)


def summary(runs: list[Run]) -> str:
    lines = ["| op | wall on (s) | wall off (s) | wall on/off | CPU on (s) | CPU off (s) | CPU on/off | load 1-min (min-max) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    # a run that compiled (someone changed a header the build's key holds, on a shared tree) is no warm run
    measured = [r for r in runs if r.pair >= 0 and (not r.build or r.build.startswith("cached"))]
    totals = {m: [0.0, 0.0] for m in MODES}
    for op in dict.fromkeys(r.op for r in measured):
        mine = [r for r in measured if r.op == op]
        wall = {m: statistics.median(r.wall_s for r in mine if r.mode == m) for m in MODES}
        cpu = {m: statistics.median(r.cpu_s for r in mine if r.mode == m) for m in MODES}
        for m in MODES:
            totals[m][0] += wall[m]
            totals[m][1] += cpu[m]
        loads = [x for r in mine for x in (r.load_before[0], r.load_after[0])]
        lines.append(f"| {op} | {wall['on']:.1f} | {wall['off']:.1f} | {wall['on'] / wall['off']:.3f} | {cpu['on']:.1f} | "
                     f"{cpu['off']:.1f} | {cpu['on'] / cpu['off']:.3f} | {min(loads):.1f}-{max(loads):.1f} |")
    (w_on, c_on), (w_off, c_off) = totals["on"], totals["off"]
    lines.append(f"| all (sum of medians) | {w_on:.1f} | {w_off:.1f} | {w_on / w_off:.3f} | {c_on:.1f} | {c_off:.1f} | "
                 f"{c_on / c_off:.3f} | |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", nargs="+", default=list(OPS))
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="folder for results.json and summary.md")
    args = parser.parse_args()
    ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="brrr-isolation-cost-") as scratch:
        for op in args.ops:  # the warm-up: builds cached, torch's files in the page cache
            for mode in MODES:
                runs.append(run_once(op, mode, -1, Path(scratch)))
        for pair in range(args.pairs):
            for op in args.ops:
                for mode in (MODES if pair % 2 == 0 else MODES[::-1]):
                    run = run_once(op, mode, pair, Path(scratch))
                    runs.append(run)
                    print(f"{op:10} {mode:3} pair {pair}: wall {run.wall_s:6.1f} s, CPU {run.cpu_s:6.1f} s, load "
                          f"{run.load_before[0]:.1f} -> {run.load_after[0]:.1f}, exit {run.exit_code}, "
                          f"{run.passed}/{run.rows} pass, {run.build}" + (f", outlived: {run.outlived}" if run.outlived else ""),
                          flush=True)
    table = summary(runs)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        (args.out / "results.json").write_text(json.dumps({"head": head, "cpus": os.cpu_count(),
                                                           "runs": [asdict(r) for r in runs]}, indent=1))
        (args.out / "summary.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
