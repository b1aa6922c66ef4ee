"""brrr mutate: mutants validated in worker processes, survivors classified, the score and the JSON."""

from __future__ import annotations

import json
import threading

import pytest
from conftest import brrr, copy_op

from brrr_kernels.base.errors import UsageError
from brrr_kernels.mutate.run import Pick, Report, Result, Verdict, format_report, lines_run, parse_lines
from brrr_kernels.mutate.standard_bugs import Edit, Kind, Mutant


def test_input_writes_are_all_killed_grad_y_and_saved_y_included(tmp_path) -> None:
    """Before every tensor a call receives was watched, the grad_y write survived validation."""
    out = tmp_path / "mutate.json"
    run = brrr("mutate", "sigmoid", "--kind", "input write", "--seed", "3", "--json", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads(out.read_text())
    assert data["mutants"] == 3 and data["killed"] == 3 and data["score"] == 1.0
    reasons = {r["key"].split(": ", 1)[1]: r["reason"] for r in data["results"]}
    assert "numba backward wrote into grad_y" in reasons["grad_y[i] = 2 * grad_y[i] + 1 added"]
    assert "backward wrote into y (saved for backward)" in reasons["y[i] = 2 * y[i] + 1 added"]
    assert "mutation score 3/3 = 100%" in run.stdout


@pytest.mark.parametrize("text, lines", [("40-60", (40, 60)), ("7", (7, 7)), ("300-", (300, 10**9))])
def test_lines_select_the_standard_mutants_on_them_and_every_known_bug(text: str, lines: tuple[int, int]) -> None:
    pick = Pick(lines=parse_lines(text))
    assert pick.lines == lines
    at = [Mutant(Kind.INDEX, "kernel.cu", n, "x[i] -> x[i + 1]", Edit(n, 0, n, 1, "")) for n in (6, 7, 40, 60, 61, 300)]
    kept = {m.line for m in at if pick.keeps(m)}
    assert kept == {n for n in (6, 7, 40, 60, 61, 300) if lines[0] <= n <= lines[1]}
    assert pick.keeps(Mutant(Kind.KNOWN, "kernel.cu", 0, "bugs/x.bug", Edit(1, 0, 1, 0, "")))
    assert not Pick(kinds=(Kind.INDEX,), lines=lines).keeps(Mutant(Kind.KNOWN, "kernel.cu", 0, "bugs/x.bug",
                                                                     Edit(1, 0, 1, 0, "")))


@pytest.mark.parametrize("text", ["9-3", "0-4", "a-b", "-5", ""])
def test_lines_that_name_no_range_are_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match="--lines"):
        parse_lines(text)


def test_a_survivor_fails_the_command_unless_the_spec_explains_it(tmp_path) -> None:
    """With size 1 alone, a grid one block short is still one block: both last-block mutants pass
    validation, and differ from the original at the GPU sizes (255, 257). The spec explains one."""
    folder = copy_op("sigmoid", tmp_path)
    spec = folder / "spec.py"
    key = "numba_kernel.py:39:39: grid cdiv(n, BLOCK) -> max(1, cdiv(n, BLOCK) - 1)"
    text = spec.read_text().replace("sim_sizes=(1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17)", "sim_sizes=(1,)")
    spec.write_text(text.replace("    huge=huge,", f"    huge=huge,\n    mutants={{{key!r}: 'a test: one size only'}},"))
    run = brrr("mutate", str(folder), "--kind", "last block", "--seed", "1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert f"explained   last block    {key}" in run.stdout, run.stdout
    assert "a test: one size only" in run.stdout
    assert "survivor: numba_kernel.py:48:40" in run.stdout and "differs from the original's" in run.stdout
    assert "mutation score 0/2 = 0%" in run.stdout


def test_an_explanation_outside_the_lines_run_is_not_stale(tmp_path) -> None:
    """--lines 48 runs the survivor on line 48 alone; the spec's explanation of line 39's mutant still
    names a mutant of the file, so it is not reported stale."""
    folder = copy_op("sigmoid", tmp_path)
    spec = folder / "spec.py"
    key = "numba_kernel.py:39:39: grid cdiv(n, BLOCK) -> max(1, cdiv(n, BLOCK) - 1)"
    text = spec.read_text().replace("sim_sizes=(1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17)", "sim_sizes=(1,)")
    spec.write_text(text.replace("    huge=huge,", f"    huge=huge,\n    mutants={{{key!r}: 'a test: one size only'}},"))
    run = brrr("mutate", str(folder), "--kind", "last block", "--lines", "48", "--seed", "1")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "survivor: numba_kernel.py:48:40" in run.stdout and "(1 mutants:" in run.stdout, run.stdout
    assert "stale" not in run.stdout, run.stdout


def test_the_score_leaves_out_equivalent_mutants_and_lists_survivors_with_their_diff() -> None:
    results = [Result("a", "index", Verdict.KILLED, "numba forward float32: ..."),
               Result("b", "comparison", Verdict.EQUIVALENT, "same bits"),
               Result("c", "constant", Verdict.SURVIVED, "never ran", diff="-    x = 1.0\n+    x = 1.001\n"),
               Result("d", "barrier", Verdict.EXPLAINED, "a single warp")]
    report = Report("op", "ops/op", 1, results=results)
    assert report.score == 1 / 3 and [r.key for r in report.unexplained] == ["c"]
    text = format_report(report)
    assert "mutation score 1/3 = 33%" in text and "+    x = 1.001" in text and "a single warp" in text
    assert json.loads(report.as_json())["survived"] == 1


def test_lines_run_sees_lines_executed_in_other_threads(tmp_path) -> None:
    src = tmp_path / "k.py"
    src.write_text("def f(box):\n    box.append(1)\n    if not box:\n        box.append(2)\n")
    namespace: dict = {}
    exec(compile(src.read_text(), str(src.resolve()), "exec"), namespace)
    with lines_run(src) as ran:
        t = threading.Thread(target=namespace["f"], args=([],))
        t.start()
        t.join()
    assert ran == {2, 3}


def test_a_survivor_within_the_spread_of_a_reordered_sum_is_listed_apart() -> None:
    """A difference of one rounding in a softmax row (its sum taken in another order) is within the
    reference's spread under rounding; a difference of 1e-3, or any write into an input, is not."""
    import torch

    from brrr_kernels.mutate.run import _Spread
    from brrr_kernels.op.loaders import load_op, load_reference
    from brrr_kernels.validation.trial import Trial, stage_fn

    op = load_op("softmax")
    gen = torch.Generator().manual_seed(0)
    inputs = op.spec.make_inputs((3, 300), torch.float32, torch.device("cpu"), gen)
    upstream = (torch.randn(3, 300, dtype=torch.float64, generator=gen),)
    y = Trial(stage_fn(load_reference(op)), inputs, "cpu", torch.float32).outputs[0]
    spread = _Spread(op, inputs, upstream, torch.float32)
    assert spread.covers("y", y, torch.nextafter(y, torch.full_like(y, 2.0)))
    assert not spread.covers("y", y, y * 1.001)
    assert not spread.covers("input x", y, torch.nextafter(y, torch.full_like(y, 2.0)))

    results = [Result("a", "index", Verdict.KILLED, "numba forward float32: ..."),
               Result("k.cu:9:40: offset 16 -> 17", "constant", Verdict.ROUNDING, "y differs ..., but within the spread")]
    report = Report("op", "ops/op", 1, results=results)
    assert report.score == 1.0 and not report.unexplained  # exit 0: nothing to explain in the spec
    text = format_report(report)
    assert "equivalent up to rounding order (no mutants entry needed):\n  k.cu:9:40: offset 16 -> 17" in text
    assert "1 equivalent up to rounding order" in text and "survivor:" not in text


def test_an_xor_butterfly_started_at_17_is_equivalent_up_to_rounding_order_in_a_real_run(tmp_path) -> None:
    """examples/rmsnorm_shuffle's kernel.cu: `for (int offset = 16; ...; offset /= 2)` seeded 17 still gives
    every lane the warp's sum (17 = 16 ^ 1), in another order: listed apart with the reason, not survived."""
    out = tmp_path / "mutate.json"
    run = brrr("mutate", "examples/rmsnorm_shuffle", "--stage", "cuda", "--kind", "accumulator", "--seed", "1",
               "--jobs", "1", "--json", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    verdicts = {r["key"].split(": ", 1)[1]: (r["verdict"], r["reason"]) for r in json.loads(out.read_text())["results"]}
    verdict, reason = verdicts["offset = 16 -> offset = 17"]
    assert verdict == Verdict.ROUNDING.value and "within 2 x the spread of the reference under rounding" in reason
    assert "equivalent up to rounding order (no mutants entry needed):" in run.stdout and "survivor:" not in run.stdout
    assert all(v == "killed" for k, (v, _) in verdicts.items() if "= 0.0 ->" in k)  # the sums seeded 1.0 are caught
