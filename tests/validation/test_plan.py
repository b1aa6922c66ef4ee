"""The plans are the README's table of checks: every check a plan names is a row of that table."""

from __future__ import annotations

import re

import pytest
from conftest import REPO

from brrr_kernels.validation.plan import PLANS, Against, Check, EachDtype


def _readme_checks() -> dict[str, str]:
    """stage -> the text of its rows' check column in the README's table of checks."""
    table: dict[str, str] = {}
    for line in (REPO / "README.md").read_text().splitlines():
        m = re.match(r"\| (reference|numba|cuda) \| (.+?) \|", line)
        if m:
            table[m.group(1)] = table.get(m.group(1), "") + " | " + m.group(2)
    return table


def _checks(stage: str) -> list[Check]:
    return [c for step in PLANS[stage] for c in (step.checks if isinstance(step, EachDtype) else (step,))]  # type: ignore[index]


@pytest.mark.parametrize("stage", sorted(PLANS))
def test_every_planned_check_is_in_the_readme_table(stage: str) -> None:
    words = set(re.findall(r"[\w-]+", _readme_checks()[stage]))
    for check in _checks(stage):
        assert check.stage == stage
        missing = set(check.name.split()) - words
        assert not missing, f"{stage}: check {check.name!r} is not in the README's table of checks ({missing})"


@pytest.mark.parametrize("stage", sorted(PLANS))
def test_a_backward_check_follows_its_forward_check_on_the_same_cases(stage: str) -> None:
    for step in PLANS[stage]:
        checks = step.checks if isinstance(step, EachDtype) else (step,)
        for before, check in zip((None, *checks), checks):
            if check.phase == "backward":
                assert before is not None and before.phase == "forward"
                assert (before.against, before.cases) == (check.against, check.cases)


def test_a_compile_check_comes_first() -> None:
    for plan in PLANS.values():
        assert all(not (isinstance(s, Check) and s.against is Against.COMPILER) for s in plan[1:])
