#!/usr/bin/env bash
# One call on a lent GPU machine (issue 29, items 5 and 6): what each place sees of the same bugs.
#  (a) brrr sanitize: every built-in op under compute-sanitizer's four tools;
#  (b) every op's cuda-stage planted bugs (stages/*/bugs/cuda_*.bug, plus guard-band plants: a
#      backward writing one past / one before grad_x) validated --stage cuda on the GPU and executed
#      on the CPU (--cuda-on-cpu) on this machine, and each under compute-sanitizer;
#  (c) brrr mutate --stage cuda for sigmoid and square on the GPU and on the CPU (CUDA_VISIBLE_DEVICES=
#      hides the GPU, so the cuda stage runs on the CPU as on a machine without one).
# Writes $OUT/blindspots.md (the side-by-side tables) beside each run's log and JSON. Under 9 minutes on
# an H100 machine with 16 cores: the three parts run at once, the bugs 8 at a time (a bug
# not reached by then has no result in the table, which says so).
# usage: bash benchmarks/gpu_blindspots.sh   (from the repo root)
source benchmarks/gpu_setup.sh
B="$OUT/blindspots"
mkdir -p "$B/bugs" "$B/mutate"
export BRRR_CPU_WORKERS=2  # each CPU execution may run two blocks at once; several run side by side

timed() {  # timed NAME SECONDS CMD...: log to $B/NAME.txt with exit code and wall time
  local name=$1 limit=$2; shift 2
  local t0=$EPOCHREALTIME
  timeout "$limit" "$@" >> "$B/$name.txt" 2>&1
  local rc=$?
  printf '%s: exit %s, %s s wall\n' "$name" "$rc" "$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))")" \
    | tee -a "$B/$name.txt" >> "$B/summary.txt"
}
export -f timed
export B

# --- the planted bugs, each a copy of its op under $B/ops/<op>--<bug>/<op> --------------------------
python3 - <<'EOF'
import os, shutil
from pathlib import Path
from brrr_kernels.mutate.bug_files import BugError, bugs_of, mutant
from brrr_kernels.op.loaders import BUILTIN_DIR

root = Path(os.environ["B"]) / "ops"
shutil.rmtree(root, ignore_errors=True)
made = []
for op in sorted(p for p in BUILTIN_DIR.iterdir() if (p / "spec.py").is_file()):
    for name, bug in bugs_of(op).items():
        if all(c.file in ("kernel.cu", "binding.cpp") for c in bug.changes):
            try:
                made.append(mutant(op, name, root / f"{op.name}--{name}"))
            except BugError as e:  # the kernel moved on and the bug file did not: said, not hidden
                print(f"not planted: {e}")
# guard-band plants (the held-out bug the GPU passed): one past the end of grad_x, and one before it
tail = "for (int64_t i = base; i < n; ++i) grad_x[i] = sigmoid_grad(grad_y[i], y[i]);"
for name, new in (("guard_one_past_end", tail.replace("i < n", "i <= n")),
                  ("guard_before_start", tail.replace("grad_x[i]", "grad_x[i - 401]"))):
    dest = root / f"sigmoid--{name}" / "sigmoid"
    shutil.copytree(BUILTIN_DIR / "sigmoid", dest, ignore=shutil.ignore_patterns("__pycache__", "bugs"))
    kernel = dest / "kernel.cu"
    kernel.write_text(kernel.read_text().replace(tail, new))
    made.append(dest)
Path(os.environ["B"], "bug_folders.txt").write_text("".join(f"{p}\n" for p in made))
print(len(made), "planted bugs")
EOF

one_bug() {  # one planted bug: GPU verdict, CPU verdict, compute-sanitizer's four tools
  local folder=$1 key; key=$(basename "$(dirname "$folder")")
  timed "bugs/$key.gpu" 100 python3 -m brrr_kernels validate "$folder" --stage cuda --seed 29 --json "$B/bugs/$key.gpu.json"
  timed "bugs/$key.cpu" 180 python3 -m brrr_kernels validate "$folder" --stage cuda --cuda-on-cpu --seed 29 --json "$B/bugs/$key.cpu.json"
  timed "bugs/$key.sanitize" 120 python3 -m brrr_kernels sanitize "$folder" --json "$B/bugs/$key.sanitize.json"
}
export -f one_bug

# --- the three parts at once ------------------------------------------------------------------------
timed sanitize_ops 420 python3 -m brrr_kernels sanitize --json "$B/sanitize_ops.json" &
for op in sigmoid square; do
  timed "mutate/$op.gpu" 300 python3 -m brrr_kernels mutate "$op" --stage cuda --seed 29 --jobs 2 --json "$B/mutate/$op.gpu.json" &
  CUDA_VISIBLE_DEVICES= timed "mutate/$op.cpu" 300 python3 -m brrr_kernels mutate "$op" --stage cuda --seed 29 --jobs 2 \
    --json "$B/mutate/$op.cpu.json" &
done
timeout 450 xargs -P 8 -I{} bash -c 'one_bug "$@"' _ {} < "$B/bug_folders.txt"
wait

# --- the tables -------------------------------------------------------------------------------------
python3 - <<'EOF' | tee "$OUT/blindspots.md"
import json, os
from pathlib import Path

B = Path(os.environ["B"])

def load(path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None

def verdict(path):
    """FAIL/pass and the first reason of the first failing row, from a validate --json."""
    data = load(path)
    if data is None:
        return "no result (see log)"
    rows = data.get("rows", data) if isinstance(data, dict) else data
    bad = [r for r in rows if r.get("verdict") == "FAIL"]
    if not bad:
        return "pass"
    r = bad[0]
    why = (r.get("detail") or "").splitlines()[0][:150].replace("|", "/")
    return f"FAIL {r.get('check')} {r.get('dtype')}: {why}"

def sanitized(path):
    data = load(path)
    if not data:
        return "no result (see log)"
    parts = []
    for f in data:
        n = f.get("errors", -1)
        parts.append(f"{f['tool']} {'not run' if n < 0 else n}" + (f" ({f['first'][0][:80]})" if n > 0 and f.get("first") else ""))
    return "; ".join(parts).replace("|", "/")

env = (Path(os.environ.get("OUT", ".")) / "env.txt")
print("# Blind spots: GPU, CPU execution and compute-sanitizer on the same bugs\n")
print("```\n" + (env.read_text() if env.is_file() else "") + "```\n")
print("## compute-sanitizer over the built-in ops\n\n| op | tool | errors |\n| --- | --- | --- |")
for f in load(B / "sanitize_ops.json") or []:
    print(f"| {f['op']} | {f['tool']} | {f['errors']} |")
print("\n## Planted cuda-stage bugs\n\n| op -- bug | GPU (validate --stage cuda) | CPU execution (--cuda-on-cpu) | compute-sanitizer |")
print("| --- | --- | --- | --- |")
for folder in (B / "bug_folders.txt").read_text().split():
    key = Path(folder).parent.name
    print(f"| {key} | {verdict(B / 'bugs' / f'{key}.gpu.json')} | {verdict(B / 'bugs' / f'{key}.cpu.json')} "
          f"| {sanitized(B / 'bugs' / f'{key}.sanitize.json')} |")
print("\n## brrr mutate --stage cuda\n\n| op | mutant | GPU | CPU execution |\n| --- | --- | --- | --- |")
for op in ("sigmoid", "square"):
    gpu, cpu = load(B / "mutate" / f"{op}.gpu.json") or {}, load(B / "mutate" / f"{op}.cpu.json") or {}
    print(f"| {op} | score | {gpu.get('score', 'no result')} | {cpu.get('score', 'no result')} |")
    by = lambda d: {(m.get("kind"), m.get("diff", "")): m for m in d.get("mutants", [])}
    g, c = by(gpu), by(cpu)
    for key in sorted(set(g) | set(c), key=str):
        vg, vc = g.get(key, {}).get("verdict", "-"), c.get(key, {}).get("verdict", "-")
        if vg != vc:  # only where the two places disagree
            diff = " ".join(str(key[1]).split())[:90].replace("|", "/")
            print(f"| {op} | {key[0]}: `{diff}` | {vg} | {vc} |")
print("\n## Wall times\n\n```\n" + (B / "summary.txt").read_text() + "```")
EOF
# What comes back from a lent machine is a few files: the logs and JSON as one archive.
tar czf "$OUT/blindspots-logs.tgz" -C "$OUT" blindspots && rm -rf "$OUT/blindspots"
