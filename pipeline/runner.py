"""Validate an op stage by stage: each stage against the one before it, and with gradcheck.

reference  gradcheck in float64; forward and backward against the oracle; edge inputs
numba      against the reference on fresh random inputs, sizes around the block size,
           edge inputs, every output poisoned with NaN, inputs checked for writes; gradcheck
cuda       compiled (and, without a GPU, only that); on a GPU: against the reference at
           large odd sizes, against the numba stage, non-contiguous inputs, edge inputs, gradcheck
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.autograd.gradcheck import GradcheckError

from . import builder
from .checks import Comparison, StageFault, compare, fault_from, same_bits
from .errors import BrrrError, BuildError, OpLoadError
from .files import shown
from .function import call
from .loaders import Stage, load_cuda, load_numba, load_reference
from .progress import ticking
from .report import FAIL, NOT_RUN, PASS, SKIP, Row
from .scaffold import UNFINISHED_MARK
from .spec import STAGES, Inputs, Op, OpSpec, Size, as_tuple

Fn = Callable[..., tuple[torch.Tensor, ...]]
Replay = tuple[tuple[torch.Tensor, ...], torch.dtype]  # the upstream gradient and dtype of a failing case


@dataclass
class Options:
    stages: tuple[str, ...] = STAGES
    seed: int = field(default_factory=lambda: int.from_bytes(os.urandom(4), "little"))
    numba_gpu: bool = False
    arch: str = builder.DEFAULT_ARCH
    huge: bool = False


@contextmanager
def poisoned() -> Iterator[None]:
    """Make every torch.empty* (Python and C++) fill with NaN, so unwritten outputs show."""
    was = torch.are_deterministic_algorithms_enabled()
    was_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    was_fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was, warn_only=was_warn)
        torch.utils.deterministic.fill_uninitialized_memory = was_fill


def noncontiguous(t: torch.Tensor) -> torch.Tensor:
    """The same values as `t`, viewed with a stride of 2 in the last dimension."""
    if t.dim() == 0:
        return t
    wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype, device=t.device)
    wide[..., ::2] = t
    return wide[..., ::2]


@dataclass
class Case:
    label: str
    inputs: Inputs


def stage_fn(stage: Stage) -> Fn:
    return lambda *xs: call(stage, *xs)


def oracle_fn(op: Op) -> Fn:
    oracle = op.spec.oracle
    assert oracle is not None
    return lambda *xs: as_tuple(oracle(*xs, *op.spec.param_values))


class Trial:
    """Forward, then (if asked) backward, through `fn` on copies of the inputs on `device`.

    Outputs are poisoned (see `poisoned`), and the inputs are compared bit for bit before and
    after every call so a stage that writes into them is caught.
    """

    def __init__(self, fn: Fn, inputs: Inputs, device: str, dtype: torch.dtype | None) -> None:
        self.xs = []
        for x in inputs:
            moved = x.to(device=device, dtype=dtype if (dtype and x.is_floating_point()) else x.dtype)
            self.xs.append(moved.detach().requires_grad_(moved.is_floating_point()))
        self.before = [x.detach().clone() for x in self.xs]
        with poisoned():
            self.outputs = fn(*self.xs)
        self.grads: tuple[torch.Tensor | None, ...] = ()

    def backward(self, upstream: tuple[torch.Tensor, ...]) -> None:
        wrt = [x for x in self.xs if x.requires_grad]
        ups = [u.to(device=o.device, dtype=o.dtype) for u, o in zip(upstream, self.outputs)]
        with poisoned():
            grads = iter(torch.autograd.grad(self.outputs, wrt, ups, allow_unused=True))
        self.grads = tuple(next(grads) if x.requires_grad else None for x in self.xs)

    def changed_inputs(self) -> bool:
        return any(not same_bits(x, b) for x, b in zip(self.xs, self.before))


class RowBuilder:
    """Folds the comparisons of many cases into one report row: the worst case speaks for all."""

    def __init__(self, op: Op, stage: str, check: str, dtype: str, phase: str = "forward") -> None:
        self.row = Row(op=op.name, stage=stage, check=check, dtype=dtype, verdict=PASS)
        self.phase = phase  # whose kernels a replay in `brrr debug` should stop in
        self.op = op
        self.best: Comparison | None = None
        self.problems: list[str] = []
        self.target: tuple[Any, ...] | None = None
        self.start = time.monotonic()

    def add(self, comparison: Comparison, case: Case, replay: Replay | None = None) -> None:
        if comparison.worst is not None:
            comparison.worst.case = case.label
        if not comparison.ok:
            self.problems.append(f"[{case.label}] {comparison.reason}")
            if replay is not None and comparison.worst is not None:
                self.keep_for_debugging(case, replay, f"--index {comparison.worst.flat_index}", comparison.excess)
        if self.best is None or comparison.excess > self.best.excess:
            self.best = comparison

    def fault(self, fault: StageFault, case: Case, replay: Replay | None = None) -> None:
        self.problems.append(f"[{case.label}] {fault.describe()}")
        if replay is not None and fault.block is not None:
            self.keep_for_debugging(case, replay, _place_flags(fault))

    def fail(self, text: str) -> None:
        self.problems.append(text)

    def keep_for_debugging(self, case: Case, replay: Replay, where: str, excess: float = float("inf")) -> None:
        """Remember the worst failing case; finish() saves its inputs for `brrr debug`."""
        if self.row.stage != "reference" and (self.target is None or excess > self.target[-1]):
            self.target = (case, replay, where, excess)

    def _save_target(self) -> str:
        from .debugger import save_failure

        case, (upstream, dtype), where, _ = self.target
        phase = self.phase
        slug = "".join(c if c.isalnum() else "-" for c in f"{self.row.stage}-{self.row.check}-{self.row.dtype}")
        path = builder.cache_root() / "failures" / f"{self.op.name}-{slug}.pt"
        inputs = tuple(x.to(dtype) if x.is_floating_point() else x for x in case.inputs)
        save_failure(path, self.op, inputs, tuple(u.to(dtype) for u in upstream), phase)
        phase_flag = " --phase backward" if phase == "backward" else ""
        return f"debug it: brrr debug {_op_ref(self.op)} --input {path}{phase_flag} {where}"

    def finish(self) -> Row:
        row = self.row
        row.seconds = time.monotonic() - self.start
        if self.best is not None:
            row.max_abs, row.max_rel, row.worst = self.best.max_abs, self.best.max_rel, self.best.worst
            layout = self.op.spec.layouts.get(row.stage)
            if row.worst is not None and layout is not None and row.stage != "reference":
                itemsize = getattr(torch, row.dtype).itemsize if hasattr(torch, row.dtype) else 1
                row.worst.block, row.worst.thread = layout.place(row.worst.flat_index, row.worst.shape, itemsize)
        if self.problems:
            row.verdict = FAIL
            row.detail = "\n".join(self.problems[:6]) + (f"\n... {len(self.problems) - 6} more" if len(self.problems) > 6 else "")
            if self.target is not None:
                row.detail += "\n" + self._save_target()
        return row


class Validator:
    def __init__(self, op: Op, options: Options) -> None:
        self.op = op
        self.spec = op.spec
        self.options = options
        self.gen = torch.Generator().manual_seed(options.seed)
        self.gpu = torch.cuda.is_available()
        self.rows: list[Row] = []
        self.stages: dict[str, Stage] = {}

    # -- inputs ---------------------------------------------------------------------------

    def random_cases(self, sizes: tuple[Size, ...], dtype: torch.dtype, device: str) -> list[Case]:
        return [Case(f"size {s}", self._spec_call("make_inputs", self.spec.make_inputs, s, dtype, torch.device(device),
                                                  self.gen)) for s in sizes]

    def edge_cases(self, dtype: torch.dtype, device: str) -> list[Case]:
        return [Case(name, self._spec_call(f"edge case {name!r}", make, dtype, torch.device(device)))
                for name, make in self.spec.edge_cases.items()]

    def _spec_call(self, what: str, fn: Callable[..., Inputs], *args: Any) -> Inputs:
        """Inputs from the op's spec; a spec that fails to make them is a loading error, named as such."""
        try:
            return tuple(fn(*args))
        except Exception as e:
            given = ", ".join(str(a) for a in args[:2])
            raise OpLoadError(f"{self.op.path('spec')}: {what}({given}) raised {type(e).__name__}: {e}") from e

    def upstream_for(self, outputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        return tuple(torch.randn(o.shape, dtype=torch.float64, generator=self.gen) for o in outputs)

    # -- the generic comparison -------------------------------------------------------------

    def compare_cases(self, stage: str, checks: tuple[str, str], got_fn: Fn, got_device: str,
                      want_fn: Fn, want_device: str, want_dtype: torch.dtype | None,
                      cases: list[Case], dtype: torch.dtype, intact: RowBuilder | None) -> list[Row]:
        """Forward (and backward) of got_fn against want_fn on each case; one row per check."""
        fwd = RowBuilder(self.op, stage, checks[0], _dtype_name(dtype))
        bwd = RowBuilder(self.op, stage, checks[1], _dtype_name(dtype), "backward") if checks[1] else None
        tol = self.spec.tolerance(dtype)
        for case in cases:
            try:
                want = Trial(want_fn, case.inputs, want_device, want_dtype)
                # Both sides get the same upstream gradient: rounded to the stage's dtype first, or the
                # float64 reference would see digits the stage never could (bf16 column sums differ by O(1)).
                upstream = tuple(u.to(dtype).double() for u in self.upstream_for(want.outputs))
                if bwd:
                    want.backward(upstream)
            except Exception as e:  # the expected side failing is a fault of that stage
                fwd.fail(f"[{case.label}] the expected values could not be computed: {type(e).__name__}: {e}")
                continue
            source = self.stages[stage].source if stage in self.stages else self.op.path(stage)
            try:
                got = Trial(got_fn, case.inputs, got_device, dtype)
            except BrrrError as e:
                fwd.fail(f"[{case.label}] {e}")
                continue
            except Exception as e:
                fwd.fault(fault_from(e, source), case, (upstream, dtype))
                continue
            shapes_ok = True
            for name, g, w in zip(self.spec.outputs, got.outputs, want.outputs):
                c = compare(name, g, w, tol, _probe(case.inputs, g))
                shapes_ok &= c.shape_ok
                fwd.add(c, case, (upstream, dtype))
            if bwd is not None and shapes_ok:
                try:
                    got.backward(upstream)
                except Exception as e:
                    bwd.fault(fault_from(e, source), case, (upstream, dtype))
                    continue
                for name, g, w in zip(self.spec.inputs, got.grads, want.grads):
                    if g is None or w is None:
                        if (g is None) != (w is None):
                            bwd.fail(f"[{case.label}] grad {name}: got {'none' if g is None else 'a tensor'}, "
                                     f"expected {'none' if w is None else 'a tensor'}")
                        continue
                    bwd.add(compare(f"grad_{name}", g, w, tol, _probe(case.inputs, g)), case, (upstream, dtype))
            if intact is not None and got.changed_inputs():
                intact.fail(f"[{case.label}] {stage} wrote into its input(s) during a {_dtype_name(dtype)} call")
        return [fwd.finish()] + ([bwd.finish()] if bwd else [])

    def gradcheck(self, stage: Stage, device: str) -> Row:
        b = RowBuilder(self.op, stage.name, "gradcheck", "float64")
        inputs = self._spec_call("make_inputs", self.spec.make_inputs, self.spec.gradcheck_size, torch.float64,
                                 torch.device(device), self.gen)
        xs = tuple(x.detach().requires_grad_(x.is_floating_point()) for x in inputs)
        try:
            with poisoned():
                torch.autograd.gradcheck(stage_fn(stage), xs, raise_exception=True)
        except GradcheckError as e:
            b.fail(f"gradcheck in float64, size {self.spec.gradcheck_size}: " + _trim(str(e)))
        except Exception as e:
            b.fault(fault_from(e, stage.source), Case(f"size {self.spec.gradcheck_size}", inputs))
        return b.finish()

    # -- stages -----------------------------------------------------------------------------

    def validate(self) -> list[Row]:
        wanted = self.options.stages
        ref = self.stages["reference"] = load_reference(self.op)
        ref_todo = self.unfinished(ref)
        if "reference" in wanted:
            if ref_todo:
                self.rows.append(Row(self.op.name, "reference", "unfinished", "-", FAIL, detail=ref_todo))
            else:
                with ticking(f"{self.op.name}: reference stage"):
                    self.reference_checks()
        if "numba" in wanted or "cuda" in wanted:
            self.stages["numba"] = load_numba(self.op, gpu=self.options.numba_gpu)
        if "numba" in wanted:
            where = "on the GPU" if self.options.numba_gpu else "in the CUDA simulator"
            numba_todo = self.unfinished(self.stages["numba"])
            if numba_todo:
                self.rows.append(Row(self.op.name, "numba", "unfinished", "-", FAIL, detail=numba_todo))
            elif ref_todo:
                self.rows.append(Row(self.op.name, "numba", "all", "-", SKIP, detail="the reference stage is unfinished"))
            else:
                with ticking(f"{self.op.name}: numba stage {where}"):
                    self.numba_checks()
        if "cuda" in wanted:
            if any(UNFINISHED_MARK in self.op.path(part).read_text() for part in ("cuda", "binding")):
                self.rows.append(Row(self.op.name, "cuda", "unfinished", "-", FAIL,
                                     detail=f"write the kernels in {shown(self.op.path('cuda'))} and forward() and "
                                            f"backward() in {shown(self.op.path('binding'))}, "
                                            f"then delete the '{UNFINISHED_MARK}' line"))
            else:
                self.cuda_checks()
        if self.options.huge:
            self.huge_check()
        return self.rows

    def unfinished(self, stage: Stage) -> str | None:
        """A stage that still raises NotImplementedError (a `brrr new` template) is reported once, as such."""
        spec = self.spec
        inputs = self._spec_call("make_inputs", spec.make_inputs, spec.sim_sizes[0], torch.float64,
                                 torch.device(stage.device), self.gen)
        try:
            results = as_tuple(stage.forward(*inputs, *spec.param_values))
            named = dict(zip(spec.inputs, inputs)) | dict(zip(spec.outputs + spec.stats, results))
            upstream = tuple(torch.ones_like(r) for r in results[: len(spec.outputs)])
            stage.backward(*upstream, *(named[n] for n in spec.saved if n in named), *spec.param_values)
        except NotImplementedError as e:
            return "unfinished: " + fault_from(e, stage.source).describe()
        except Exception:
            return None  # any other error is for the checks to report
        return None

    def reference_checks(self) -> None:
        ref = self.stages["reference"]
        self.rows.append(self.gradcheck(ref, "cpu"))
        if self.spec.oracle is None:
            self.rows.append(Row(self.op.name, "reference", "oracle", "-", SKIP, detail="the spec names no oracle"))
            return
        oracle = oracle_fn(self.op)
        for dtype in self.spec.stage_dtypes("reference"):
            cases = self.random_cases(self.spec.sim_sizes, dtype, "cpu")
            self.rows += self.compare_cases("reference", ("forward vs oracle", "backward vs oracle"), stage_fn(ref), "cpu",
                                            oracle, "cpu", torch.float64, cases, dtype, None)
        for dtype in self.spec.stage_dtypes("reference"):
            edge = self.edge_cases(dtype, "cpu")
            if edge:
                self.rows += self.compare_cases("reference", ("edge inputs", ""), stage_fn(ref), "cpu",
                                                oracle, "cpu", torch.float64, edge, dtype, None)

    def numba_checks(self) -> None:
        numba, ref = self.stages["numba"], self.stages["reference"]
        device = numba.device
        sizes = self.spec.gpu_sizes if self.options.numba_gpu else self.spec.sim_sizes
        intact = RowBuilder(self.op, "numba", "inputs unchanged", "all")
        for dtype in self.spec.stage_dtypes("numba"):
            self.rows += self.compare_cases("numba", ("forward", "backward"), stage_fn(numba), device,
                                            stage_fn(ref), device, torch.float64,
                                            self.random_cases(sizes, dtype, "cpu"), dtype, intact)
            if self.spec.edge_cases:
                self.rows += self.compare_cases("numba", ("edge forward", "edge backward"), stage_fn(numba), device,
                                                stage_fn(ref), device, torch.float64,
                                                self.edge_cases(dtype, "cpu"), dtype, intact)
        self.rows.append(intact.finish())
        if torch.float64 in self.spec.stage_dtypes("numba"):
            self.rows.append(self.gradcheck(numba, device))

    def cuda_checks(self) -> None:
        compile_row = RowBuilder(self.op, "cuda", "compile", self.options.arch if not self.gpu else "native")
        if not self.gpu:
            self.rows.append(self.compile_only(compile_row))
            return
        try:
            ext = builder.build_extension(self.op)
        except BuildError as e:
            compile_row.fail(str(e))
            self.rows.append(compile_row.finish())
            return
        row = compile_row.finish()
        row.detail = f"{'cached' if ext.cached else 'built'} in {ext.seconds:.1f}s"
        row.seconds = ext.seconds
        self.rows.append(row)
        cuda = self.stages["cuda"] = load_cuda(self.op, ext)
        ref, numba = self.stages["reference"], self.stages["numba"]
        intact = RowBuilder(self.op, "cuda", "inputs unchanged", "all")
        with ticking(f"{self.op.name}: cuda stage on the GPU"):
            for dtype in self.spec.stage_dtypes("cuda"):
                cases = self.random_cases(self.spec.gpu_sizes, dtype, "cpu")
                self.rows += self.compare_cases("cuda", ("forward", "backward"), stage_fn(cuda), "cuda",
                                                stage_fn(ref), "cuda", torch.float64, cases, dtype, intact)
                if dtype in self.spec.stage_dtypes("numba"):
                    small = self.random_cases(self.spec.sim_sizes, dtype, "cpu")
                    self.rows += self.compare_cases("cuda", ("forward vs numba", "backward vs numba"), stage_fn(cuda),
                                                    "cuda", stage_fn(numba), numba.device, None, small, dtype, intact)
                strided = [Case(f"non-contiguous, {c.label}", tuple(noncontiguous(x) for x in c.inputs))
                           for c in self.random_cases(self.spec.gpu_sizes[-2:], dtype, "cuda")]
                self.rows += self.compare_cases("cuda", ("non-contiguous fwd", "non-contiguous bwd"), stage_fn(cuda),
                                                "cuda", stage_fn(ref), "cuda", torch.float64, strided, dtype, intact)
                if self.spec.edge_cases:
                    self.rows += self.compare_cases("cuda", ("edge forward", "edge backward"), stage_fn(cuda), "cuda",
                                                    stage_fn(ref), "cuda", torch.float64,
                                                    self.edge_cases(dtype, "cpu"), dtype, intact)
                for name, variant in ext.variants().items():  # first versions kept for bench: forward only
                    self.rows += self.compare_cases("cuda", (name, ""), self.variant_fn(variant), "cuda",
                                                    stage_fn(ref), "cuda", torch.float64, cases, dtype, intact)
            self.rows.append(intact.finish())
            if torch.float64 in self.spec.stage_dtypes("cuda"):
                self.rows.append(self.gradcheck(cuda, "cuda"))

    def variant_fn(self, variant: Callable[..., Any]) -> Fn:
        return lambda *xs: as_tuple(variant(*xs, *self.spec.param_values))

    def huge_check(self) -> None:
        """The cuda stage on more than 2**31 elements, checked on a sample that includes the last ones.

        Only for elementwise ops (output[i] depends on the inputs at i, broadcast): the reference
        runs on the inputs gathered at the sampled positions.
        """
        b = RowBuilder(self.op, "cuda", "huge (> 2^31 elements)", "float32")
        if self.spec.huge is None:
            row = b.finish()
            row.verdict, row.detail = SKIP, "the spec declares no huge inputs (elementwise ops only)"
            self.rows.append(row)
            return
        if "cuda" not in self.stages:
            b.fail("the cuda stage was not built (run with the cuda stage, on a GPU)")
            self.rows.append(b.finish())
            return
        try:
            positions = self._huge_compare(b)
        except Exception as e:  # an illegal address from a 32-bit index lands here
            b.fault(fault_from(e, self.op.path("cuda")), Case("huge", ()))
            positions = None
        row = b.finish()
        if row.worst is not None and positions is not None:
            row.worst.index = (int(positions[row.worst.flat_index]),)
        self.rows.append(row)

    def _huge_compare(self, b: RowBuilder) -> torch.Tensor:
        cuda, ref = self.stages["cuda"], self.stages["reference"]
        gen = torch.Generator(device="cuda").manual_seed(self.options.seed)
        with ticking(f"{self.op.name}: cuda stage on more than 2^31 elements"):
            inputs = self.spec.huge(torch.device("cuda"), gen)
            with torch.no_grad(), poisoned():
                outputs = as_tuple(cuda.forward(*inputs, *self.spec.param_values))
                shape = outputs[0].shape
                upstream = torch.randn(shape, device="cuda", generator=gen, dtype=outputs[0].dtype)
                named = dict(zip(self.spec.inputs, inputs)) | dict(zip(self.spec.outputs + self.spec.stats, outputs))
                grads = as_tuple(cuda.backward(upstream, *(named[n] for n in self.spec.saved), *self.spec.param_values))
            n = outputs[0].numel()
            b.row.extras["elements"] = n
            positions = torch.cat([torch.arange(0, 4096), torch.arange(2**31 - 4096, min(2**31 + 4096, n)),
                                   torch.randint(0, n, (1 << 16,), generator=self.gen), torch.arange(n - 4096, n)])
            positions = positions.unique().to("cuda")
            where = torch.unravel_index(positions, shape)  # index the broadcast views: no 8 GB copies
            flat = [torch.broadcast_to(x, shape)[where].double() for x in inputs]
            want = Trial(stage_fn(ref), tuple(flat), "cuda", torch.float64)
            want_grads = as_tuple(ref.backward(upstream.reshape(-1)[positions].double(),
                                               *(_named_flat(self.spec, flat, want.outputs, s) for s in self.spec.saved),
                                               *self.spec.param_values))
            case = Case(f"{n} elements, {positions.numel()} sampled", tuple(flat))
            tol = self.spec.tolerance(torch.float32)
            b.add(compare(self.spec.outputs[0], outputs[0].reshape(-1)[positions], want.outputs[0], tol, flat[0]), case)
            for name, g, w in zip(self.spec.inputs, grads, want_grads):
                if g is not None and g.shape == shape:  # elementwise gradients; reduced ones are not sampled
                    b.add(compare(f"grad_{name}", g.reshape(-1)[positions], w, tol, flat[0]), case)
            del inputs, outputs, grads, upstream
            torch.cuda.empty_cache()
        return positions

    def compile_only(self, b: RowBuilder) -> Row:
        if builder.find_nvcc() is None:
            row = b.finish()
            row.verdict, row.detail = SKIP, "no GPU and no nvcc: the cuda stage was neither compiled nor run"
            return row
        try:
            report = builder.compile_check(self.op, self.options.arch)
        except BuildError as e:
            b.fail(str(e))
            return b.finish()
        row = b.finish()
        row.verdict = NOT_RUN
        row.seconds = report.seconds if not report.cached else row.seconds
        row.detail = ("cached; " if report.cached else "") + report.summary()
        row.extras["kernels"] = [k.__dict__ for k in report.kernels]
        return row


def _named_flat(spec: OpSpec, flat_inputs: list[torch.Tensor], outputs: tuple[torch.Tensor, ...], name: str) -> torch.Tensor:
    named = dict(zip(spec.inputs, flat_inputs)) | dict(zip(spec.outputs + spec.stats, outputs))
    return named[name]


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _probe(inputs: Inputs, like: torch.Tensor) -> torch.Tensor | None:
    return next((x for x in inputs if tuple(x.shape) == tuple(like.shape)), None)


def _trim(text: str, lines: int = 6) -> str:
    kept = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(kept[:lines])


def validate(op: Op, options: Options) -> list[Row]:
    return Validator(op, options).validate()


@dataclass
class Outcome:
    """One op's validation as it travels back from a worker process."""

    name: str
    folder: str = ""
    rows: list[Row] = field(default_factory=list)
    error: str | None = None
    exit_code: int = 0
    traceback: str = ""


def validate_named(name: str, options: Options, quiet: bool = False) -> Outcome:
    """Load and validate one op; a loading error becomes part of the outcome, not an exception."""
    import traceback as tb

    from . import progress
    from .spec import load_op

    if quiet:
        progress.set_quiet(True)
    try:
        op = load_op(name)
        return Outcome(name=op.name, folder=shown(op.folder), rows=validate(op, options))
    except BrrrError as e:
        return Outcome(name=name, error=str(e), exit_code=e.exit_code, traceback=tb.format_exc())


def validate_many(names: list[str], options: Options, jobs: int) -> Iterator[Outcome]:
    """Validate ops in order; with jobs > 1, in that many worker processes (each its own numba mode)."""
    if jobs <= 1 or len(names) <= 1:
        for name in names:
            yield validate_named(name, options)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")  # fork after torch and numba have started threads is unsafe
    with ProcessPoolExecutor(max_workers=min(jobs, len(names)), mp_context=context) as pool:
        futures = [pool.submit(validate_named, name, options, True) for name in names]
        print(f"  validating {len(names)} ops in {min(jobs, len(names))} processes ...", file=sys.stderr, flush=True)
        for future in futures:  # in the order asked, each as soon as it is ready
            yield future.result()


def _place_flags(fault: StageFault) -> str:
    return f"--block {','.join(map(str, fault.block or ()))} --thread {','.join(map(str, fault.thread or ()))}"


def _op_ref(op: Op) -> str:
    from .spec import BUILTIN_DIR

    return op.name if op.folder.parent == BUILTIN_DIR else shown(op.folder)
