"""The one executor: runs any check of plan.py on one op and makes its report row.

`validate(op, options)` loads each stage where it runs (`loaders.Where`, chosen by `Options.where`)
and runs its plan. Every comparison goes through `compare_cases`: the stage and what it is
compared with each run on copies of the same cases (trial.py: outputs poisoned, inputs checked
for writes), forward and, when the plan pairs a backward check, backward with one random
upstream gradient; `rows.RowBuilder` folds the cases into the row.
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from ..base import progress
from ..base.errors import BrrrError, BuildError
from ..base.progress import note, ticking
from ..base.settings import switch
from ..cuda import builder, cpu_build, device_check, module_build
from ..cuda.isolated import Isolated
from ..op.contract import as_tuple
from ..op.loaders import CPU_SECONDARY_BUDGET, Stage, Where, load_numba, load_reference, load_stage
from ..op.spec import STAGES, Op, StageName
from ..op.tolerances import NUDGED_IN
from ..sim import gpu_rules as numba_gpu_rules
from ..verdict import rounding
from ..verdict.compare import Around, Comparison, case_terms, compare
from ..verdict.faults import fault_from
from ..verdict.report import FAIL, NOT_APPLICABLE, NOT_RUN, SKIP, Row
from . import estimate, layouts
from . import unfinished as scaffold
from .function import watching_writes
from .huge import huge_row
from .plan import HUGE, PLANS, Against, Cases, Check, EachDtype, Plan
from .rows import RowBuilder
from .trial import (
    Case,
    Fn,
    Trial,
    edge_cases,
    oracle_fn,
    poisoned,
    random_cases,
    random_inputs,
    stage_fn,
    strided_cases,
    upstream_for,
)


@dataclass
class Options:
    stages: tuple[StageName, ...] = STAGES
    seed: int = field(default_factory=lambda: int.from_bytes(os.urandom(4), "little"))
    numba_gpu: bool = False
    arch: str = builder.DEFAULT_ARCH
    huge: bool = False
    # Stop at the first failing row (`brrr validate --fail-fast`): a verdict rather than a report.
    # brrr mutate needs only to know that a mutant is caught, a user with a bug wants its first row
    # soon, and the checks after it (other dtypes, non-contiguous inputs, later stages) cost the most.
    fail_fast: bool = False
    cuda_on_cpu: bool = False  # execute the cuda stage on the CPU even where there is a GPU
    # nvcc's compile check beside the CPU build. brrr mutate's probe leaves it out: a mutant the probe
    # catches on the CPU is caught whatever nvcc says, and one it does not is validated in full, nvcc
    # included; nvcc was 40% of each mutant's CPU time.
    nvcc_beside_cpu: bool = True

    def where(self, stage: StageName) -> Where | None:
        """Where `stage` runs in this validation; None: nowhere here, so the cuda stage is only compiled.
        The cuda stage runs on the GPU where there is one (the verdict that counts), otherwise
        executed on the CPU (cpu_build) where a host compiler is."""
        if stage == "reference":
            return Where.CPU
        if stage == "numba":
            return Where.GPU if self.numba_gpu else Where.SIMULATOR
        if torch.cuda.is_available() and not self.cuda_on_cpu:
            return Where.GPU
        return Where.CPU_EXECUTION if cpu_build.available() else None


# How the cuda stage is built for each place it runs. A new place (the CPU, say) is: its Where value
# (loaders.py), its entry in loaders.load_stage, its build here, and Options.where choosing it.
# An op brought as its own torch extension (spec.torch_module) is built as a module (module_build).
CUDA_BUILDS: dict[Where, Callable[[Op, Options], Any]] = {
    Where.GPU: lambda op, options: module_build.build_gpu_module(op) if op.spec.torch_module
    else builder.build_extension(op),
    Where.CPU_EXECUTION: lambda op, options: _on_the_cpu(op),
}


def _on_the_cpu(op: Op) -> Any:
    """The CPU build (kernel.cu and binding.cpp, or the author's own module), its calls in a child
    process (cuda/isolated.py: a crash of the op's code fails a check, not brrr); in this process
    only where BRRR_CPU_ISOLATION=off asks (benchmarks/isolation_cost.py measures the difference)."""
    if not switch("BRRR_CPU_ISOLATION", True):
        return _cpu_module(op) if op.spec.torch_module else cpu_build.build_cpu_extension(op, cpu_build.CHECKED)
    # the child keeps a module's printf lines for the rows (Isolated.take_printed)
    build = module_build.build_cpu_module(op, cpu_build.CHECKED) if op.spec.torch_module \
        else cpu_build.build_cpu_extension(op, cpu_build.CHECKED)
    isolated = Isolated(build, checked=True)
    isolated.start()  # now, outside any call: what a call has set up is no state of the child's
    return isolated


def _cpu_module(op: Op) -> module_build.ModuleBuild:
    """The module's CPU build, its kernels' printf lines kept for the rows (Validation.run prints them again after)."""
    built = module_build.build_cpu_module(op, cpu_build.CHECKED)
    built.keep_printed(True)
    return built


def take_printed(v: Validation, stage: StageName) -> str:
    """The device printf lines of `stage`'s calls since the last take: its library keeps them where
    it runs on the CPU (cuda/printed.py); elsewhere there are none to take."""
    library = v.stages[stage].library if stage in v.stages else None
    take = getattr(library, "take_printed", None)
    return take() if take is not None else ""


def nvcc_check(op: Op, arch: str) -> builder.CompileReport:
    """The GPU compile check of the op's CUDA C beside its CPU build, whichever layout it is written in:
    nvcc short of the host object, which nothing links here (device_check)."""
    return device_check.kernel_check(op, arch)


@dataclass
class Sides:
    """One comparison's two sides: the stage under test, and what it is compared with, each on its device."""

    got: Fn
    got_device: str
    want: Fn
    want_device: str
    want_dtype: torch.dtype | None  # None: the dtype of the case, as the stage gets it


class Validation:
    """One op's validation: its stages as loaded, its rows, and the one random stream all cases come from."""

    def __init__(self, op: Op, options: Options) -> None:
        self.op, self.spec, self.options = op, op.spec, options
        self.gen = torch.Generator().manual_seed(options.seed)
        self.rows: list[Row] = []
        self.stages: dict[str, Stage] = {}
        self.intact: RowBuilder | None = None  # the current stage's "inputs unchanged" row

    def run(self) -> list[Row]:
        from ..sim.scheduler import remembering_time_outs

        try:
            with remembering_time_outs():  # a looping numba kernel costs the op one time limit, not one a launch
                return self._run()
        finally:
            for stage in self.stages.values():  # the child processes running a stage's code end with it
                if isinstance(stage.library, Isolated):
                    stage.library.close()
                elif isinstance(stage.library, module_build.ModuleBuild):  # in this process: printf prints again
                    stage.library.keep_printed(False)

    def _run(self) -> list[Row]:
        wanted = self.options.stages
        ref = self.stages["reference"] = load_reference(self.op)
        ref_todo = self.unfinished(ref)
        if "reference" in wanted:
            self.run_stage("reference", ref_todo)
        if "numba" in wanted and not self.op.has("numba"):
            self.rows.append(Row(self.op.name, "numba", "all", "-", SKIP,
                                 detail=f"no {self.op.path('numba').name}: the op has no numba stage, so the cuda "
                                        "stage is checked against the reference alone"))
            wanted = tuple(s for s in wanted if s != "numba")
        if ("numba" in wanted or "cuda" in wanted) and self.op.has("numba"):
            self.stages["numba"] = load_numba(self.op, gpu=self.options.where("numba") is Where.GPU)
        if "numba" in wanted and (refused := numba_gpu_rules.problems(self.op.path("numba"))):
            self.rows.append(Row(self.op.name, "numba", "GPU compile rules", "-", FAIL, detail="\n".join(refused)))
        if self.stopping():  # fail-fast: a failing reference is the verdict
            return self.rows
        if "numba" in wanted:
            numba_todo = self.first_numba_call(self.stages["numba"])
            if ref_todo and not numba_todo:
                self.rows.append(Row(self.op.name, "numba", "all", "-", SKIP, detail="the reference stage is unfinished"))
            else:
                self.run_stage("numba", numba_todo)
        if "cuda" in wanted and not self.stopping():
            self.run_stage("cuda", scaffold.unfinished_cuda(self.op))
        if self.options.huge:
            self.rows.append(huge_row(self.op, HUGE, self.stages, self.options.seed, self.gen))
        return self.rows

    def unfinished(self, stage: Stage) -> str | None:
        """A stage still as `brrr new` wrote it, said once (see unfinished.unfinished); None when it runs."""
        return scaffold.unfinished(stage, random_inputs(self.op, self.spec.sim_sizes[0], torch.float64, stage.device, self.gen))

    def first_numba_call(self, stage: Stage) -> str | None:
        """`unfinished` for the numba stage, at its smallest size, under a ticker (a simulated kernel
        may run long, or forever); in the simulator, timed to estimate the whole stage, said when long."""
        simulated = stage.where is Where.SIMULATOR
        size = estimate.smallest_size(self.op) if simulated else self.spec.sim_sizes[0]
        if simulated and (warning := estimate.before_first_call(self.op)):
            progress.note(warning)
        inputs = random_inputs(self.op, size, torch.float64, stage.device, self.gen)
        with ticking(f"{self.op.name}: numba stage {stage.where.value}, first call (size {size})"), \
                estimate.counting_threads() as threads:
            start = time.monotonic()
            todo = scaffold.unfinished(stage, inputs)
            seconds = time.monotonic() - start
        if simulated and not todo and (warning := estimate.after_first_call(self.op, seconds, threads[0])):
            progress.note(warning)
        return todo

    def run_stage(self, name: StageName, todo: str | None) -> None:
        if todo:
            self.rows.append(Row(self.op.name, name, "unfinished", "-", FAIL, detail=todo))
            return
        first_row = len(self.rows)
        try:
            self._run_plan(name, PLANS[name])
        finally:
            where = self.stages[name].where if name in self.stages else self.options.where(name)
            for row in self.rows[first_row:]:  # the cuda stage on the CPU says so on every row
                row.place = where.place if where else ""

    def _run_plan(self, name: StageName, plan: Plan) -> None:
        if isinstance(plan[0], Check) and plan[0].against is Against.COMPILER:
            row = build_stage(self, plan[0])
            self.rows.append(row)
            if (skipped := nvcc_skipped(self, plan[0])) is not None:
                self.rows.append(skipped)
            if name not in self.stages or (row.failed and self.options.fail_fast):
                return  # a stage that built runs its checks even where the compile row failed (nvcc, the source)
            plan = plan[1:]
        self.intact = next((RowBuilder(self.op, c, "all") for c in plan
                            if isinstance(c, Check) and c.against is Against.INPUTS), None)
        stage = self.stages[name]
        if stage.where is Where.SIMULATOR and torch.float32 in self.dtypes(stage):
            from ..base.files import shown
            from ..sim.floats import mixed_lines

            for mixed in mixed_lines(stage.source):
                note("note: " + mixed.describe(shown(stage.source)))
        with ticking(f"{self.op.name}: {name} stage {stage.where.value}"):
            for step in plan:
                if not self.run_step(step, stage) or self.stopping():
                    return

    def run_step(self, step: Check | EachDtype, stage: Stage) -> bool:
        """Run one step of a plan; False when the rest of the plan cannot run (no oracle)."""
        checks = step.checks if isinstance(step, EachDtype) else (step,)
        if self.spec.oracle is None and any(c.against is Against.ORACLE for c in checks):
            self.rows.append(Row(self.op.name, stage.name, "oracle", "-", SKIP, detail="the spec names no oracle"))
            return False
        first_row = len(self.rows)
        try:
            return self._run_step(step, checks, stage)
        finally:  # printf lines no case claimed (opcheck's calls, say) go to the step's last row
            left = take_printed(self, stage.name)
            if left and len(self.rows) > first_row:
                self.rows[-1].printed += left.splitlines()

    def _run_step(self, step: Check | EachDtype, checks: tuple[Check, ...], stage: Stage) -> bool:
        if isinstance(step, Check):
            if step.against is Against.INPUTS and self.intact is not None:
                self.rows.append(self.intact.finish())
            elif step.against is Against.NUMERIC and self.spec.forward_only:
                self.rows.append(not_applicable(self, step, "float64", f"the op has no backward: {self.spec.forward_only}"))
            elif step.against is Against.NUMERIC and (stage.name == "reference" or torch.float64 in self.dtypes(stage)):
                self.rows.append(gradcheck(self, step, stage))  # a reference always has a float64 to check
            elif step.against is Against.NUMERIC:
                dtypes = ", ".join(_dtype_name(d) for d in self.dtypes(stage))
                self.rows.append(not_applicable(
                    self, step, "float64", f"the spec checks the {stage.name} stage in {dtypes} only (its dtypes); "
                    "gradcheck's finite differences need float64, so its backward is judged by the backward rows alone"))
            elif step.against is Against.LIBRARY and stage.name == self.library_stage():
                from .library_checks import library_row

                self.rows.append(library_row(step, stage, self.stages["reference"], self.gen))
            return True
        for dtype in self.dtypes(stage):
            made: dict[Cases, list[Case]] = {}  # each kind of cases made once a dtype, in the order first asked
            for i, check in enumerate(checks):
                if check.phase == "backward":
                    continue  # run with the forward check before it
                paired = checks[i + 1] if i + 1 < len(checks) and checks[i + 1].phase == "backward" else None
                self.rows += run_comparisons(self, (check, paired), dtype, made)
                if self.stopping():
                    return True
        return True

    def stopping(self) -> bool:
        return self.options.fail_fast and any(r.failed for r in self.rows)

    def library_stage(self) -> StageName | None:
        """Where the torch.library rows run: the cuda stage where it runs, else the reference."""
        if "cuda" in self.options.stages and self.options.where("cuda") is not None:
            return "cuda"
        return "reference" if "reference" in self.options.stages else None

    def dtypes(self, stage: Stage) -> tuple[torch.dtype, ...]:
        return self.spec.stage_dtypes(stage.name)

    def cases(self, kind: Cases, dtype: torch.dtype, where: Where) -> list[Case]:
        if kind is Cases.RANDOM:
            return random_cases(self.op, where.sizes(self.spec, dtype), dtype, "cpu", self.gen)
        if kind is Cases.VERSIONS:
            return random_cases(self.op, where.version_sizes(self.spec, dtype), dtype, "cpu", self.gen)
        if kind is Cases.SMALL:
            return random_cases(self.op, self.spec.sim_sizes, dtype, "cpu", self.gen)
        if kind is Cases.STRIDED:
            return strided_cases(random_cases(self.op, where.strided_sizes(self.spec), dtype, where.device, self.gen))
        if kind is Cases.EDGE:
            return edge_cases(self.op, dtype, "cpu")
        raise ValueError(f"no comparison runs on {kind}")


def validate(op: Op, options: Options) -> list[Row]:
    return Validation(op, options).run()


def run_comparisons(v: Validation, checks: tuple[Check, Check | None], dtype: torch.dtype,
                    made: dict[Cases, list[Case]]) -> list[Row]:
    """A forward check (and the backward check paired with it) for one dtype; no rows where it does not apply."""
    check, paired = checks
    if paired is not None and v.spec.forward_only:
        forward = run_comparisons(v, (check, None), dtype, made)
        return forward + [not_applicable(v, paired, _dtype_name(dtype), f"the op has no backward: {v.spec.forward_only}")
                          ] if forward else []
    stage = v.stages[check.stage]
    if check.against is Against.NUMBA and ("numba" not in v.stages or dtype not in v.spec.stage_dtypes("numba")):
        return []
    if check.cases not in made:
        made[check.cases] = v.cases(check.cases, dtype, stage.where)
    cases = made[check.cases]
    if not cases:
        return []
    if check.against is Against.ORACLE:
        want = Sides(stage_fn(stage), stage.device, oracle_fn(v.op), "cpu", torch.float64)
    elif check.against is Against.NUMBA:
        numba = v.stages["numba"]
        want = Sides(stage_fn(stage), stage.device, stage_fn(numba), numba.device, None)
    else:
        want = Sides(stage_fn(stage), stage.device, stage_fn(v.stages["reference"]), stage.device, torch.float64)
    if not check.first_versions:
        return compare_cases(v, checks, want, cases, dtype)
    rows = []
    for name, variant in stage.variants.items():
        sides = Sides(variant_fn(v.op, variant), want.got_device, want.want, want.want_device, want.want_dtype)
        rows += compare_cases(v, (Check(check.stage, name, check.against, check.cases), None), sides, cases, dtype)
    return rows


def compare_cases(v: Validation, checks: tuple[Check, Check | None], sides: Sides, cases: list[Case],
                  dtype: torch.dtype) -> list[Row]:
    """Forward (and backward) of sides.got against sides.want on each case; one row per check.

    A case the expected side cannot compute is `not run` here, and is charged to the stage that
    raised, in a row of its own ("backward for numba", say), not to the stage under test.
    """
    spec, dtype_name = v.spec, _dtype_name(dtype)
    fwd = RowBuilder(v.op, checks[0], dtype_name)
    bwd = RowBuilder(v.op, checks[1], dtype_name) if checks[1] else None
    for b in (fwd, bwd, v.intact):
        if b is not None:
            b.needs_cases = True
    stage = checks[0].stage
    source = v.stages[stage].source
    charged: dict[str, RowBuilder] = {}
    kind = checks[0].cases
    budget = CPU_SECONDARY_BUDGET if kind is Cases.VERSIONS else None
    left_out = v.stages[stage].where.left_out(spec, budget) if kind in (Cases.RANDOM, Cases.VERSIONS) else ()
    for b in (fwd, bwd):
        if b is not None:
            b.row.gpu_only = [f"size {s}" for s in left_out]
    for case in cases:
        try:
            want = Trial(sides.want, case.inputs, sides.want_device, sides.want_dtype)
        except Exception as e:
            why = _charge(v, charged, (sides.want, "forward", stage, dtype), case, e)
            for b in (fwd, bwd):
                if b is not None:
                    b.not_run(case, why)
            continue
        # Both sides get the same upstream gradient: rounded to the stage's dtype first, or the
        # float64 reference would see digits the stage never could (bf16 column sums differ by O(1)).
        upstream = tuple(u.to(dtype).double() for u in upstream_for(want.outputs, v.gen))
        want_bwd = bwd is not None
        if bwd is not None:
            try:
                want.backward(upstream)
            except Exception as e:
                bwd.not_run(case, _charge(v, charged, (sides.want, "backward", stage, dtype), case, e))
                want_bwd = False
        spread = _LazySpread(v, sides, case, upstream if want_bwd else None, dtype)
        try:
            got = Trial(sides.got, case.inputs, sides.got_device, dtype)
        except Exception as e:
            if (refusal := layouts.declined(case, e)) is not None:
                fwd.not_run(case, refusal, what="refused by the stage")
                if bwd is not None:
                    bwd.not_run(case, "its forward refused the input")
            elif isinstance(e, BrrrError):
                fwd.ran(case)
                fwd.fail(f"[{case.label}] {e}")
            else:
                fwd.fault(fault_from(e, source), case, (upstream, dtype))
            if bwd is not None:
                bwd.not_run(case, "its forward failed")
            continue
        finally:
            fwd.printed(case, take_printed(v, stage))
        shapes_ok, wrong = True, False
        terms = case_terms(spec, want.xs, want.outputs, upstream)
        for i, (name, g, w) in enumerate(zip(spec.outputs, got.outputs, want.outputs)):
            measured = spread.of(0, i, fwd)
            c = compare(name, g, w, spec.rule(name, dtype, stage), _around(spec, case, g, terms, measured))
            shapes_ok &= c.shape_ok
            wrong |= c.shape_ok and not c.ok and not c.unproven
            _add(fwd, c, case, (upstream, dtype), withheld=measured is None)
        if wrong:
            _layout_cause(v, fwd, case, (sides, dtype), got.outputs)
        fwd.spread_seconds += spread.take_seconds()
        if bwd is not None and want_bwd and not shapes_ok:
            bwd.not_run(case, "its forward's outputs have the wrong shape")
        elif bwd is not None and want_bwd:
            _compare_backward(v, bwd, (got, want), case, (upstream, dtype, terms, spread, sides))
            bwd.spread_seconds += spread.take_seconds()
        if v.intact is not None:
            v.intact.ran(case)
            for write in got.written(spec.inputs):
                v.intact.fail(f"[{case.label}] {stage} {write} ({dtype_name})")
    return [fwd.finish()] + ([bwd.finish()] if bwd else []) + [b.finish() for b in charged.values()]


def _compare_backward(v: Validation, bwd: RowBuilder, trials: tuple[Trial, Trial], case: Case,
                      context: tuple[Any, ...]) -> None:
    got, want = trials
    upstream, dtype, terms, spread, sides = context
    stage = bwd.row.stage
    try:
        got.backward(upstream)
    except Exception as e:
        if (refusal := layouts.declined(case, e)) is not None:
            bwd.not_run(case, refusal, what="refused by the stage")
        else:
            bwd.fault(fault_from(e, v.stages[stage].source), case, (upstream, dtype))
        return
    finally:
        bwd.printed(case, take_printed(v, stage))
    wrong = False
    for i, (name, g, w) in enumerate(zip(v.spec.inputs, got.grads, want.grads)):
        if not v.spec.takes_grad(name, case.inputs[i]):
            continue  # an integer or no_grad input: whatever backward returns for it is ignored
        if g is None or w is None:
            if (g is None) != (w is None):
                bwd.ran(case)
                bwd.fail(f"[{case.label}] grad {name}: got {'none' if g is None else 'a tensor'}, "
                         f"expected {'none' if w is None else 'a tensor'}")
            continue
        rule = v.spec.rule(f"grad_{name}", dtype, stage)
        measured = spread.of(1, i, bwd)
        c = compare(f"grad_{name}", g, w, rule, _around(v.spec, case, g, terms, measured))
        wrong |= c.shape_ok and not c.ok and not c.unproven
        _add(bwd, c, case, (upstream, dtype), withheld=measured is None)
    if wrong:
        _layout_cause(v, bwd, case, (sides, dtype), got.grads, upstream)


def _layout_cause(v: Validation, row: RowBuilder, case: Case, side: tuple[Sides, torch.dtype], got: Any,
                  upstream: Any = None) -> None:
    """A wrong strided, misaligned or permuted case: its likely cause (layouts.cause), where one
    reproduces what the stage returned, goes first in the row. Tried on a row's first such case only:
    each try runs the stage again."""
    if row.layout_tried or not layouts.is_layout_case(case):
        return
    row.layout_tried = True
    sides, dtype = side
    stage, spec = row.row.stage, v.spec
    names = spec.outputs if upstream is None else tuple(f"grad_{n}" for n in spec.inputs)

    def agrees(xs: tuple[torch.Tensor, ...], seen: Any) -> bool:
        again = Trial(sides.got, xs, sides.got_device, dtype)
        if upstream is not None:
            again.backward(upstream)
        for name, g, w in zip(names, seen, again.outputs if upstream is None else again.grads):
            if g is None or w is None:
                continue
            if not compare(name, g, w, spec.rule(name, dtype, stage)).ok:  # the same kernel twice: its own rounding
                return False
        return True

    found = layouts.cause(case, got, agrees, (spec.inputs, names))
    if found:
        row.fail_first([f"[{case.label}] cause: {found}"])


class _LazySpread:
    """The spread under rounding (rounding.py) at each output and gradient of one case, measured on
    the first call of `of(...)()`: only a comparison the fixed rule alone fails asks for it.

    It is the spread of what the stage is compared with when that is computed in float64 (the
    oracle, or the reference: never the stage under test, whose imprecision would excuse itself),
    else of the reference."""

    def __init__(self, v: Validation, want_sides: Sides, case: Case, upstream: Any, dtype: torch.dtype) -> None:
        self.v, self.want_sides, self.case, self.upstream, self.dtype = v, want_sides, case, upstream, dtype
        self.measured: tuple[list[torch.Tensor | None], list[torch.Tensor | None]] | None = None
        self.seconds = 0.0  # spent measuring, not yet charged to a row (take_seconds)

    def of(self, part: int, index: int, row: RowBuilder) -> Callable[[], torch.Tensor | None] | None:
        """part 0: the outputs, 1: the gradients of the inputs. None once `row` has failed in an earlier
        case: its verdict stands, and a failing row's other cases are judged by the fixed rule alone
        (16 reruns of the reference for each would make a failing verdict many times a passing one's)."""
        if row.problems and self.measured is None:
            return None

        def get() -> torch.Tensor | None:
            found = self.measure()[part]
            return found[index] if index < len(found) else None

        return get

    def measure(self) -> tuple[list[torch.Tensor | None], list[torch.Tensor | None]]:
        if self.measured is None:
            start = time.monotonic()
            self.measured = self._measure()
            self.seconds += time.monotonic() - start
        return self.measured

    def take_seconds(self) -> float:
        """The seconds measuring took since the last call: the row that asked for it shows them."""
        seconds, self.seconds = self.seconds, 0.0
        return seconds

    def _measure(self) -> tuple[list[torch.Tensor | None], list[torch.Tensor | None]]:
        v, nudged_in = self.v, NUDGED_IN.get(self.dtype)
        if nudged_in is None:
            return [], []
        want = self.want_sides
        trusted = want.want if want.want_dtype == torch.float64 else stage_fn(v.stages["reference"])

        def run() -> tuple[Any, Any]:
            t = Trial(trusted, self.case.inputs, "cpu", nudged_in)
            if self.upstream is not None:
                t.backward(self.upstream)
            return t.outputs, t.grads

        seed = (v.options.seed + zlib.crc32(f"{self.case.label} {self.dtype}".encode())) % 2**63
        return rounding.spread(run, seed)


def _add(row: RowBuilder, c: Comparison, case: Case, replay: Any, withheld: bool) -> None:
    """A comparison into its row. One judged without the spread (_LazySpread.of: the row failed on an
    earlier case) that fails by no more than a spread could excuse is not judged at all: listed as
    such, never as a failure its own (the spread may pass it on the run after the first failure is
    fixed). One past any spread fails, saying it was judged by the fixed rule alone."""
    if withheld and not c.ok and c.unproven:
        row.ran(case)
        row.not_run(case, f"{c.reason.split(':')[0]} out of the fixed bound, by no more than the reference's own "
                          "rounding could explain (its spread is not measured once the row has failed)", what="not judged")
        return
    if withheld and not c.ok and c.shape_ok:
        c.reason += " (by the fixed rule alone: the row failed before, so the spread was not measured)"
    row.add(c, case, replay)


def _charge(v: Validation, charged: dict[str, RowBuilder], what: tuple[Any, str, str, torch.dtype], case: Case,
            error: Exception) -> str:
    """The expected side raised: a failing row for the stage that did, and why the checked stage's case did not run."""
    want_fn, phase, stage, dtype = what
    side = getattr(want_fn, "stage", None)  # None: the spec's oracle
    name = side.name if side is not None else "oracle"
    check = f"{phase} for {stage}"
    if check not in charged:
        owner = side.name if side is not None else "reference"
        charged[check] = RowBuilder(v.op, Check(owner, check if side is not None else f"oracle's {check}",
                                                Against.REFERENCE, phase=phase), _dtype_name(dtype))
    if side is not None:
        charged[check].fault(fault_from(error, side.source), case)
    else:
        charged[check].ran(case)
        charged[check].fail(f"[{case.label}] the oracle raised {type(error).__name__}: {error}")
    return f"the {name} stage's {phase} raised (see its row '{check}')" if side is not None else \
        f"the oracle's {phase} raised"


def not_applicable(v: Validation, check: Check, dtype: str, why: str) -> Row:
    """A row for a check that does not apply to this op, saying why (never silently left out)."""
    return Row(v.op.name, check.stage, check.name, dtype, NOT_APPLICABLE, detail=why)


def gradcheck(v: Validation, check: Check, stage: Stage) -> Row:
    b = RowBuilder(v.op, check, "float64")
    size = v.spec.gradcheck_size
    inputs = random_inputs(v.op, size, torch.float64, stage.device, v.gen)
    xs = tuple(x.detach().requires_grad_(v.spec.takes_grad(n, x)) for n, x in zip(v.spec.inputs, inputs))
    case = Case(f"size {size}", inputs)
    b.ran(case)
    with watching_writes() as writes:
        try:
            with poisoned():
                # In the simulator every call costs a Python thread per CUDA thread: fast mode compares
                # one random projection of each Jacobian (v^T J u, numerical against analytical)
                # instead of every entry, with a few calls instead of two per input element
                # (layernorm at (2, 3): 1.4 s against 5.7 s). A wrong entry still moves v^T J u.
                torch.autograd.gradcheck(stage_fn(stage), xs, raise_exception=True,
                                         fast_mode=stage.where is Where.SIMULATOR)
        except GradcheckError as e:
            b.fail(f"gradcheck in float64, size {size}: " + _trim(str(e)))
        except Exception as e:
            b.fault(fault_from(e, stage.source), case)
    b.printed(case, take_printed(v, stage.name))
    # A call writing into what it receives makes gradcheck's numbers meaningless ("not reentrant"):
    # the cause is named first.
    b.fail_first([f"[{case.label}] {w}" for w in dict.fromkeys(writes)])
    return b.finish()


def build_stage(v: Validation, check: Check) -> Row:
    """The compile check; where the stage has a place to run, its build is loaded into v.stages."""
    where = v.options.where(check.stage)
    target = {Where.GPU: "native", Where.CPU_EXECUTION: "cpu"}.get(where, v.options.arch) if where else v.options.arch
    b = RowBuilder(v.op, check, target)
    if where is None:
        return compile_only(v, b)
    report = None
    try:
        if where is Where.CPU_EXECUTION and builder.find_nvcc() is not None and v.options.nvcc_beside_cpu:
            # nvcc too, beside the CPU build: what g++ accepts and nvcc does not, and ptxas' report.
            # nvcc's refusal fails the row, and the checks still run on the CPU build. What the CPU
            # cannot take at all is found first, in milliseconds, not after nvcc's minutes.
            module_build.check_cpu_sources(v.op) if v.op.spec.torch_module else cpu_build.kernel_text(v.op)
            with ThreadPoolExecutor(1) as pool:
                nvcc = pool.submit(nvcc_check, v.op, v.options.arch)
                ext = CUDA_BUILDS[where](v.op, v.options)
                try:
                    report = nvcc.result()
                except BuildError as e:
                    b.fail(f"nvcc {v.options.arch}: {e}")
        else:
            ext = CUDA_BUILDS[where](v.op, v.options)
    except BuildError as e:
        b.fail(str(e))
        return b.finish()
    for problem in getattr(ext, "found", ()):  # the author's own source problems (a module declared twice)
        b.fail(problem)
    row = b.finish()
    built = f"{'cached' if ext.cached else 'built'} in {ext.seconds:.1f}s"
    row.detail = f"{row.detail}\n{built}" if row.failed else built  # nvcc's refusal stays the first line
    if report is not None:
        row.detail += f"; nvcc {report.arch}: {report.summary()}"
        row.extras["kernels"] = [k.__dict__ for k in report.kernels]
        # Printed under the CPU build's row: nvcc's verdict on the same kernel.cu and ptxas' resources.
        row.notes = [f"nvcc {report.arch}: compiled{' (cached)' if report.cached else ''}; ptxas, per kernel:",
                     *(f"  {part}" for part in report.summary().split("; ") if part)]
    elif where is Where.CPU_EXECUTION and builder.find_nvcc() is None:  # (nvcc's refusal is the row's problem)
        row.notes = ["no nvcc: kernel.cu was not compiled for a GPU, so no compile verdict or ptxas resources"]
    if where is Where.CPU_EXECUTION and (arch := cpu_build.arch_note(v.op)):
        row.notes.append(arch)
    row.seconds = ext.seconds
    v.stages[check.stage] = load_stage(v.op, check.stage, where, ext)
    return row


def nvcc_skipped(v: Validation, check: Check) -> Row | None:
    """Where the cuda stage runs on the CPU but there is no CUDA toolkit, nvcc's compile check (what
    g++ accepts and nvcc does not, ptxas' resources) did not run: a row says so, never silence."""
    if v.options.where(check.stage) is not Where.CPU_EXECUTION or builder.find_nvcc() is not None:
        return None
    return Row(v.op.name, check.stage, "nvcc compile", v.options.arch, SKIP,
               detail="not run: no CUDA toolkit (no nvcc in $CUDA_HOME, on PATH, in /usr/local/cuda or from "
                      "pip install 'brrr-kernels[cuda]'), so kernel.cu was not compiled for a GPU")


def compile_only(v: Validation, b: RowBuilder) -> Row:
    if builder.find_nvcc() is None:
        row = b.finish()
        row.verdict, row.detail = SKIP, "no GPU and no nvcc: the cuda stage was neither compiled nor run"
        return row
    try:
        report = builder.compile_check(v.op, v.options.arch)
    except BuildError as e:
        b.fail(str(e))
        return b.finish()
    row = b.finish()
    row.verdict = NOT_RUN
    row.seconds = report.seconds if not report.cached else row.seconds
    row.detail = ("cached; " if report.cached else "") + report.summary()
    row.extras["kernels"] = [k.__dict__ for k in report.kernels]
    return row


def variant_fn(op: Op, variant: Callable[..., Any]) -> Fn:
    return lambda *xs: as_tuple(variant(*xs, *op.spec.param_values))


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _around(spec: Any, case: Case, like: torch.Tensor, terms: Any, spread: Any) -> Around:
    """The comparison's context; its probe is the first input of the result's shape, named as the spec names it."""
    name, probe = next(((n, x) for n, x in zip(spec.inputs, case.inputs) if tuple(x.shape) == tuple(like.shape)),
                       ("", None))
    return Around(terms, probe, spread, probe_name=name)


def _trim(text: str, lines: int = 6) -> str:
    kept = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(kept[:lines])
