"""Report rows: the table, the summary line, the JSON."""

from __future__ import annotations

import json
from pathlib import Path

from brrr_kernels.verdict.compare import Worst
from brrr_kernels.verdict.report import FAIL, NOT_RUN, PASS, Row, format_table, summary, write_json


def rows() -> list[Row]:
    worst = Worst(tensor="y", index=(5,), flat_index=5, expected=0.5, got=float("nan"), input=0.0,
                  block=(0, 0, 0), thread=(5, 0, 0))
    return [Row("op", "numba", "forward", "float32", FAIL, 1.0, 2.0, worst, 0.1, detail="[size 7] y: 1 of 7 out"),
            Row("op", "reference", "gradcheck", "float64", PASS),
            Row("op", "cuda", "compile", "sm_90", NOT_RUN, detail="k<float>: 16 regs")]


def test_table_names_the_worst_element_and_its_thread_and_the_reasons() -> None:
    text = format_table(rows())
    assert "y[5] x=0 expected=0.5 got=nan block=(0, 0, 0) thread=(5, 0, 0)" in text
    assert "    [size 7] y: 1 of 7 out" in text and "    k<float>: 16 regs" in text


def test_summary_counts_each_verdict() -> None:
    assert summary(rows()) == "1 passed, 1 failed, 1 compiled, not run (no GPU)"


def test_json_holds_the_same_rows(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json(path, rows(), {"seed": 3})
    data = json.loads(path.read_text())
    assert data["meta"] == {"seed": 3} and [r["verdict"] for r in data["rows"]] == [FAIL, PASS, NOT_RUN]
    assert data["rows"][0]["worst"]["thread"] == [5, 0, 0]
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
