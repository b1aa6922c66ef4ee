"""Report rows: a failing row keeps its report even when its inputs cannot be saved for `brrr debug`."""

from __future__ import annotations

from pathlib import Path

import pytest

from brrr_kernels import cli


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
