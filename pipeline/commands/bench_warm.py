"""brrr bench's warm-up: what makes a case's first call slow, done in parallel worker processes before
the timing, which stays serial on the GPU.

Two things are slow the first time and cache on disk, so a process that did them leaves the next one
only a load: each op's cuda stage build (brrr's build cache) and torch.compile's compile of the oracle
for each case (inductor's FX-graph, autograd and Triton caches), 10-13 s and several seconds a case on
an H100 machine, one after another in the timing process until 2026-11-24 (`brrr bench` over every op
took more than 280 s). Numba's GPU compile is not cached on disk and stays in the timing process.

A worker's inputs have the case's shapes, dtypes and strides, read from the op's make_inputs under
FakeTensorMode (nothing drawn on the CPU: a 2^28-element randn takes seconds there), and values drawn
on the GPU: a compile depends on the former only. The worker makes the same calls bench makes before
it times (first_calls), so the graphs compiled are the ones the timing process asks for. Workers
compile with one thread each (they are many) and keep no Triton autotuning choice: they would have
timed the candidates while other workers shared the GPU, so the timing process times them itself on
an idle GPU (neither setting is part of inductor's cache key).
"""

from __future__ import annotations

import copyreg
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch._functorch.config as functorch_config

from ..base.workers import Lost, free_cpus, in_processes
from ..op.contract import as_tuple
from ..op.spec import Inputs, Op, Size

WarmKind = Literal["native", "build", "compile"]
# What a case times: the forward; the backward alone (from a graph the forward left, kept between
# calls, as a training step's backward finds it); or both, one after the other.
Pass = Literal["forward", "backward", "forward+backward"]
DEFAULT_PASSES: tuple[Pass, ...] = ("forward", "forward+backward")
SHORT_PASS: dict[Pass, str] = {"forward": "fwd", "backward": "bwd", "forward+backward": "fwd+bwd"}
GPU_SLACK = 1 << 30  # a worker's CUDA context and allocator slack beside its case's tensors
# A case's tensors at most, as multiples of its inputs' bytes: the inputs, the outputs, the upstream
# gradients and one gradient per input, and torch.compile's own temporaries of about as much again.
CASE_FOOTPRINT = 6


@dataclass(frozen=True)
class Case:
    """One timed case of brrr bench: an op (its folder), a size, a dtype and a pass."""

    op: str  # the op's folder, as load_op takes it
    size: Size
    dtype: str  # a torch dtype's name: "float32", "bfloat16"
    pass_: Pass

    @property
    def torch_dtype(self) -> torch.dtype:
        return getattr(torch, self.dtype)

    @property
    def gradients(self) -> bool:
        """Whether the case runs a backward (its compile then makes two graphs)."""
        return self.pass_ != "forward"


@dataclass(frozen=True)
class WarmTask:
    kind: WarmKind
    case: Case  # a build uses only case.op


@dataclass(frozen=True)
class Warmed:
    task: WarmTask
    seconds: float
    error: str = ""  # why it failed ("": it worked); the timing then meets the same failure and reports it


def runner(op: Op, fn: Callable[..., Any], sets: list[Inputs], pass_: Pass,
           upstreams: dict[int, tuple[torch.Tensor, ...]]) -> Callable[[int], None]:
    """One call of fn on input set i, as `pass_` times it: the forward; the forward then the backward
    from a random upstream gradient (upstreams[i], shared by the implementations of a case); or that
    backward alone, from the graph of set i's first call, which keeps it (retain_graph): only the
    first call of a set runs the forward."""
    spec = op.spec
    graphs: dict[int, tuple[tuple[torch.Tensor, ...], list[torch.Tensor]]] = {}

    def forward(i: int) -> tuple[tuple[torch.Tensor, ...], list[torch.Tensor]]:
        xs = sets[i]
        if pass_ != "forward":
            xs = tuple(x.detach().requires_grad_(x.is_floating_point()) for x in xs)
        out = as_tuple(fn(*xs, *spec.param_values))[: len(spec.outputs)]
        if pass_ != "forward" and i not in upstreams:
            upstreams[i] = tuple(torch.randn_like(o) for o in out)
        return out, [x for x in xs if x.requires_grad]

    def run(i: int) -> None:
        if pass_ == "backward":
            if i not in graphs:
                # A graph kept for many backwards: torch.compile's backward must not donate (reuse)
                # the saved buffers, or its second call fails (AOTAutograd's donated_buffer).
                with functorch_config.patch(donated_buffer=False):
                    graphs[i] = forward(i)
            out, wrt = graphs[i]
            torch.autograd.grad(out, wrt, upstreams[i], retain_graph=True)
            return
        out, wrt = forward(i)
        if pass_ == "forward+backward":
            torch.autograd.grad(out, wrt, upstreams[i])

    return run


def first_calls(op: Op, fn: Callable[..., Any], sets: list[Inputs], pass_: Pass) -> tuple[torch.Tensor, ...]:
    """The calls bench makes before it times a case: fn on the first set as made (the outputs whose
    bytes it counts), then one call as timed (with gradients for a backward case). For torch.compile
    these are two graphs where the second needs gradients: a warm-up that made only one would leave
    the other to compile inside the timing."""
    out = as_tuple(fn(*sets[0], *op.spec.param_values))
    runner(op, fn, sets, pass_, {})(0)
    return out


def plan(ops: Sequence[Op], cases: Sequence[Case]) -> list[WarmTask]:
    """brrr's own C++ library (the registered ops' autograd and calls, which the cuda rows time; built
    once per cache, 16 s), the builds (one an op), then a compile for each case of an op that has an
    oracle, the cases with a backward first (they compile two graphs; a backward case and a
    forward+backward one of the same size and dtype compile the same two, once). Longest first, so
    that no long task starts last."""
    with_oracle = {str(op.folder) for op in ops if op.spec.oracle is not None}
    builds = [WarmTask("build", Case(str(op.folder), 0, "float32", "forward")) for op in ops]
    unique: dict[tuple[str, str, str, bool], Case] = {}
    for c in cases:
        if c.op in with_oracle:
            unique.setdefault((c.op, str(c.size), c.dtype, c.gradients), c)
    compiles = sorted((WarmTask("compile", c) for c in unique.values()), key=lambda t: not t.case.gradients)
    native = [WarmTask("native", builds[0].case)] if builds else []
    return native + builds + compiles


def shaped_inputs(op: Op, case: Case, device: torch.device) -> Inputs:
    """Tensors of the shapes, dtypes and strides make_inputs gives the case, with values drawn on `device`."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fakes = op.spec.make_inputs(case.size, case.torch_dtype, torch.device("cpu"), torch.Generator().manual_seed(0))
    made = []
    for f in fakes:
        real = torch.empty_strided(tuple(f.shape), tuple(f.stride()), dtype=f.dtype, device=device)
        made.append(real.normal_() if real.is_floating_point() else real.zero_())
    return tuple(made)


def case_bytes(op: Op, case: Case) -> int:
    """The bytes of the case's inputs (read under FakeTensorMode: nothing is drawn)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        fakes = op.spec.make_inputs(case.size, case.torch_dtype, torch.device("cpu"), torch.Generator().manual_seed(0))
    return sum(f.numel() * f.element_size() for f in fakes)


def workers_for(tasks: int, largest_case: int, free_gpu: int | None) -> int:
    """Warm-up processes: one per free CPU, no more than the tasks, and no more than the GPU memory free
    holds cases of the largest size at once (each worker holds one case's tensors; None: no GPU to share)."""
    jobs = min(free_cpus(), tasks)
    if free_gpu is not None:
        jobs = min(jobs, free_gpu // (CASE_FOOTPRINT * largest_case + GPU_SLACK))
    return max(1, jobs)


def memory_format_named(name: str) -> torch.memory_format:
    return getattr(torch, name)


def _memory_format_reduced(fmt: torch.memory_format) -> tuple[Callable[[str], torch.memory_format], tuple[str]]:
    return memory_format_named, (str(fmt).removeprefix("torch."),)


def stable_cache_keys() -> None:
    """Make inductor's cache key of a graph the same in every process that calls this.

    The key pickles the inputs' metadata, their torch.memory_format among it. A memory_format has no
    __module__, so pickle names it after the first module in sys.modules through which it is reachable
    (any module that imported torch): `__mp_main__` in a spawned worker, torch._utils in the main
    process. The same graph then had two keys, and every compile the warm-up did missed in the timing
    process (seen with torch 2.13 on the CPU). Pickled through a named function, it is the same
    everywhere; the function also unpickles it."""
    copyreg.pickle(torch.memory_format, _memory_format_reduced)


def warm_one(task: WarmTask, arch: str, threads: int) -> Warmed:
    """Build the op's extension (for `arch`), or compile its oracle for one case with the timing process's
    torch `threads` (CPU code specializes on them, and they are in inductor's cache key there); never
    raises (the timing process meets the same failure and reports it)."""
    from ..op.loaders import load_op

    start = time.monotonic()
    stable_cache_keys()
    try:
        op = load_op(task.case.op)
        if task.kind == "native":
            from ..validation import native_library

            native_library.available()
        elif task.kind == "build":
            from ..cuda import builder

            builder.build_extension(op, arch)
        else:
            torch.set_num_threads(threads)
            compile_case(op, task.case)
    except Exception as e:  # a broken op or a compile error: the timing process meets it and reports it per row
        last = traceback.format_exception_only(type(e), e)[-1].strip()
        return Warmed(task, time.monotonic() - start, last[:300])
    return Warmed(task, time.monotonic() - start)


def compile_device() -> torch.device:
    """Where a worker compiles: the GPU bench times on, or the CPU where there is none (the tests)."""
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def compile_case(op: Op, case: Case) -> None:
    """torch.compile of the oracle through the calls bench makes, on tensors of the case's shapes."""
    import torch._inductor.config as inductor

    assert op.spec.oracle is not None
    inductor.compile_threads = 1
    inductor.autotune_local_cache = False
    torch._dynamo.reset()  # as bench does before each case: a fresh compile, not a recompile
    device = compile_device()
    sets = [shaped_inputs(op, case, device)]
    first_calls(op, torch.compile(op.spec.oracle), sets, case.pass_)
    if device.type == "cuda":
        torch.cuda.synchronize()
        del sets
        torch.cuda.empty_cache()


def warm_up(tasks: Sequence[WarmTask], jobs: int, arch: str) -> list[Warmed]:
    """Run the tasks in `jobs` processes, for the timing process's GPU `arch` and torch threads; each
    one's outcome, in the order given."""

    def lost(task: WarmTask, why: Lost) -> Warmed:
        return Warmed(task, why.seconds, why.why)

    return list(in_processes(warm_one, tasks, jobs, arch, torch.get_num_threads(), if_lost=lost))


def summary(warmed: Sequence[Warmed], jobs: int, seconds: float) -> str:
    """One line for the warm-up, and one for each task that failed."""
    builds = sum(w.task.kind != "compile" for w in warmed)  # brrr's own library among them
    busy = sum(w.seconds for w in warmed)
    lines = [f"warm-up: {builds} builds and {len(warmed) - builds} torch.compile cases in {jobs} processes, "
             f"{seconds:.0f} s ({busy:.0f} s of work)"]
    for w in warmed:
        if w.error:
            c = w.task.case
            what = w.task.kind if w.task.kind != "compile" else f"compile {c.size} {c.dtype} {SHORT_PASS[c.pass_]}"
            lines.append(f"  {c.op}: {what} failed in the warm-up ({w.error}); its timing reports it")
    return "\n".join(lines)
