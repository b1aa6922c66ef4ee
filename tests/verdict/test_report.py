"""Report rows: the table, the summary line, the JSON."""

from __future__ import annotations

import json
from pathlib import Path

from brrr_kernels.verdict.compare import Worst
from brrr_kernels.verdict.faults import fault_key
from brrr_kernels.verdict.report import FAIL, NOT_RUN, PASS, Problem, Row, format_table, summary, write_json


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


RACE = ("stages/op/numba_kernel.py:64 in row_max, block ({b}, 0, 0) thread (1, 0, 0): SharedMemoryRace: "
        "shared-memory race on part_max[0]\n      m = part_max[0]\n      locals: row={b}")


def race(case: str, block: int) -> Problem:
    text = RACE.format(b=block)
    return Problem(case, text, fault_key(text))


def failing(check: str, *problems: Problem) -> Row:
    return Row("op", "numba", check, "float32", FAIL, detail="\n".join(p.text for p in problems),
               problems=list(problems), notes=["debug it: brrr debug op --input f.pt --index 0"])


def test_a_fault_met_in_many_cases_and_rows_is_named_once_in_full() -> None:
    first = failing("forward", race("size 1", 0), race("size 127", 3), race("size 129", 1))
    later = [failing(check, race("size 1", 0), race("size 7", 2)) for check in ("backward", "edge forward")]
    other = Problem("size 7", "y: 1 of 7 elements out of tolerance", "y: 1 of 7 elements out of tolerance")
    later[1].problems.append(other)
    text = format_table([first, *later])
    assert text.count("SharedMemoryRace") == 3  # in full once, then one line a row naming where
    assert text.count("locals:") == 1 and text.count("m = part_max[0]") == 1
    assert "[size 1] stages/op/numba_kernel.py:64 in row_max, block (0, 0, 0)" in text
    assert ("same fault in 2 more cases of this row (size 127, size 129) and in 2 more rows: "
            "numba backward float32, numba edge forward float32") in text
    assert "[size 1, size 7] same fault as under numba forward float32: numba_kernel.py:64: SharedMemoryRace" in text
    assert "[size 7] y: 1 of 7 elements out of tolerance" in text  # another fault is not folded into it
    assert text.count("debug it:") == 3


def test_json_keeps_every_occurrence_of_a_folded_fault(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_json(path, [failing("forward", race("size 1", 0), race("size 127", 3))], {})
    problems = json.loads(path.read_text())["rows"][0]["problems"]
    assert [p["case"] for p in problems] == ["size 1", "size 127"] and "block (3, 0, 0)" in problems[1]["text"]


def test_fault_key_ignores_the_thread_and_element_but_not_the_line_or_kind() -> None:
    assert fault_key(RACE.format(b=0)) == fault_key(RACE.format(b=5))
    assert fault_key(RACE.format(b=0)) != fault_key(RACE.format(b=0).replace(":64", ":65"))
    cpu = ("/tmp/x/kernel.cu:31: race on shared memory in k<float>, block (0, 0, 0), thread (3, 0, 0): writes a[1]")
    described = "kernel.cu:31 in k<float>, block (1, 0, 0) thread (9, 0, 0): race on shared memory: writes a[4]"
    assert fault_key(cpu) == fault_key(described) == "kernel.cu:31: race on shared memory"
    assert fault_key("y: 3 of 7 out") == "y: 3 of 7 out"


def test_a_2d_worst_element_gives_its_row_and_column_and_its_input_by_name() -> None:
    worst = Worst(tensor="grad_logits", index=(2, 7), flat_index=2 * 10 + 7, expected=0.5, got=0.25, shape=(4, 10),
                  input=-3.0, input_name="logits")
    text = format_table([Row("ce", "numba", "backward", "float32", FAIL, 0.25, None, worst, 0.1, detail="x")])
    assert "grad_logits[2,7] row=2 col=7 logits=-3 expected=0.5 got=0.25" in text and " x=" not in text


def test_every_case_is_listed_and_a_missing_relative_error_is_a_dash() -> None:
    row = Row("op", "cuda", "forward", "float32", PASS, 1e-7, None, None, 0.1, place="cpu",
              cases=["size 1", "size 4099"], gpu_only=["size 1048579", "size (3, 70001)"])
    text = format_table([row])
    assert "1, 4099; on a GPU only: 1048579, 3x70001" in text
    assert text.splitlines()[2].split()[5] == "-"  # the max rel column


def test_notes_print_under_a_passing_row() -> None:
    row = Row("op", "cuda", "compile", "cpu", PASS, place="cpu",
              notes=["nvcc sm_90: compiled; ptxas, per kernel:", "  k<float>: 16 regs, 0 B spilled"])
    assert "    nvcc sm_90: compiled; ptxas, per kernel:\n      k<float>: 16 regs" in format_table([row])


def test_a_rows_device_printf_lines_are_shown_under_it_up_to_a_limit_and_kept_whole_in_json(tmp_path: Path) -> None:
    from brrr_kernels.verdict.report import PRINTED_SHOWN

    row = Row("op", "cuda", "forward", "float32", PASS, place="cpu",
              printed=[f"[size 7] [block (0, 0, 0), thread ({i}, 0, 0)] i={i}" for i in range(PRINTED_SHOWN + 5)])
    lines = format_table([row]).splitlines()
    at = lines.index(f"    device printf, {PRINTED_SHOWN + 5} lines:")
    assert lines[at + 1] == "      [size 7] [block (0, 0, 0), thread (0, 0, 0)] i=0"
    last = PRINTED_SHOWN - 1
    assert lines[at + PRINTED_SHOWN] == f"      [size 7] [block (0, 0, 0), thread ({last}, 0, 0)] i={last}"
    assert lines[at + PRINTED_SHOWN + 1] == "      ... 5 more (--json has every one)"
    path = tmp_path / "rows.json"
    write_json(path, [row], {})
    assert json.loads(path.read_text())["rows"][0]["printed"] == row.printed


def test_a_thread_no_run_saw_write_is_named_as_the_intended_one() -> None:
    """Block and thread from the spec's layout (no run observed the write) are said to be the intended
    mapping; a writer the simulator saw is named as it is."""
    placed = {}
    for how in ("intended", "observed"):
        worst = Worst(tensor="y", index=(5,), flat_index=5, expected=0.5, got=0.25, block=(0, 0, 0), thread=(5, 0, 0),
                      placed=how)  # type: ignore[arg-type]
        placed[how] = format_table([Row("op", "cuda", "forward", "float32", FAIL, 0.25, None, worst, 0.1, detail="x")])
    assert "block=(0, 0, 0) thread=(5, 0, 0) (the spec's intended mapping, not observed)" in placed["intended"]
    assert "block=(0, 0, 0) thread=(5, 0, 0)" in placed["observed"] and "intended" not in placed["observed"]
