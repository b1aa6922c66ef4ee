"""brrr_kernels.validate(): the verdict as a Report, for notebooks, scripts and tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import brrr_kernels
from brrr_kernels.api import Report
from brrr_kernels.base.errors import BrrrError


@pytest.fixture(scope="module")
def sigmoid_report() -> Report:
    return brrr_kernels.validate("sigmoid", stages=["reference", "numba"], seed=7, quiet=True)


def test_a_clean_op_passes_with_its_rows_and_seed(sigmoid_report: Report) -> None:
    r = sigmoid_report
    assert r.passed and r.failed == [] and r.seed == 7 and r.op == "sigmoid"
    assert {row.stage for row in r.rows} == {"reference", "numba"}
    assert r.row("numba", "forward", "float32").verdict == "pass"
    assert r.row("reference", "gradcheck").dtype == "float64"


def test_to_json_and_repr_carry_the_rows(sigmoid_report: Report) -> None:
    data = json.loads(sigmoid_report.to_json())
    assert data["passed"] is True and data["seed"] == 7 and len(data["rows"]) == len(sigmoid_report.rows)
    assert data["rows"][0]["check"] == "gradcheck"
    text = repr(sigmoid_report)
    assert text.startswith("<brrr Report sigmoid passed: 19 passed, 0 failed; seed 7>")
    assert "numba      gradcheck" in text  # the table, as `brrr validate` prints it


def test_a_planted_bug_fails_with_the_reason(mutant) -> None:
    folder: Path = mutant("sigmoid", "negative_branch")
    r = brrr_kernels.validate(folder, stages="numba", seed=1, quiet=True)
    assert not r.passed
    assert {(row.check, row.dtype) for row in r.failed} >= {("forward", "float32"), ("forward", "float64")}
    assert "out of tolerance" in r.row("numba", "forward", "float32").detail
    assert "FAILED" in repr(r)


@pytest.mark.parametrize(("op", "stages", "message"), [
    ("sigmoid", ["numba", "triton"], "each must be one of reference, numba, cuda"),
    ("no_such_op", None, "no_such_op"),
])
def test_bad_arguments_raise_the_message_the_cli_prints(op: str, stages: list[str] | None, message: str) -> None:
    with pytest.raises(BrrrError, match=message) as info:
        brrr_kernels.validate(op, stages=stages)
    assert info.value.exit_code == 2


def test_the_public_functions_stay_functions_when_every_subpackage_is_imported() -> None:
    import importlib

    from test_layout import SUBPACKAGES

    for package in SUBPACKAGES:
        importlib.import_module(f"brrr_kernels.{package}")
    for name in ("validate", "debug", "trace"):
        assert callable(getattr(brrr_kernels, name)) and getattr(brrr_kernels, name).__module__ == "brrr_kernels", name


@pytest.mark.parametrize("seed", ["abc", 1.5, -1, True, 2**64])
def test_a_seed_that_is_no_whole_number_is_brrrs_own_message(seed: object) -> None:
    with pytest.raises(BrrrError, match=r"seed=.*: expected a whole number from 0 to 2\*\*64 - 1"):
        brrr_kernels.validate("sigmoid", stages=["reference"], seed=seed)  # type: ignore[arg-type]
