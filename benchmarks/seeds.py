"""False failures over many seeds: validate every built-in op with seeds 0..N-1 and count failing rows.

A correct op must pass with any seed; a row that fails for some seed means a bound too tight (or a
real bug the other seeds missed). Each seed is one `brrr validate --json` run; the summary gives,
per row, how many seeds failed it and the worst "of bound" (error over bound, the verdict's number)
any seed reached.

    python benchmarks/seeds.py --seeds 20 --stage reference --stage numba > benchmarks/results/DATE-seeds/summary.txt
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ops", nargs="*", help="default: every built-in op")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first", type=int, default=0, help="first seed (default 0)")
    parser.add_argument("--stage", action="append", choices=("reference", "numba", "cuda"))
    args = parser.parse_args()
    stages = [f"--stage={s}" for s in args.stage or ()]
    rows: dict[tuple[str, ...], dict] = {}
    failures = 0
    for seed in range(args.first, args.first + args.seeds):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "rows.json"
            start = time.monotonic()
            run = subprocess.run([sys.executable, "-m", "brrr_kernels", "validate", *args.ops, *stages, "--quiet",
                                  f"--seed={seed}", f"--json={out}"], capture_output=True, text=True)
            if not out.exists():
                print(f"seed {seed}: exit {run.returncode}, no JSON\n{run.stderr[-2000:]}", flush=True)
                return 2
            data = json.loads(out.read_text())
        failed = [r for r in data["rows"] if r["verdict"] == "FAIL"]
        failures += len(failed)
        print(f"seed {seed}: exit {run.returncode}, {len(data['rows'])} rows, {len(failed)} failed "
              f"({time.monotonic() - start:.0f}s)", flush=True)
        for r in failed:
            print(f"    FAIL {r['op']} {r['stage']} {r['check']} {r['dtype']}: {r['detail'].splitlines()[0][:200]}")
        for r in data["rows"]:
            key = (r["op"], r["stage"], r["check"], r["dtype"])
            s = rows.setdefault(key, {"runs": 0, "failed": 0, "of_bound": 0.0, "verdicts": set()})
            s["runs"] += 1
            s["failed"] += r["verdict"] == "FAIL"
            s["verdicts"].add(r["verdict"])
            bound = r.get("of_bound")
            if isinstance(bound, (int, float)):
                s["of_bound"] = max(s["of_bound"], bound)
    print(f"\n{'op':10s} {'stage':9s} {'check':22s} {'dtype':8s} {'runs':>4s} {'failed':>6s} {'worst of bound':>14s}  verdicts")
    for (op, stage, check, dtype), s in sorted(rows.items()):
        print(f"{op:10s} {stage:9s} {check:22s} {dtype:8s} {s['runs']:4d} {s['failed']:6d} {s['of_bound']:14.3g}  "
              f"{', '.join(sorted(s['verdicts']))}")
    print(f"\n{args.seeds} seeds, {len(rows)} distinct rows, {failures} failed rows in all")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
