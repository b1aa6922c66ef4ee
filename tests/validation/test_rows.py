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
