"""The README's performance table, from one results folder: `brrr bench` (bench.json, and any other
bench*.json: the rows of several bench calls of one session) with the
independent timing (indep.json, gpu_indep.py: triton do_bench, L2 flushed; bwd_indep.json,
benchmarks/bwd_indep.py, the same for the backward alone) beside it, each row
checked against the targets of the GPU performance issue. Rows under target are marked.

usage: python3 benchmarks/perf_table.py benchmarks/results/DATE-h100-perf [LATER ...]
A later folder's rows (a rerun of some ops after a change) replace the same op, dtype and pass of the
earlier ones; a row not from the folder most rows come from says which folder it came from.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SHORT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64"}
PASS = {"forward": "fwd", "backward": "bwd", "forward+backward": "fwd+bwd"}  # in the table's order
INDEP_PASS = {"fwd": "forward", "bwd": "backward", "fwd+bwd": "forward+backward"}
# (op, dtype or None for any, pass) -> fraction of copy the cuda stage must reach; memory-bound rows
# otherwise 90% and at least torch.compile's speed (the "every memory-bound row").
TARGETS = {("layernorm", None, "forward+backward"): 0.80, ("layernorm", None, "backward"): 0.75,
           ("bias_gelu", "bfloat16", "forward"): 0.92, ("bias_gelu", "bfloat16", "forward+backward"): 0.85,
           ("softmax", "bfloat16", "forward+backward"): 0.88}
MEMORY_BOUND = 0.90
# How far brrr's time may sit above torch.compile's in one run and still count as its speed: runs of
# the same code move one kernel's time by up to 0.7% (layernorm float32 forward 69.1-69.6 us in three
# bench runs of 2026-11-30), so a ratio of two by up to about 1.5%. (Runs before bench released the L2
# lines an implementation keeps under evict_last could also favour whatever ran after torch.compile:
# benchmarks/results/2026-11-30-h200-perf-released, l2-residue.txt.)
SAME_RUN_SPREAD = 0.02
# The table has forward and forward+backward rows; its one target for the backward alone is
# layernorm's (TARGETS). Other ops' backward-alone rows are shown without one.
UNTARGETED_PASSES = ("backward",)
# Compute-bound ops: the cuda stage's speed as a fraction of eager's (cuBLAS for the matmuls, torch's
# scaled_dot_product_attention for attention), and the fraction it must reach (None: no target).
COMPUTE_BOUND = {"matmul": (0.80, "cuBLAS"), "matmul_tc": (0.60, "cuBLAS"), "attention": (None, "SDPA")}
# The dtype each compute-bound target is for: the issue asks the float32 matmul (no TF32) for 80% of
# cuBLAS's SGEMM, and the tensor-core one for 60% of cuBLAS in bfloat16. matmul's 16-bit rows (its
# SIMT kernel on widened elements, against cuBLAS on tensor cores) are shown without one.
COMPUTE_BOUND_DTYPE = {"matmul": "float32", "matmul_tc": "bfloat16"}


def target(op: str, dtype: str, pass_: str) -> float | None:
    default = None if pass_ in UNTARGETED_PASSES else MEMORY_BOUND
    return TARGETS.get((op, dtype, pass_), TARGETS.get((op, None, pass_), default))


def rows_by_key(bench: dict) -> dict[tuple[str, str, str], dict[str, dict]]:
    found: dict[tuple[str, str, str], dict[str, dict]] = {}
    for r in bench["rows"]:
        found.setdefault((r["op"], r["dtype"], r["pass_"]), {})[r["impl"]] = r
    return found


def indep_by_key(indep: list[dict]) -> dict[tuple[str, str, str], dict]:
    return {(r["op"], r["dtype"], INDEP_PASS[r["phase"]]): r for r in indep}


def pct(row: dict | None) -> str:
    return f"{100 * row['copy_fraction']:.1f}%" if row and row["ms"] == row["ms"] else "-"


def indep_text(ind: dict) -> str:
    """gpu_indep's brrr and compile times (its own sizes: mul's operands and 16-bit sigmoid differ from
    bench's), or tc_indep's brrr and cuBLAS ones."""
    if "cublas" in ind["ms"]:
        return f"{ind['ms']['brrr'] * 1e3:.0f} us, cuBLAS {ind['ms']['cublas'] * 1e3:.0f} us"
    return ", ".join(f"{ind['ms'][k] * 1e3:.0f} us" for k in ("brrr", "compile") if k in ind["ms"])


def tc_indep_by_key(rows: list[dict]) -> dict[tuple[str, str, str], dict]:
    """benchmarks/tc_indep.py's rows at bench's size (4096^3), keyed as gpu_indep's (rows without a dtype:
    bfloat16, all the script timed before --dtype)."""
    return {("matmul_tc", r.get("dtype", "bfloat16"), INDEP_PASS[r["phase"]]):
            {"ms": {"brrr": r["brrr_ms"], "cublas": r["cublas_ms"]}} for r in rows if r["size"] == [4096, 4096, 4096]}


def bench_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("bench*.json"))


def merged(folders: list[Path]) -> tuple[dict, dict, dict[tuple[str, str, str], str]]:
    """bench rows and indep rows by key over the folders, later ones winning, and each key's folder."""
    bench: dict = {}
    indep: dict = {}
    source: dict[tuple[str, str, str], str] = {}
    for folder in folders:
        rows = {}
        for path in bench_files(folder):
            rows.update(rows_by_key(json.loads(path.read_text())))
        bench.update(rows)
        source.update(dict.fromkeys(rows, folder.name))
        for name in ("indep.json", "bwd_indep.json"):  # gpu_indep.py's, and benchmarks/bwd_indep.py's
            if (folder / name).exists():
                indep.update(indep_by_key(json.loads((folder / name).read_text())))
        tc_path = folder / "tc_indep.json"
        if tc_path.exists():
            indep.update(tc_indep_by_key(json.loads(tc_path.read_text())))
    return bench, indep, source


def table(folders: list[Path]) -> str:
    bench, indep, source = merged(folders)
    main = max(folders, key=lambda f: list(source.values()).count(f.name)).name  # the folder most rows come from
    lines = ["| op, size | dtype | pass | eager | torch.compile | brrr cuda stage | host ms a call | "
             "do_bench, L2 flushed: brrr, compile | target | |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for (op, dtype, pass_), impls in sorted(bench.items(), key=lambda kv: (*kv[0][:2], list(PASS).index(kv[0][2]))):
        cuda, eager, comp = impls.get("cuda"), impls.get("eager"), impls.get("compile")
        if cuda is None:
            continue
        size = cuda["size"].replace(", ", "x").strip("()")
        host = f"{cuda['host_ms']:.3f}" if "host_ms" in cuda else "-"
        ind = indep.get((op, dtype, pass_))
        if op in COMPUTE_BOUND:
            goal, library = COMPUTE_BOUND[op]
            ratio = eager["ms"] / cuda["ms"] if eager else float("nan")
            got = f"{cuda['ms']:.3f} ms, {100 * ratio:.0f}% of {library}"
            # the matmul targets are forward's; forward+backward is shown beside them
            aimed = pass_ == "forward" and dtype == COMPUTE_BOUND_DTYPE.get(op, dtype)
            want = f">= {100 * goal:.0f}% of {library}" if goal is not None and aimed else "-"
            ok = want == "-" or ratio >= goal
            ind_text = indep_text(ind) if ind else "-"
        else:
            goal = target(op, dtype, pass_)
            # At least torch.compile's speed, within 2% (SAME_RUN_SPREAD).
            faster = comp is None or comp["ms"] != comp["ms"] or cuda["ms"] <= comp["ms"] * (1 + SAME_RUN_SPREAD)
            ok = goal is None or (cuda["copy_fraction"] >= goal and faster)
            got = f"{cuda['ms'] * 1e3:.1f} us, {pct(cuda)}"
            if cuda.get("same_copy_fraction", float("nan")) == cuda.get("same_copy_fraction"):  # bench since 2026-11-29
                got += f" ({100 * cuda['same_copy_fraction']:.0f}% of a same-size copy)"
            want = "- (none in the issue)" if goal is None else f">= {100 * goal:.0f}%, >= compile"
            ind_text = indep_text(ind) if ind else "-"
        mark = "" if ok else "**under target**"
        if len(folders) > 1 and source[(op, dtype, pass_)] != main:
            mark = f"{mark} ({source[(op, dtype, pass_)]})".strip()
        lines.append(f"| {op}, {size} | {SHORT.get(dtype, dtype)} | {PASS[pass_]} | {pct(eager)} | {pct(comp)} | {got} | "
                     f"{host} | {ind_text} | {want} | {mark} |")
    return "\n".join(lines)


if __name__ == "__main__":
    given = [Path(a) for a in sys.argv[1:]]
    missing = [str(f / "bench*.json") for f in given if not bench_files(f)]
    if not given or missing:
        sys.exit(f"perf_table.py: {'not found: ' + ', '.join(missing) if missing else 'no results folder given'}\n"
                 "usage: python3 benchmarks/perf_table.py benchmarks/results/DATE-GPU-perf [LATER ...]")
    print(table(given))
