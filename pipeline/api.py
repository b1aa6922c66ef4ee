"""The Python API for a verdict: `brrr_kernels.validate(op)` returns a `Report`, for notebooks,
scripts and tests (the pytest plugin builds on it). The same rows as `brrr validate` prints."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from .base.errors import BrrrError, UsageError
from .verdict.report import FAIL, NOT_RUN, PASS, SKIP, Row, format_table, summary

StagesArg = str | Iterable[str] | None


@dataclass
class Report:
    """One op's validation: its rows, one per stage, check and dtype, as `brrr validate` prints them."""

    op: str
    folder: str
    seed: int
    stages: tuple[str, ...]
    rows: list[Row] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when no check failed and at least one ran (`compiled, not run` and skips are not failures)."""
        return not self.failed and any(r.verdict in (PASS, NOT_RUN) for r in self.rows)

    @property
    def failed(self) -> list[Row]:
        """The failing rows; each row's `detail` says why."""
        return [r for r in self.rows if r.verdict == FAIL]

    def row(self, stage: str, check: str, dtype: str | None = None) -> Row:
        """The row of one check (and dtype, where the check has one per dtype)."""
        found = [r for r in self.rows if r.stage == stage and r.check == check and dtype in (None, r.dtype)]
        if len(found) != 1:
            have = ", ".join(f"{r.stage}/{r.check}/{r.dtype}" for r in self.rows)
            raise KeyError(f"{len(found)} rows match {stage}/{check}/{dtype or '*'} in {self.op}'s report; it has: {have}")
        return found[0]

    def summary(self) -> str:
        return f"{self.op}: {summary(self.rows)}"

    def to_dict(self) -> dict[str, object]:
        return {"op": self.op, "folder": self.folder, "seed": self.seed, "stages": list(self.stages),
                "passed": self.passed, "rows": [asdict(r) for r in self.rows]}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=str)

    def __str__(self) -> str:
        return f"== {self.op}  ({self.folder}, seed {self.seed})\n{format_table(self.rows)}\n-- {self.summary()}"

    def __repr__(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        return f"<brrr Report {self.op} {verdict}: {summary(self.rows)}; seed {self.seed}>\n{format_table(self.rows)}"

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:  # IPython and Jupyter show the table
        printer.text(repr(self))  # type: ignore[attr-defined]


def _stages(stages: StagesArg) -> tuple[str, ...]:
    from .op.spec import STAGES

    chosen = (stages,) if isinstance(stages, str) else tuple(stages or STAGES)
    unknown = [s for s in chosen if s not in STAGES]
    if unknown or not chosen:
        raise BrrrError(f"stages={list(chosen)!r}: each must be one of {', '.join(STAGES)}")
    return chosen


def _check_seed(seed: object) -> None:
    """A seed is a whole number from 0 to 2^64 - 1 (what a report prints); anything else is brrr's own
    message, not torch's from deep inside (`validate(seed="abc")`)."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        raise UsageError(f"seed={seed!r}: expected a whole number from 0 to 2**64 - 1 (the seed a report shows), "
                         "or None for fresh random inputs")


def validate(op: str | os.PathLike[str], stages: StagesArg = None, seed: int | None = None, *,
             gpu: bool = False, arch: str | None = None, quiet: bool = False) -> Report:
    """Validate an op (a built-in name or a folder) as `brrr validate` does and return its Report.

    stages: the stages to check, e.g. ["reference", "numba"] (default: all three); seed: replay a
    run (default: fresh random inputs; the report keeps the seed); gpu: the numba stage on the GPU
    instead of the simulator (numba's mode is fixed per process); arch: the compile check's target;
    quiet: no progress lines on stderr.
    A folder that cannot be loaded raises BrrrError with the message `brrr validate` prints.
    """
    from .base import progress
    from .base.settings import check_all
    from .cuda import builder
    from .sim.numba_env import use_simulator
    from .validation import runner

    chosen = _stages(stages)
    _check_seed(seed)
    check_all()
    use_simulator(not gpu)
    options = runner.Options(stages=chosen, numba_gpu=gpu, arch=arch or builder.DEFAULT_ARCH)
    if seed is not None:
        options.seed = seed
    was_quiet = progress.is_quiet()
    progress.set_quiet(quiet or was_quiet)
    try:
        outcome = runner.validate_named(os.fspath(op), options)
    finally:
        progress.set_quiet(was_quiet)
    if outcome.error is not None:
        error = BrrrError(outcome.error)
        error.exit_code = outcome.exit_code
        raise error
    return Report(op=outcome.name, folder=outcome.folder, seed=options.seed, stages=chosen, rows=outcome.rows)


__all__ = ["Report", "validate", "PASS", "FAIL", "NOT_RUN", "SKIP"]
