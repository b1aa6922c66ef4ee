"""Where the test suite's time goes, from the lines BRRR_TEST_TIMES=FILE makes tests/conftest.py write
(one a test: wall seconds, CPU seconds of the worker's whole process tree, the load average after):

    BRRR_TEST_TIMES=/tmp/times.jsonl python -m pytest -n auto
    python benchmarks/test_times.py /tmp/times.jsonl [--top N]

CPU time is the figure to compare between runs on a shared machine: wall time there grows with the
neighbours' load, CPU time with the work the tests do. On an idle machine with W workers the suite
takes at least its CPU seconds / W.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def summary(lines: list[dict[str, float | str]], top: int) -> str:
    cpu = sum(float(r["cpu_s"]) for r in lines)
    wall = sum(float(r["wall_s"]) for r in lines)
    load = sum(float(r["load"]) for r in lines) / max(1, len(lines))
    out = [f"{len(lines)} tests: {cpu:.0f} s CPU, {wall:.0f} s wall summed over workers, mean load {load:.1f}"]
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for r in lines:
        f = by_file[str(r["test"]).split("::")[0]]
        f[0] += float(r["cpu_s"])
        f[1] += float(r["wall_s"])
        f[2] += 1
    out.append(f"\n{'CPU s':>8} {'wall s':>8} {'tests':>5}  file")
    for name, (c, w, n) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:top]:
        out.append(f"{c:8.1f} {w:8.1f} {int(n):5d}  {name}")
    out.append(f"\n{'CPU s':>8} {'wall s':>8} {'load':>5}  test")
    for r in sorted(lines, key=lambda r: -float(r["cpu_s"]))[:top]:
        out.append(f"{float(r['cpu_s']):8.1f} {float(r['wall_s']):8.1f} {float(r['load']):5.1f}  {r['test']}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    lines = [json.loads(line) for line in args.file.read_text().splitlines() if line.strip()]
    print(summary(lines, args.top))


if __name__ == "__main__":
    main()
