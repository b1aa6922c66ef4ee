"""Folding the comparisons of a check's many cases into its one report row."""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

import torch

from ..op.spec import Op
from ..verdict.compare import Comparison
from ..verdict.faults import StageFault, fault_key
from ..verdict.replay import Failure, save_failure
from ..verdict.report import FAIL, PASS, UNRUN, Problem, Row
from .trial import Case

if TYPE_CHECKING:
    from .plan import Check

Replay = tuple[tuple[torch.Tensor, ...], torch.dtype]  # the upstream gradient and dtype of a failing case


class RowBuilder:
    """One check's row: the worst case speaks for all; the worst failing case is kept for `brrr debug`."""

    def __init__(self, op: Op, check: Check, dtype: str) -> None:
        self.row = Row(op=op.name, stage=check.stage, check=check.name, dtype=dtype, verdict=PASS)
        self.op = op
        self.phase = check.phase  # whose kernels a replay in `brrr debug` should stop in
        self.worst: Comparison | None = None
        self.problems: list[str] = []
        self.failure: Failure | None = None
        self.failure_excess = 0.0
        self.max_abs = 0.0  # over every element of every case, not only the worst case's
        self.max_rel: float | None = None  # over the elements whose bound is relative (compare.py)
        self.needs_cases = False  # a row that compares cases: with none run, it measured nothing
        self.covered: list[str] = []  # the cases this check ran on, by label
        self.unrun: list[str] = []  # the cases it could not run on, each with why
        self.start = time.monotonic()
        self.spread_seconds = 0.0  # of which measuring the spread under rounding (executor._LazySpread)
        self.layout_tried = False  # a failing layout case's cause was looked for (executor._layout_cause)

    def ran(self, case: Case) -> None:
        if case.label not in self.covered:
            self.covered.append(case.label)

    def not_run(self, case: Case, why: str, what: str = "not run") -> None:
        """A case not run (or, `what`, run and not judged), with why; cases of the same reason share one line."""
        for i, line in enumerate(self.unrun):
            if line.endswith(f"] {what}: {why}"):
                self.unrun[i] = f"{line[: line.rindex(f'] {what}: ')]}, {case.label}] {what}: {why}"
                return
        self.unrun.append(f"[{case.label}] {what}: {why}")

    def add(self, comparison: Comparison, case: Case, replay: Replay | None = None) -> None:
        self.ran(case)
        for why in comparison.widened:
            widened = self.row.extras.setdefault("widened", [])
            if why not in widened:
                widened.append(why)
        self.max_abs = max(self.max_abs, comparison.max_abs)
        if comparison.max_rel is not None:
            self.max_rel = max(self.max_rel or 0.0, comparison.max_rel)
        if comparison.worst is not None:
            comparison.worst.case = case.label
        if not comparison.ok:
            self._problem(case.label, comparison.reason)
            worst = comparison.worst
            if replay is not None and worst is not None:
                # `brrr debug --index` names an element of the phase's first result; any other tensor's
                # element is replayed by its writer, where the simulator saw one.
                first = worst.tensor in (self.op.spec.outputs[0], f"grad_{self.op.spec.inputs[0]}")
                if first or worst.block is None:
                    failure = Failure(self.op, *_cast(case, replay), self.phase, index=worst.flat_index, stage=self.row.stage)
                else:
                    failure = Failure(self.op, *_cast(case, replay), self.phase, block=worst.block, thread=worst.thread,
                                      stage=self.row.stage, kernel=worst.kernel)
                self._keep(failure, comparison.excess)
        if self.worst is None or comparison.excess > self.worst.excess:
            self.worst = comparison

    def fault(self, fault: StageFault, case: Case, replay: Replay | None = None) -> None:
        self.ran(case)
        self._problem(case.label, fault.describe())
        if replay is not None and fault.block is not None:
            self._keep(Failure(self.op, *_cast(case, replay), self.phase, block=fault.block, thread=fault.thread,
                               stage=self.row.stage))

    def printed(self, case: Case | None, text: str) -> None:
        """A call's device printf lines (the CPU runtime's, prefixed with block and thread), under its case."""
        label = f"[{case.label}] " if case is not None else ""
        self.row.printed += [label + line for line in text.splitlines()]

    def fail(self, text: str) -> None:
        """A reason the row fails; a leading "[case label] " names the case it was met on."""
        m = _LABELLED.match(text)
        self._problem(m.group(1) if m else "", text[m.end():] if m else text)

    def fail_first(self, texts: list[str]) -> None:
        """Reasons that come before those already given (their cause)."""
        problems, kept = self.problems, self.row.problems
        self.problems, self.row.problems = [], []
        for text in texts:
            self.fail(text)
        self.problems += problems
        self.row.problems += kept

    def _problem(self, case: str, text: str) -> None:
        self.problems.append(f"[{case}] {text}" if case else text)
        self.row.problems.append(Problem(case, text, fault_key(text)))

    def _keep(self, failure: Failure, excess: float = float("inf")) -> None:
        """Remember the worst failing case; finish() saves it for `brrr debug` (a reference has no kernels)."""
        if self.row.stage != "reference" and (self.failure is None or excess > self.failure_excess):
            self.failure, self.failure_excess = failure, excess

    def finish(self) -> Row:
        row = self.row
        row.seconds = time.monotonic() - self.start
        if self.worst is not None:
            row.of_bound, row.max_abs, row.max_rel, row.worst = self.worst.excess, self.max_abs, self.max_rel, self.worst.worst
            layout = self.op.spec.layouts.get(row.stage)
            # A layout declares what was not observed (a GPU's threads); the simulator's writers come first.
            if row.worst is not None and row.worst.block is None and layout is not None and row.stage != "reference":
                itemsize = getattr(torch, row.dtype).itemsize if hasattr(torch, row.dtype) else 1
                row.worst.block, row.worst.thread = layout.place_for(row.check, row.worst.tensor, row.worst.flat_index,
                                                                     row.worst.shape, itemsize)
                row.worst.placed = "intended"
        row.cases = list(self.covered)
        if self.spread_seconds:
            row.extras["spread_s"] = round(self.spread_seconds, 3)
        if self.problems:
            row.verdict = FAIL
            row.detail = _lines(self.problems + self.unrun)
            row.notes = _lines(self.unrun).splitlines() if self.unrun else []
            if self.failure is not None:
                slug = "".join(c if c.isalnum() else "-" for c in f"{row.stage}-{row.check}-{row.dtype}")
                saving = time.monotonic()
                try:
                    saved = save_failure(self.failure, slug)
                except OSError as e:  # the report matters more than the replay: say so in one more line
                    saved = (f"the failing inputs could not be saved for brrr debug: "
                             f"{e.filename or ''}{': ' if e.filename else ''}{e.strerror or e}")
                row.detail += "\n" + saved
                row.notes.append(saved)
                row.extras["save_s"] = round(time.monotonic() - saving, 3)
            # A failing verdict should cost about what a passing one does: the row says what this one cost.
            spent = f", {self.spread_seconds:.1f}s of it measuring the spread under rounding" if self.spread_seconds else ""
            row.detail += f"\nfailed in {time.monotonic() - self.start:.1f}s{spent}"
        elif self.unrun or (self.needs_cases and not self.covered):
            # Nothing failed, but not every case ran: the cases not run are named under the row, and
            # with none run at all the row measured nothing, so it is not a pass.
            row.verdict = UNRUN if not self.covered else PASS
            row.detail = _lines(self.unrun or ["not run: no case reached this check"])
            row.notes = row.detail.splitlines()  # shown under a passing row too (a refused case, say)
        return row


_LABELLED = re.compile(r"\[([^\]\n]*)\] ")


def _lines(lines: list[str], keep: int = 6) -> str:
    return "\n".join(lines[:keep]) + (f"\n... {len(lines) - keep} more" if len(lines) > keep else "")


def _cast(case: Case, replay: Replay) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    """The case's inputs and upstream gradient in the dtype the stage saw them."""
    upstream, dtype = replay
    return (tuple(x.to(dtype) if x.is_floating_point() else x for x in case.inputs),
            tuple(u.to(dtype) for u in upstream))
