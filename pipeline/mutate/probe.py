"""A mutant's cheapest verdict first: one case at a time, the case that caught the last mutant first.

Most mutants fail on any case of any check. Validation would build the stage and run every case
of a check (and its dtype's other checks) before its fail-fast stops; the probe runs the stage's
forward and backward against the reference on one case at a time, through validation's own
comparison (executor.compare_cases: the same rule, spread, memory checks and input writes), and
stops at the first failing one. The order: the case that caught this process's previous mutant
(a bug in a kernel's tail is caught by the same partial block again and again), then every case
by its number of elements, smallest first. A mutant the probe cannot catch is validated in full.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ..op.loaders import load_numba, load_reference
from ..op.spec import Op, StageName
from ..validation.executor import Options, Sides, Validation, build_stage, compare_cases
from ..validation.plan import PLANS, Against, Cases, Check
from ..validation.rows import RowBuilder
from ..validation.trial import Case, edge_cases, random_cases, stage_fn

# The label and dtype of the case that caught the previous mutant in this process ("killer").
_LAST: dict[str, tuple[str, torch.dtype]] = {}


def probe(op: Op, stage: StageName, seed: int) -> str:
    """The first failing case's row, as one line ("" when every probe case passes)."""
    v = Validation(op, Options(stages=(stage,), seed=seed, fail_fast=True, nvcc_beside_cpu=False))
    v.stages["reference"] = load_reference(op)
    if stage == "cuda":
        built = build_stage(v, next(c for c in PLANS["cuda"] if isinstance(c, Check) and c.against is Against.COMPILER))
        if built.failed:
            return _line(built)
    else:
        v.stages["numba"] = load_numba(op)
    checks = _reference_pair(stage)
    got = v.stages[stage]
    sides = Sides(stage_fn(got), got.device, stage_fn(v.stages["reference"]), got.device, torch.float64)
    for dtype, case in _ordered(v, stage):
        v.intact = RowBuilder(op, Check(stage, "inputs unchanged", Against.INPUTS), "all")
        rows = compare_cases(v, checks, sides, [case], dtype) + [v.intact.finish()]
        failing = next((r for r in rows if r.failed), None)
        if failing is not None:
            _LAST["killer"] = (case.label, dtype)
            return _line(failing)
    return ""


def _reference_pair(stage: StageName) -> tuple[Check, Check]:
    """The stage's forward and backward checks against the reference (the plan's first pair)."""
    plan_checks = [c for step in PLANS[stage] for c in getattr(step, "checks", (step,))]
    fwd = next(c for c in plan_checks if c.against is Against.REFERENCE and c.cases is Cases.RANDOM and c.phase == "forward")
    bwd = next(c for c in plan_checks if c.against is Against.REFERENCE and c.cases is Cases.RANDOM and c.phase == "backward")
    return fwd, bwd


def _ordered(v: Validation, stage: StageName) -> list[tuple[torch.dtype, Case]]:
    """Every random and edge case of each dtype the stage runs: the last killer first, then by size."""
    where = v.stages[stage].where
    cases: list[tuple[torch.dtype, Case]] = []
    for dtype in v.spec.stage_dtypes(stage):
        made = random_cases(v.op, where.sizes(v.spec), dtype, "cpu", v.gen) + edge_cases(v.op, dtype, "cpu")
        cases += [(dtype, c) for c in made]
    return sorted(cases, key=lambda dc: (_rank(dc), _elements(dc[1])))


def _rank(dtype_case: tuple[torch.dtype, Case]) -> int:
    dtype, case = dtype_case
    return 0 if _LAST.get("killer") == (case.label, dtype) else 1


def _elements(case: Case) -> int:
    return sum(math.prod(x.shape) for x in case.inputs if isinstance(x, torch.Tensor))


def _line(row: Any) -> str:
    first = row.detail.splitlines()[0] if row.detail else ""
    return f"{row.stage} {row.check} {row.dtype}: {first}"
