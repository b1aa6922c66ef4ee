"""Report rows: a failing row keeps its report even when its inputs cannot be saved for `brrr debug`."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import failed, needs_nvcc, plant, validate

from brrr_kernels import cli
from brrr_kernels.verdict.report import format_table


def test_a_failure_whose_inputs_cannot_be_saved_still_reports_and_exits_1(
        tmp_path: Path, mutant, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    folder = mutant("sigmoid", "negative_branch")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "failures").write_text("a file where the failures folder goes")
    monkeypatch.setenv("BRRR_CACHE", str(cache))
    assert cli.main(["validate", str(folder), "--stage", "numba", "--quiet"]) == 1  # the verdict's exit code
    captured = capsys.readouterr()
    assert "FAIL" in captured.out and "internal error" not in captured.err + captured.out
    assert f"the failing inputs could not be saved for brrr debug: {cache / 'failures'}" in captured.out
    assert "debug it:" not in captured.out


def test_cases_not_run_for_one_reason_share_a_line() -> None:
    from brrr_kernels.op.loaders import load_op
    from brrr_kernels.validation.plan import Against, Cases, Check
    from brrr_kernels.validation.rows import RowBuilder
    from brrr_kernels.validation.trial import Case

    b = RowBuilder(load_op("sigmoid"), Check("numba", "backward", Against.REFERENCE, Cases.RANDOM), "float32")
    for label in ("size 1", "size 127", "size 129"):
        b.not_run(Case(label, ()), "its forward failed")
    b.not_run(Case("extremes", ()), "the reference raised")
    b.ran(Case("size 401", ()))
    row = b.finish()
    assert row.detail.splitlines() == ["[size 1, size 127, size 129] not run: its forward failed",
                                       "[extremes] not run: the reference raised"]


@needs_nvcc
def test_a_worst_elements_thread_is_said_to_be_intended_where_no_run_observed_it(mutant) -> None:
    """sigmoid's cuda stage, its last element unwritten, under a spec whose cuda layout (64 threads a
    block, one element each) is not the kernel's (256 threads, 16-byte packs): the report's block and
    thread are the layout's, and it says they are the spec's intended mapping."""
    op = plant(mutant("sigmoid", "cuda_last_element"), "spec.py", '"cuda": one_per_thread(256, pack_bytes=16)',
               '"cuda": one_per_thread(64)')
    bad = failed(validate(op, "cuda", fail_fast=True))
    row = next((r for (stage, check, _), r in bad.items() if stage == "cuda" and check == "forward"), None)
    assert row is not None and row.worst is not None, sorted(bad)
    assert row.worst.placed == "intended" and row.worst.kernel is None
    n = row.worst.flat_index
    assert row.worst.block == (n // 64, 0, 0) and row.worst.thread == (n % 64, 0, 0)  # the spec's, not the kernel's
    assert "(the spec's intended mapping, not observed)" in format_table([row])


def test_a_worst_elements_writer_seen_in_the_simulator_is_said_as_observed(mutant) -> None:
    """A wrong value the simulator saw a thread write is named by that thread, as observed (an element
    nobody wrote has no writer to observe: its thread is the layout's, said as intended)."""
    numba = failed(validate(mutant("sigmoid", "negative_branch"), "numba"))
    row = next(r for (stage, check, _), r in numba.items() if stage == "numba" and check == "forward")
    assert row.worst is not None and row.worst.placed == "observed" and row.worst.kernel
    assert "intended" not in format_table([row])


@pytest.mark.parametrize("got, listed", [(1.0 + 1e-5, "not judged"), (2.0, "fails")])
def test_a_case_judged_after_its_row_failed_fails_only_past_any_spread(got: float, listed: str) -> None:
    import torch

    from brrr_kernels.op.loaders import load_op
    from brrr_kernels.op.tolerances import rule_for
    from brrr_kernels.validation.executor import _add
    from brrr_kernels.validation.plan import Against, Cases, Check
    from brrr_kernels.validation.rows import RowBuilder
    from brrr_kernels.validation.trial import Case
    from brrr_kernels.verdict.compare import Around, compare

    b = RowBuilder(load_op("sigmoid"), Check("cuda", "forward", Against.REFERENCE, Cases.RANDOM), "float32")
    b.fail("[size 7] y: 7 of 7 elements out of tolerance")  # the row failed on an earlier case
    expected = torch.ones(3, dtype=torch.float64)
    c = compare("y", torch.tensor([1.0, got, 1.0]), expected, rule_for("y", torch.float32, "cuda"),
                Around(terms={"x": expected}))
    _add(b, c, Case("misaligned, size 3", ()), None, withheld=True)
    row = b.finish()
    assert "misaligned, size 3" in row.cases
    if listed == "not judged":
        assert "[misaligned, size 3] not judged: y out of the fixed bound" in row.detail
        assert [p.case for p in row.problems] == ["size 7"]
    else:
        assert [p.case for p in row.problems] == ["size 7", "misaligned, size 3"]
        assert "by the fixed rule alone" in row.detail
