"""Validate many ops, each in its own process when asked; a loading error becomes part of the outcome.

What is checked is plan.py; how a check runs is validate.py (`validate(op, options)` for one op
in this process).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import BrrrError
from ..base.files import shown
from ..verdict.report import FAIL, Row
from . import durations, gpu_fault
from .executor import Options, Validation, validate

__all__ = ["Options", "Outcome", "validate", "validate_guarded", "validate_many", "validate_named"]


@dataclass
class Outcome:
    """One op's validation as it travels back from a worker process."""

    name: str
    folder: str = ""
    rows: list[Row] = field(default_factory=list)
    error: str | None = None
    exit_code: int = 0
    traceback: str = ""
    seconds: float = 0.0  # the op's whole validation, loading included


def validate_named(name: str, options: Options, quiet: bool = False) -> Outcome:
    """Load and validate one op; a loading error becomes part of the outcome, not an exception.
    quiet: in a worker process (no tickers; estimates still show)."""
    import gc
    import time
    import traceback as tb

    from ..base import progress
    from ..op.loaders import load_op

    if quiet:
        progress.set_worker()
    start = time.monotonic()
    try:
        op = load_op(name)
        # What is alive now (torch, numba, the op's modules) is no garbage: frozen, Python's collector no
        # longer walks it at each full collection, 6% of a validation's CPU time (sigmoid and softmax:
        # 2.6 s of 41 s in the collector, 1.0 s frozen). Collected first (0.1 s), so a previous op's
        # garbage is freed, not kept frozen. A forked child for the CPU execution inherits it frozen.
        gc.collect()
        gc.freeze()
        if (refused := gpu_fault.refused_row(op.name)) is not None:
            return Outcome(name=op.name, folder=shown(op.folder), rows=[refused])
        rows = validate_guarded(op, options)
        return Outcome(name=op.name, folder=shown(op.folder), rows=rows, seconds=time.monotonic() - start)
    except BrrrError as e:
        return Outcome(name=name, error=str(e), exit_code=e.exit_code, traceback=tb.format_exc())


def validate_guarded(op: Any, options: Options) -> list[Row]:
    """validate(op, options), where a kernel's fault on the GPU (gpu_fault.py) ends the op with the rows
    so far and one naming the call that faulted, rather than ending brrr."""
    v = Validation(op, options)
    try:
        return v.run()
    except BaseException as e:
        if not gpu_fault.is_cuda_fault(e):
            raise
        return v.rows + [gpu_fault.lost_row(op.name, e)]


def validate_many(names: list[str], options: Options, jobs: int) -> Iterator[Outcome]:
    """Validate ops in order; with jobs > 1, in that many worker processes (each its own numba mode)."""
    from ..base.settings import check_all

    check_all()  # a malformed BRRR_* setting is a usage error before any work, not a default
    from ..base.workers import Schedule, free_cpus, in_processes, use_threads

    on_gpu = _runs_on_gpu(options)
    if (jobs <= 1 or len(names) <= 1) and not on_gpu:
        use_threads(free_cpus())  # torch's pool sized to the free cores, not to every core
        for name in names:
            outcome = validate_named(name, options)
            durations.record({name: outcome.seconds} if outcome.seconds else {}, options.stages)
            yield outcome
        return
    jobs = max(1, min(jobs, len(names)))
    if jobs > 1:
        print(f"  validating {len(names)} ops in {jobs} processes ...", file=sys.stderr, flush=True)
    # The longest first (durations.py): the last op started decides when all are done. One worker
    # alone keeps its progress tickers (nothing to interleave with).
    seconds: dict[str, float] = {}
    schedule = Schedule(order=durations.longest_first(names, options.stages),
                        as_done=_Progress(names) if jobs > 1 else None)
    outcomes = in_processes(validate_named, names, jobs, options, jobs > 1, if_lost=_lost, schedule=schedule)
    for name, outcome in zip(names, outcomes):  # in the order of `names`, whatever the order started
        if outcome.seconds:
            seconds[name] = outcome.seconds
        yield outcome
    durations.record(seconds, options.stages)


class _Progress:
    """One line on stderr as each op's worker ends, in the order they end: the tables come in the
    order asked, so a long first op would otherwise keep a run silent for minutes."""

    def __init__(self, names: list[str]) -> None:
        self.names, self.done = names, 0

    def __call__(self, index: int, outcome: Outcome) -> None:
        from ..verdict.report import summary

        self.done += 1
        verdict = "cannot validate" if outcome.error is not None else summary(outcome.rows)
        took = f", {outcome.seconds:.0f} s" if outcome.seconds else ""  # none where the worker died
        print(f"  {outcome.name}: {verdict}{took} ({self.done} of {len(self.names)} ops done)",
              file=sys.stderr, flush=True)


def _runs_on_gpu(options: Options) -> bool:
    """Whether the op's own compiled code runs in this process: the cuda stage, or numba's kernels, on a
    GPU. The CPU execution has its own child process (cuda/isolated.py); on a GPU nothing stands between
    the op's host code (an assert, a wild pointer in binding.cpp) and brrr, so the validation runs in a
    worker process, whose death is one FAIL row (_lost) and not the end of brrr. It costs the worker's
    start, about 2 s of importing torch."""
    from .executor import Where

    return (("cuda" in options.stages and options.where("cuda") == Where.GPU)
            or ("numba" in options.stages and options.numba_gpu))


# The row of an op whose worker process died: it covers the whole validation, no one stage or dtype.
WHOLE_RUN = "all"


def _lost(name: str, lost: Any) -> Outcome:
    """An op whose worker process died: code running in the worker crashed it where isolation does
    not reach (the extension on a GPU runs in the worker; a reference or numba stage's own C code).
    One FAIL row naming the op, so the table, the exit code and --json keep it beside the other ops'
    verdicts, which go on."""
    row = Row(name, WHOLE_RUN, "worker process", "-", FAIL, seconds=lost.seconds,  # type: ignore[arg-type]
              detail=f"the process validating {name} died: {lost.why}, so none of its checks has a verdict. "
                     f"The op's own code ended it (its message, an assert's for one, is printed above): "
                     f"one --stage at a time shows which stage, and `brrr validate {name} --stage cuda "
                     f"--cuda-on-cpu` runs the cuda stage's code under brrr's CPU execution, which names "
                     f"the line of a crash")
    return Outcome(name=name, folder=name, rows=[row])
