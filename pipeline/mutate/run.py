"""`brrr mutate OP`: plant each standard bug in one stage of an op, validate every mutant, report the survivors.

The numba stage (numba_kernel.py, mutated through its syntax tree) runs anywhere, in the simulator;
the cuda stage (kernel.cu, mutated through its tokens) where it can run: on a GPU.

A mutant validation kills is a bug the op's sizes, edge cases and checks catch. One that survives
is either equivalent (its outputs, gradients and inputs are bit for bit the original's on every
case validation uses and on more random draws: brrr cannot see a difference), explained (the op's
spec says why it survives, under its key in `OpSpec.mutants`), or a gap in the op's tests, shown
with its diff. Mutants run in parallel worker processes; one that runs past the time limit is
killed and counted as caught (a hang is as visible as a failure).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from ..base import workers
from ..base.errors import EXIT_CHECK_FAILED, EXIT_OK, BrrrError, CheckFailed, OpLoadError, UsageError
from ..base.workers import Lost, Pool
from ..op.names import STAGE_FILES
from ..op.tolerances import SPREAD
from .probe import probe
from .standard_bugs import Kind, Mutant, cuda_mutants, known_bugs, python_mutants

FILES = {stage: STAGE_FILES[stage] for stage in ("numba", "cuda")}  # the files brrr mutate plants bugs in


class Verdict(str, Enum):
    KILLED = "killed"
    SURVIVED = "survived"
    EQUIVALENT = "equivalent"
    # Differs from the original only within the spread of a reordered sum: the same math in another
    # rounding order (an xor butterfly's offset 16 -> 17 still gives every lane the warp's sum).
    ROUNDING = "equivalent up to rounding order"
    EXPLAINED = "explained"


@dataclass
class Result:
    key: str
    kind: str
    verdict: Verdict
    reason: str  # what killed it, or why it survives
    diff: str = ""
    seconds: float = 0.0


@dataclass
class Report:
    op: str
    folder: str
    seed: int
    stage: str = "numba"
    results: list[Result] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # explanations in the spec that name no mutant

    def count(self, verdict: Verdict) -> int:
        return sum(r.verdict == verdict for r in self.results)

    @property
    def score(self) -> float:
        """Killed over the mutants that can be killed (all but the equivalent ones, to the bit or up to rounding order)."""
        judged = len(self.results) - self.count(Verdict.EQUIVALENT) - self.count(Verdict.ROUNDING)
        return self.count(Verdict.KILLED) / judged if judged else 1.0

    @property
    def unexplained(self) -> list[Result]:
        return [r for r in self.results if r.verdict == Verdict.SURVIVED]

    def as_json(self) -> str:
        summary = {v.value: self.count(v) for v in Verdict}
        data = {"op": self.op, "folder": self.folder, "seed": self.seed, "stage": self.stage, "mutants": len(self.results),
                "score": self.score, **summary, "stale_explanations": self.stale,
                "results": [asdict(r) | {"verdict": r.verdict.value} for r in self.results]}
        return json.dumps(data, indent=2)


@dataclass(frozen=True)
class Task:
    folder: str  # the op folder
    seed: int
    mutant: Mutant | None  # None: the op as it is (the baseline must pass)
    stage: str = "numba"


# --- one mutant, in a worker process -----------------------------------------------------------

def run_task(task: Task) -> Result:
    from ..base import progress
    from ..op.loaders import load_op

    progress.set_quiet(True)
    start = time.monotonic()
    original = load_op(task.folder)
    if task.mutant is None:
        failed = _failures(original, task.seed, task.stage)
        verdict = Verdict.KILLED if failed else Verdict.SURVIVED
        return Result("baseline", "", verdict, failed, seconds=time.monotonic() - start)
    source = original.path(task.stage).read_text()
    with tempfile.TemporaryDirectory(prefix="brrr-mutant-") as tmp:
        folder = Path(tmp) / original.folder.name
        shutil.copytree(original.folder, folder, ignore=shutil.ignore_patterns("__pycache__"))
        (folder / FILES[task.stage]).write_text(task.mutant.apply(source))
        try:
            mutant_op = load_op(str(folder))
            # One case at a time, the last mutant's killer first (probe.py); validated in full only
            # when no probe case fails.
            failed = probe(mutant_op, task.stage, task.seed) or _failures(mutant_op, task.seed, task.stage)
        except BrrrError as e:
            failed = f"does not load: {e}"
        if failed:
            failed = failed.replace(str(folder), str(original.folder))  # name the op's own file, not the copy
            result = Result(task.mutant.key, task.mutant.kind.value, Verdict.KILLED, failed)
        else:
            difference, reordered = _first_difference(original, mutant_op, task.seed, task.stage)
            verdict = Verdict.SURVIVED if difference else Verdict.EQUIVALENT
            reason = difference or SAME[task.stage]
            if difference and reordered:
                verdict = Verdict.ROUNDING
                reason = (f"{difference}; every difference on every case is within {SPREAD:g} x the spread of the "
                          "reference under rounding (a sum taken in another order): the same math, rounded otherwise")
            if not difference and task.stage == "numba" and task.mutant.line and \
                    not _reached(original, task.seed, _edited_lines(task.mutant)):
                verdict = Verdict.SURVIVED
                reason = (f"line {task.mutant.line} never ran on validation's cases (nor on three more draws): "
                          "no case reaches it")
            result = Result(task.mutant.key, task.mutant.kind.value, verdict, reason, task.mutant.diff(source))
    result.seconds = time.monotonic() - start
    return result


SAME = {
    "numba": "bit for bit the original's outputs, gradients and every tensor the calls received, on every case, "
             "and the changed line ran",
    "cuda": "bit for bit the original's outputs, gradients and every tensor the calls received, on every case "
            "(on a GPU brrr cannot see a write past the end of a tensor, nor whether the changed line ran: "
            "brrr sanitize can)",
}


@contextmanager
def lines_run(path: Path | None) -> Iterator[set[int]]:
    """The lines of `path` executed inside this block, in any thread (the simulator runs each GPU thread
    as a Python thread)."""
    ran: set[int] = set()
    if path is None:
        yield ran
        return
    target = str(path.resolve())

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != target:
            return None
        if event == "line":
            ran.add(frame.f_lineno)
        return tracer

    old = sys.gettrace()
    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        yield ran
    finally:
        sys.settrace(old)
        threading.settrace(None)  # type: ignore[arg-type]


def _edited_lines(mutant: Mutant) -> set[int]:
    """The original's lines a mutant changes; an added line counts as the one it follows."""
    edit = mutant.edit
    return set(range(edit.line, edit.end_line + 1))


_HEADED_LINES = 12


def _failures(op: Any, seed: int, stage: str) -> str:
    """The first failing row of validating one stage of the op, as one line; "" when all pass."""
    from ..validation.runner import Options, validate_guarded

    for row in validate_guarded(op, Options(stages=(stage,), seed=seed, fail_fast=True)):
        if row.failed:
            lines = row.detail.splitlines()
            # A first line ending in ":" heads what follows (a compiler's errors): keep what it heads.
            first = "\n".join(lines[:_HEADED_LINES]) if lines and lines[0].rstrip().endswith(":") else \
                "".join(lines[:1])
            return f"{row.stage} {row.check} {row.dtype}: {first}"
    return ""


def _load(op: Any, stage: str) -> Any:
    """The stage where validation runs it: kernel.cu on the GPU, or executed on the CPU without one."""
    from ..op.loaders import load_numba, load_stage
    from ..validation.executor import CUDA_BUILDS, Options

    if stage == "numba":
        return load_numba(op)
    options = Options()
    where = options.where("cuda")
    return load_stage(op, "cuda", where, CUDA_BUILDS[where](op, options))


def probe_sizes(spec: Any) -> list[Any]:
    """Validation's simulator sizes, and the GPU sizes small enough for the simulator (up to 20000 in
    the product of their dimensions): a mutant the small sizes cannot tell apart may show at the others."""
    extra = [s for s in spec.gpu_sizes if s not in spec.sim_sizes and math.prod(s if isinstance(s, tuple) else (s,)) <= 20000]
    return list(spec.sim_sizes) + extra


def _probe_cases(spec: Any, seed: int, stage: str) -> Iterator[tuple[Any, str, Any, Any]]:
    """(dtype, label, inputs, generator) for validation's cases, the GPU sizes the simulator affords,
    and three more random draws of each."""
    import torch

    for draw in range(4):
        gen = torch.Generator().manual_seed(seed + draw)
        for dtype in spec.stage_dtypes(stage):
            cases = [(f"size {s}", spec.make_inputs(s, dtype, torch.device("cpu"), gen)) for s in probe_sizes(spec)]
            cases += [(name, make(dtype, torch.device("cpu"))) for name, make in spec.edge_cases.items()]
            for label, inputs in cases:
                yield dtype, label, inputs, gen


def _first_difference(original: Any, mutant: Any, seed: int, stage: str) -> tuple[str, bool]:
    """Run both stages on the probe cases: (the first output, gradient or tensor received whose bits
    differ, or "" when none does; whether every difference on every case lies within the spread of
    the reference under rounding, as a sum taken in another order does)."""
    import torch

    from ..validation.trial import Trial, stage_fn

    spec = original.spec
    a, b = _load(original, stage), _load(mutant, stage)
    first = ""
    for i, (dtype, label, inputs, gen) in enumerate(_probe_cases(spec, seed, stage)):
        key = (str(original.folder), seed, stage, i)
        if key not in _ORIGINAL_RUNS:
            run = Trial(stage_fn(a), inputs, a.device, dtype)
            upstream = tuple(torch.randn(o.shape, dtype=torch.float64, generator=gen) for o in run.outputs)
            run.backward(upstream)
            _ORIGINAL_RUNS[key] = (_observed(spec, run), upstream)
        else:  # the same draws from gen, so the next case's inputs are the same too
            for u in _ORIGINAL_RUNS[key][1]:
                torch.randn(u.shape, dtype=torch.float64, generator=gen)
        want, upstream = _ORIGINAL_RUNS[key]
        run = Trial(stage_fn(b), inputs, b.device, dtype)
        run.backward(upstream)
        got = _observed(spec, run)
        spread = _Spread(original, inputs, upstream, dtype)
        for name, x in want.items():
            y = got[name]
            if x is not None and (y is None or not _same(x, y)):
                first = first or f"survives validation, but {name} differs from the original's ({dtype}, {label})"
                if not spread.covers(name, x, y):
                    return first, False
    return first, bool(first)


class _Spread:
    """The reference's spread under rounding on one case (rounding.py, measured as validation measures
    it, once, on the first difference): whether a mutant's difference from the original is no more than
    a reordered sum's."""

    def __init__(self, op: Any, inputs: Any, upstream: Any, dtype: Any) -> None:
        self.op, self.inputs, self.upstream, self.dtype = op, inputs, upstream, dtype
        self.measured: tuple[list[Any], list[Any]] | None = None

    def covers(self, name: str, original: Any, mutant: Any) -> bool:
        import torch

        spec = self.op.spec
        names = [*spec.outputs, *(f"grad_{n}" for n in spec.inputs)]
        if name not in names or not isinstance(mutant, torch.Tensor) or original.shape != mutant.shape:
            return False  # an input written, a tensor the call received written: never rounding
        outputs, grads = self._measure()
        at = names.index(name)
        found = outputs[at] if at < len(spec.outputs) else grads[at - len(spec.outputs)] if grads else None
        if found is None or found.numel() != original.numel():
            return False
        a, b = original.detach().cpu().double().reshape(-1), mutant.detach().cpu().double().reshape(-1)
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))
        return bool((same | ((a - b).abs() <= SPREAD * found.reshape(-1))).all())

    def _measure(self) -> tuple[list[Any], list[Any]]:
        if self.measured is None:
            from ..op.loaders import load_reference
            from ..op.tolerances import NUDGED_IN
            from ..validation.trial import Trial, stage_fn
            from ..verdict import rounding

            nudged_in = NUDGED_IN.get(self.dtype)
            reference = stage_fn(load_reference(self.op))

            def run() -> tuple[Any, Any]:
                t = Trial(reference, self.inputs, "cpu", nudged_in)
                t.backward(self.upstream)
                return t.outputs, t.grads

            self.measured = rounding.spread(run, seed=0) if nudged_in is not None else ([], [])
        return self.measured


# The original's runs on each probe case, by (op folder, seed, stage, case number): every mutant a
# worker process compares is compared with the same runs, so they are made once a process.
_ORIGINAL_RUNS: dict[tuple[str, int, str, int], tuple[dict[str, Any], tuple[Any, ...]]] = {}


def _observed(spec: Any, run: Any) -> dict[str, Any]:
    """What a mutant is compared on: outputs, gradients, inputs after the call, and tensors written."""
    return (dict(zip(spec.outputs, run.outputs)) | {f"grad_{n}": g for n, g in zip(spec.inputs, run.grads)}
            | {f"input {n}": x for n, x in zip(spec.inputs, run.xs)}
            | {f"a tensor the call received ({w})": True for w in run.writes})


def _reached(original: Any, seed: int, lines: set[int]) -> bool:
    """Whether the original numba stage runs any of `lines` on the probe cases, stopping at the first
    case that does. Traced apart from the comparison: tracing every simulated thread is slow, and
    only a mutant with no difference needs it."""
    import torch

    from ..validation.trial import Trial, stage_fn

    stage = _load(original, "numba")
    with lines_run(original.path("numba")) as ran:
        for dtype, _, inputs, gen in _probe_cases(original.spec, seed, "numba"):
            run = Trial(stage_fn(stage), inputs, stage.device, dtype)
            run.backward(tuple(torch.randn(o.shape, dtype=torch.float64, generator=gen) for o in run.outputs))
            if ran & lines:
                return True
    return False


def _same(a: Any, b: Any) -> bool:
    import torch

    from ..verdict.compare import same_bits

    if not isinstance(a, torch.Tensor):
        return a == b
    return isinstance(b, torch.Tensor) and same_bits(a.detach().cpu(), b.detach().cpu())


# --- the pool --------------------------------------------------------------------------------------

def judged(task: Task) -> Result:
    """run_task in a worker of the pool; a mutant that breaks brrr itself still gets a verdict."""
    try:
        return run_task(task)
    except Exception as e:
        key = task.mutant.key if task.mutant else "baseline"
        kind = task.mutant.kind.value if task.mutant else ""
        return Result(key, kind, Verdict.KILLED, f"raised {type(e).__name__}: {e}")


def _lost(task: Task, lost: Lost) -> Result:
    """A mutant whose worker was killed past the time limit (it hangs) or died (it crashed): caught."""
    key = task.mutant.key if task.mutant else "baseline"
    kind = task.mutant.kind.value if task.mutant else ""
    why = f"{lost.why}: it hangs" if lost.overdue else f"{lost.why}: it crashes"
    return Result(key, kind, Verdict.KILLED, why, seconds=lost.seconds)


# Without a --timeout, a mutant hangs when it runs HANG_FACTOR times as long as the op as it is took
# in the same run (validation, and for a survivor its comparison on four draws of the cases, each
# about one validation), and at least HANG_FLOOR seconds: the clean op's time already carries the
# machine's load, so a busy machine does not make a slow mutant look like a hang.
HANG_FACTOR = 8.0
HANG_FLOOR = 60.0


def hang_limit(clean_seconds: float) -> float:
    return max(HANG_FLOOR, HANG_FACTOR * clean_seconds)


@dataclass(frozen=True)
class Pick:
    """Which mutants run: of these kinds (every kind if none), standard ones on these lines of the file
    (first, last; every line if None). The op's own bugs/*.bug files have no one line: they run unless
    kinds leaves them out."""

    kinds: tuple[Kind, ...] = ()
    lines: tuple[int, int] | None = None

    def keeps(self, mutant: Mutant) -> bool:
        if self.kinds and mutant.kind not in self.kinds:
            return False
        if self.lines is None or mutant.kind == Kind.KNOWN:
            return True
        return self.lines[0] <= mutant.line <= self.lines[1]


def parse_lines(text: str) -> tuple[int, int]:
    """--lines A-B, A- (to the end) or A (one line), 1-based and inclusive."""
    first, dash, last = text.partition("-")
    try:
        lo = int(first)
        hi = int(last) if last else (10**9 if dash else lo)
    except ValueError:
        raise UsageError(f"--lines expects A-B, A- or A (line numbers), got {text!r}") from None
    if lo < 1 or hi < lo:
        raise UsageError(f"--lines {text}: the first line must be 1 or more, and not after the last")
    return lo, hi


def mutate(name: str, seed: int, jobs: int, limit: float | None, stage: str = "numba", pick: Pick = Pick()) -> Report:
    """Plant every standard bug in one stage of the op and validate each mutant (and the op as it is).
    `limit`: seconds after which a mutant hangs; None: hang_limit of the op's own time in this run."""
    from ..base.files import shown
    from ..op.loaders import load_op

    op = load_op(name)
    if stage == "cuda" and not _cuda_runs_here():
        raise UsageError("brrr mutate --stage cuda validates kernel.cu's mutants by running them, and the cuda "
                         "stage cannot run here: no GPU, and no host compiler (g++) to execute it on the CPU; "
                         "mutate the numba stage, or install g++")
    file = FILES[stage]
    source = op.path(stage).read_text()
    try:
        mutants = python_mutants(source, file) if stage == "numba" else cuda_mutants(source, file)
    except SyntaxError as e:  # the stage file itself does not parse: its file and line, not an internal error
        raise OpLoadError(f"{op.path(stage)}:{e.lineno}: syntax error: {e.msg}", hint=(e.text or "").rstrip()) from e
    mutants += known_bugs(op.folder, file)
    every_key = {m.key for m in mutants}  # an explanation is stale only if it names none of them
    mutants = [m for m in mutants if pick.keeps(m)]
    report = Report(op=op.name, folder=shown(op.folder), seed=seed, stage=stage)
    explained = dict(op.spec.mutants)
    tasks = [Task(str(op.folder), seed, None, stage)] + [Task(str(op.folder), seed, m, stage) for m in mutants]
    print(f"  {op.name}: the op as it is, then {len(mutants)} mutants of {file} in {jobs} processes ...",
          file=sys.stderr, flush=True)
    scratch = Scratch()  # before the pool: its workers inherit it as their TMPDIR
    try:
        pool = Pool(judged, jobs, limit=limit)  # the one process pool (base/workers.py)
    except BaseException:
        scratch.remove()
        raise
    finished = False
    try:
        done = 0
        for index, result in pool.run(tasks):
            if isinstance(result, Lost):
                result = _lost(tasks[index], result)
            if index == 0:
                if result.verdict == Verdict.KILLED:
                    raise CheckFailed(f"{op.name} fails validation as it is ({result.reason}): fix that before mutating it")
                if limit is None:
                    pool.limit = hang_limit(result.seconds)
                continue
            if result.verdict == Verdict.SURVIVED and result.key in explained:
                result.verdict, result.reason = Verdict.EXPLAINED, explained[result.key]
            report.results.append(result)
            done += 1
            print(f"  [{done}/{len(mutants)}] {result.verdict.value:10s} {result.key}", file=sys.stderr, flush=True)
        finished = True
    finally:
        pool.close(kill=not finished)
        scratch.remove()
    report.stale = [k for k in explained if k not in every_key]
    order = {m.key: i for i, m in enumerate(mutants)}
    report.results.sort(key=lambda r: order.get(r.key, 0))
    return report


class Scratch:
    """One folder of this process's for every mutant's copy of the op (and what compilers write),
    removed however brrr mutate ends (a failure, Ctrl-C, SIGTERM): a worker killed mid-mutant (a
    hang, an interrupt) cannot remove its own copy. Workers find it as TMPDIR, which spawned
    processes inherit."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="brrr-mutants-")
        self.was = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = self.folder

    def remove(self) -> None:
        if self.was is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = self.was
        shutil.rmtree(self.folder, ignore_errors=True)


def _cuda_runs_here() -> bool:
    from ..validation.executor import Options

    return Options().where("cuda") is not None


def format_report(report: Report) -> str:
    lines = [f"== {report.op}  ({report.folder}, {report.stage} stage, seed {report.seed})",
             f"{'verdict':10s}  {'kind':12s}  mutant and reason"]
    apart = [r for r in report.results if r.verdict == Verdict.ROUNDING]
    for r in report.results:
        if r.verdict == Verdict.ROUNDING:
            continue  # listed apart below: not a gap in the cases
        lines.append(f"{r.verdict.value:10s}  {r.kind:12s}  {r.key}")
        if r.verdict != Verdict.KILLED or r.reason.startswith("ran past"):
            lines.append(f"{'':26s}{r.reason}")
        else:
            lines.append(f"{'':26s}caught by {r.reason[:160]}")
    if apart:
        lines.append("\nequivalent up to rounding order (no mutants entry needed):")
        for r in apart:
            lines += [f"  {r.key}", f"    {r.reason}"]
    for r in report.unexplained:
        lines.append(f"\nsurvivor: {r.key}\n{r.diff.rstrip()}")
    for key in report.stale:
        lines.append(f"\nstale: the spec explains {key!r}, which is no longer a mutant")
    killed = report.count(Verdict.KILLED)
    judged = len(report.results) - report.count(Verdict.EQUIVALENT) - report.count(Verdict.ROUNDING)
    lines.append(f"-- {report.op}: mutation score {killed}/{judged} = {100 * report.score:.0f}% "
                 f"({len(report.results)} mutants: {killed} killed, {report.count(Verdict.EQUIVALENT)} equivalent, "
                 f"{report.count(Verdict.ROUNDING)} equivalent up to rounding order, "
                 f"{report.count(Verdict.EXPLAINED)} explained, {report.count(Verdict.SURVIVED)} survived)")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    """brrr mutate: every mutant validated; the report, --json; exit 1 if a survivor is unexplained."""
    from ..base.files import write_atomic

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    pick = Pick(tuple(Kind(k) for k in args.kind or ()), parse_lines(args.lines) if args.lines else None)
    report = mutate(args.op, seed, jobs=args.jobs or workers.cpus(), limit=args.timeout, stage=args.stage, pick=pick)
    print(format_report(report))
    if args.json:
        write_atomic(args.json, report.as_json())
    return EXIT_CHECK_FAILED if report.unexplained else EXIT_OK
