"""The planted bugs of benchmarks/gpu_blindspots.sh, and its side-by-side tables.

    python3 benchmarks/blindspots_table.py plant DIR            # copies with each bug planted; prints their folders
    python3 benchmarks/blindspots_table.py sanitize-picks FILE  # one planted folder of each bug class, from plant's list
    python3 benchmarks/blindspots_table.py table DIR PART       # markdown: each bug's verdict in each place
                                                                # (DIR may hold several calls' results merged)

A bug is planted when every change it makes is in kernel.cu or binding.cpp (the cuda stage alone).
Three more plants reach what no bug file does: a backward loop one past the end of grad_x (the
held-out bug a GPU passed), a write 401 elements before its start, and a read of grad_x before the
kernel writes it (what compute-sanitizer's initcheck looks for).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from brrr_kernels.mutate.bug_files import BugError, bugs_of, mutant
from brrr_kernels.op.loaders import BUILTIN_DIR

SIGMOID_TAIL = "for (int64_t i = base; i < n; ++i) grad_x[i] = sigmoid_grad(grad_y[i], y[i]);"
EXTRA_PLANTS = {  # name: (class, the tail line as planted)
    "guard_one_past_end": ("out of bounds", SIGMOID_TAIL.replace("i < n", "i <= n")),
    "guard_before_start": ("out of bounds", SIGMOID_TAIL.replace("grad_x[i] =", "grad_x[i - 401] =")),
    "uninitialized_read": ("uninitialized read", SIGMOID_TAIL.replace("y[i]);", "y[i] + grad_x[i] - grad_x[i]);")),
}
# One plant of each class for compute-sanitizer (each of its four tools is a run of its own).
SANITIZE_PICKS = {
    "sigmoid--guard_one_past_end": "out of bounds (after the end)",
    "sigmoid--guard_before_start": "out of bounds (before the start)",
    "matmul_tc--cuda_copy_past_the_edge": "out of bounds (async copy)",
    "sigmoid--uninitialized_read": "uninitialized read",
    "layernorm--cuda_no_barrier_before_fold": "race (shared memory)",
    "softmax--cuda_barrier_in_branch": "barrier divergence",
}
TOOL_OF_CLASS = {"out of bounds": "memcheck", "uninitialized read": "initcheck", "race": "racecheck",
                 "barrier divergence": "synccheck"}
MUTATED_OPS = ("sigmoid", "square")


def plant(root: Path) -> list[Path]:
    shutil.rmtree(root, ignore_errors=True)
    made = []
    for op in sorted(p for p in BUILTIN_DIR.iterdir() if (p / "spec.py").is_file()):
        for name, bug in bugs_of(op).items():
            if all(c.file in ("kernel.cu", "binding.cpp") for c in bug.changes):
                try:
                    made.append(mutant(op, name, root / f"{op.name}--{name}"))
                except BugError as e:  # the kernel moved on and the bug file did not: said, not hidden
                    print(f"not planted: {e}", file=sys.stderr)
    for name, (_, line) in EXTRA_PLANTS.items():
        dest = root / f"sigmoid--{name}" / "sigmoid"
        shutil.copytree(BUILTIN_DIR / "sigmoid", dest, ignore=shutil.ignore_patterns("__pycache__", "bugs"))
        kernel = dest / "kernel.cu"
        text = kernel.read_text()
        if text.count(SIGMOID_TAIL) != 1:
            print(f"not planted: {name}: sigmoid's kernel.cu no longer has its tail loop", file=sys.stderr)
            continue
        kernel.write_text(text.replace(SIGMOID_TAIL, line))
        made.append(dest)
    return made


def load(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def exits(b: Path) -> dict[str, tuple[int, float]]:
    """Each timed step's exit code and wall seconds from the summary files in b (summary*.txt, read in
    name order, a later line for the same step replacing an earlier: several calls' results merged)."""
    found = {}
    for summary in sorted(b.glob("summary*.txt")):
        for line in summary.read_text().splitlines():
            name, _, rest = line.partition(": exit ")
            if rest:
                code, _, wall = rest.partition(", ")
                found[name] = (int(code), float(wall.split()[0]))
    return found


def verdict(path: Path, exit_of: tuple[int, float] | None = None) -> str:
    """pass, or FAIL with the first failing row's check and the first line of why, from a validate --json;
    without one, what the step's exit code says."""
    data = load(path)
    if data is None and exit_of is not None:
        code, wall = exit_of
        return {0: "pass (exit 0; rows not kept)", 1: "FAIL (exit 1; rows not kept)",
                124: f"no verdict within its limit ({wall:.0f} s)"}.get(code, f"error (exit {code}; see log)")
    if data is None:
        return "no result (see log)"
    bad = [r for r in data.get("rows", []) if r.get("verdict") == "FAIL"]
    if not bad:
        return f"pass ({len(data.get('rows', []))} rows)"
    r = bad[0]
    why = (r.get("detail") or "").strip().splitlines()[0][:140] if r.get("detail") else ""
    return cell(f"FAIL ({len(bad)} rows) {r.get('check')} {r.get('dtype')}: {why}")


def sanitized(path: Path) -> str:
    data = load(path)
    if not data:
        return "no result (see log)"
    parts = []
    for f in data:
        n = f.get("errors", -1)
        first = f" ({f['first'][0][:70]})" if n > 0 and f.get("first") else ""
        parts.append(f"{f['tool']} {'not reached' if n < 0 else n}{first}")
    return cell("; ".join(parts))


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "/")


def bug_table(b: Path) -> list[str]:
    lines = ["| op -- bug | GPU (validate --stage cuda) | CPU execution (same machine, no GPU) |", "| --- | --- | --- |"]
    steps = exits(b)
    for folder in (b / "bug_folders.txt").read_text().split():
        key = Path(folder).parent.name
        gpu, cpu = (verdict(b / "bugs" / f"{key}.{side}.json", steps.get(f"bugs/{key}.{side}")) for side in ("gpu", "cpu"))
        lines.append(f"| {key} | {gpu} | {cpu} |")
    return lines


def ops_table(b: Path) -> list[str]:
    lines = ["", "## compute-sanitizer over the built-in ops", "",
             "| op | tool | errors | seconds |", "| --- | --- | --- | --- |"]
    for f in load(b / "sanitize_ops.json") or []:
        lines.append(f"| {f['op']} | {f['tool']} | {f['errors']} | {f.get('seconds', 0):.1f} |")
    lines += ["", "## compute-sanitizer on one plant of each class", "",
              "| op -- bug | class | compute-sanitizer (errors per tool) |", "| --- | --- | --- |"]
    for key, kind in SANITIZE_PICKS.items():
        lines.append(f"| {key} | {kind} | {sanitized(b / 'bugs' / f'{key}.sanitize.json')} |")
    lines += ["", "## brrr mutate --stage cuda: GPU against CPU execution", "",
              "| op | mutant | GPU | CPU execution |", "| --- | --- | --- | --- |"]
    for op in MUTATED_OPS:
        gpu, cpu = load(b / "mutate" / f"{op}.gpu.json") or {}, load(b / "mutate" / f"{op}.cpu.json") or {}
        score = lambda d: f"{d['score']:.2f} of {d['mutants']}" if "score" in d else "no result (see log)"  # noqa: E731
        lines.append(f"| {op} | score | {score(gpu)} | {score(cpu)} |")
        g = {r["key"]: r for r in gpu.get("results", [])}
        c = {r["key"]: r for r in cpu.get("results", [])}
        for key in sorted(set(g) | set(c)):
            vg, vc = g.get(key, {}).get("verdict", "not run"), c.get(key, {}).get("verdict", "not run")
            if vg != vc:  # only where the two places disagree
                why = cell(f"GPU: {g.get(key, {}).get('reason', '')[:80]} / CPU: {c.get(key, {}).get('reason', '')[:80]}")
                lines.append(f"| {op} | `{cell(key)[:70]}` | {vg} | {vc} ({why}) |")
    return lines


def table(b: Path, part: str) -> str:
    out = Path(b).parent
    env = out / "env.txt"
    head = ["# What each place sees of the same bugs (issue 29, items 5 and 6)", "",
            "```", env.read_text().strip() if env.is_file() else "(no env.txt)", "```", ""]
    body = (bug_table(b) if (b / "bug_folders.txt").is_file() else []) + ops_table(b)
    walls = "\n".join(summary.read_text().strip() for summary in sorted(b.glob("summary*.txt")))
    tail = ["", "## Wall times", "", "```", walls, "```"]
    return "\n".join(head + body + tail)


def main(argv: list[str]) -> int:
    what, arg = argv[0], Path(argv[1])
    if what == "plant":
        print("\n".join(str(p) for p in plant(arg)))
    elif what == "tool-of":  # the compute-sanitizer tool for a plant's class: the --tool argument
        kind = SANITIZE_PICKS[str(arg)]
        print(f"--tool {next(tool for name, tool in TOOL_OF_CLASS.items() if kind.startswith(name))}")
    elif what == "sanitize-picks":
        folders = arg.read_text().split()
        print("\n".join(f for f in folders if Path(f).parent.name in SANITIZE_PICKS))
    else:
        print(table(arg, argv[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
