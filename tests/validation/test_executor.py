"""The runner on sigmoid, and planted bugs that each stage's checks must catch and explain."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from conftest import HAS_GPU, SIGMOID_VARIANTS, brrr, copy_op, failed, gpu, needs_nvcc, plant, validate

from brrr_kernels.cuda import cpu_build
from brrr_kernels.op.loaders import builtin_op_names, load_op
from brrr_kernels.validation import runner
from brrr_kernels.verdict.report import FAIL, NOT_RUN, PASS, UNRUN


@pytest.mark.parametrize("name", builtin_op_names())
def test_builtin_op_passes_reference_and_numba(name: str) -> None:
    rows = validate(name)
    assert rows and not failed(rows), "\n".join(f"{r.stage} {r.check} {r.dtype}: {r.detail}" for r in rows if r.failed)
    checks = {(r.stage, r.check) for r in rows}
    assert {("reference", "gradcheck"), ("numba", "forward"), ("numba", "backward"),
            ("numba", "gradcheck"), ("numba", "inputs unchanged")} <= checks


def test_numba_rows_cover_float32_and_float64() -> None:
    rows = validate("sigmoid", "numba")
    assert {r.dtype for r in rows if r.check == "forward"} == {"float32", "float64"}


def test_worst_element_is_named_with_its_thread() -> None:
    row = next(r for r in validate("sigmoid", "numba") if r.check == "forward")
    w = row.worst
    assert w is not None and w.block is not None and w.input is not None
    assert w.block[0] * 128 + w.thread[0] == w.flat_index


# -- planted bugs ---------------------------------------------------------------------------


def test_wrong_reference_backward_fails_gradcheck(mutant) -> None:
    op = mutant("sigmoid", "backward_sign")
    bad = failed(validate(op, "reference"))
    assert ("reference", "gradcheck", "float64") in bad
    assert "Jacobian mismatch" in bad[("reference", "gradcheck", "float64")].detail
    assert ("reference", "backward vs oracle", "float32") in bad


def test_naive_reference_fails_on_edge_inputs(mutant) -> None:
    """exp(x)/(1+exp(x)) for every x is NaN at x = 1e5: inf/inf."""
    op = mutant("sigmoid", "naive_reference")
    bad = failed(validate(op, "reference"))
    row = bad[("reference", "edge inputs", "float32")]
    assert "NaN where a number was expected" in row.detail
    assert row.worst.input in (1e5, float("inf")) and row.worst.expected == 1.0
    assert ("reference", "gradcheck", "float64") not in bad  # random inputs never reach the overflow


def test_missing_bounds_check_in_numba_names_thread_and_line(mutant) -> None:
    op = mutant("sigmoid", "no_bounds_check")
    bad = failed(validate(op, "numba"))
    row = bad[("numba", "forward", "float32")]
    assert "IndexError" in row.detail and "numba_kernel.py:" in row.detail
    assert "in sigmoid_forward_kernel" in row.detail and "v = x[i]" in row.detail
    # The named thread is one that really ran past the end: its index is >= n.
    pattern = r"block \((\d+), 0, 0\) thread \((\d+), 0, 0\).*locals: n=(\d+), i=(\d+)"
    faults = [re.search(pattern, part, re.S) for part in row.detail.split("\n[")]
    assert faults and all(faults), row.detail
    for block, thread, n, i in (map(int, f.groups()) for f in faults):
        assert block * 128 + thread == i >= n


def test_plain_sigmoid_in_numba_overflows_at_minus_1e5(mutant) -> None:
    op = mutant("sigmoid", "plain_overflow")
    bad = failed(validate(op, "numba"))
    assert not any(k[1] == "forward" for k in bad), "random inputs stay in range"
    row = bad[("numba", "edge forward", "float32")]
    assert "OverflowError" in row.detail and "math.exp(-v)" in row.detail
    # The thread named is the one that held a huge negative input (-1e5 or -710).
    m = re.search(r"thread \((\d+), 0, 0\).*locals: n=12, i=(\d+), v=(\S+)", row.detail, re.S)
    assert m and m.group(1) == m.group(2) and float(m.group(3)) <= -710, row.detail


def test_stage_that_writes_into_its_input_fails(mutant) -> None:
    op = mutant("sigmoid", "writes_input")
    bad = failed(validate(op, "numba"))
    assert "numba forward wrote into x" in bad[("numba", "inputs unchanged", "all")].detail


def test_unwritten_element_fails_as_nan(mutant) -> None:
    op = mutant("sigmoid", "last_element_unwritten")
    row = failed(validate(op, "numba"))[("numba", "forward", "float64")]
    assert "NaN where a number was expected" in row.detail
    assert row.worst.got != row.worst.got  # NaN: the poison survived


def test_forward_of_the_wrong_shape_is_a_clear_failure(mutant) -> None:
    op = mutant("sigmoid", "wrong_shape")
    row = failed(validate(op, "numba"))[("numba", "forward", "float32")]
    assert "shape" in row.detail and "expected" in row.detail


# -- the cuda stage -------------------------------------------------------------------------


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_without_gpu_or_host_compiler_is_compiled_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_build, "available", lambda: False)
    rows = validate("sigmoid", "cuda")
    assert [(r.check, r.verdict) for r in rows] == [("compile", NOT_RUN)]
    kernels = {k["kernel"] for k in rows[0].extras["kernels"]}
    assert "sigmoid_forward_kernel<float, 4>" in kernels and all(
        k["spill_stores"] == 0 for k in rows[0].extras["kernels"])


@pytest.mark.parametrize("name", builtin_op_names())
def test_builtin_op_passes_the_cuda_stage(name: str) -> None:
    """On a GPU the cuda stage runs there; without one it is executed on the CPU (rows cuda@cpu)."""
    rows = validate(name, "cuda")
    assert not failed(rows), "\n".join(f"{r.stage} {r.check} {r.dtype}: {r.detail}" for r in rows if r.failed)
    checks = {(r.stage, r.check) for r in rows if r.verdict == PASS}
    expected = {("cuda", "compile"), ("cuda", "forward"), ("cuda", "backward"), ("cuda", "forward vs numba"),
                ("cuda", "non-contiguous fwd"), ("cuda", "edge forward"), ("cuda", "inputs unchanged")}
    if torch.float64 in load_op(name).spec.stage_dtypes("cuda"):
        expected.add(("cuda", "gradcheck"))
    else:  # gradcheck needs float64: a stage without it says so in an n/a row (matmul_tc, attention)
        assert any(r.check == "gradcheck" and r.verdict != PASS and "float64" in r.detail for r in rows), rows
    assert expected <= checks
    assert {r.place for r in rows} == {"" if HAS_GPU else "cpu"}


def test_unwritten_last_element(mutant) -> None:
    op = mutant("sigmoid", "cuda_last_element")
    bad = failed(validate(op, "cuda", fail_fast=True))
    row = bad[("cuda", "forward", "float32")]
    assert "NaN where a number was expected" in row.detail
    assert row.worst.block is not None


def test_cuda_on_cpu_is_labelled_in_the_report_and_the_json(tmp_path: Path) -> None:
    out = tmp_path / "rows.json"
    proc = brrr("validate", "sigmoid", "--stage", "cuda", "--cuda-on-cpu", "--json", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = [line for line in proc.stdout.splitlines() if line.startswith("cuda")]
    assert table and all(line.startswith("cuda@cpu ") for line in table), proc.stdout
    rows = json.loads(out.read_text())["rows"]
    assert rows and all(r["stage"] == "cuda" and r["place"] == "cpu" for r in rows)
    assert brrr("validate", "sigmoid", "--cuda-on-cpu", "--huge").returncode == 2


@gpu
def test_huge_sigmoid_on_gpu() -> None:
    rows = runner.validate(load_op("sigmoid"), runner.Options(stages=("cuda",), huge=True))
    row = next(r for r in rows if r.check.startswith("huge"))
    assert row.verdict == PASS, row.detail
    assert row.extras["elements"] > 2**31


@gpu
def test_32_bit_index_fails_huge_on_gpu(mutant) -> None:
    """The seeds' `int idx` wraps past 2^31 elements; only --huge can see it."""
    op = mutant("sigmoid", "index_32_bit")
    # A wrapped index can fault the GPU context, so this runs in its own process.
    proc = brrr("validate", str(op), "--stage", "cuda", "--huge")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    huge = [line for line in proc.stdout.splitlines() if line.startswith("cuda   huge")]
    assert huge and "FAIL" in huge[0]
    assert all("FAIL" not in line for line in proc.stdout.splitlines() if line.startswith("cuda   forward "))


def test_first_versions_are_validated_forward_only(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "binding.cpp", "BRRR_BIND(m) {\n", SIGMOID_VARIANTS)
    rows = validate(folder, "cuda")
    verdicts = {(r.check, r.dtype): r.verdict for r in rows}
    assert verdicts[("forward_v1", "float32")] == FAIL and verdicts[("forward_v2", "float32")] == PASS
    assert not any(r.check.startswith("forward_v2") and r.verdict == FAIL for r in rows)


# -- kernel bugs the cuda stage's checks catch on a GPU and, without one, executed on the CPU ------


def test_skipped_vector_tail_leaves_the_last_elements_unwritten(mutant) -> None:
    op = mutant("sigmoid", "cuda_vector_tail_skipped")
    bad = failed(validate(op, "cuda", fail_fast=True))
    detail = bad[("cuda", "forward", "float32")].detail
    assert "NaN where a number was expected" in detail
    assert "[size 1]" in detail and "[size 127]" in detail  # 127 = 31 packs of 4 and 3 more


def test_a_kernel_that_writes_its_input_fails_inputs_unchanged(mutant) -> None:
    op = mutant("sigmoid", "cuda_writes_input")
    bad = failed(validate(op, "cuda"))
    assert "cuda forward wrote into x" in bad[("cuda", "inputs unchanged", "all")].detail


# --- honest rows: what could not run says so, and a failure is charged to the stage that made it --------


def _rows(rows):
    return {(r.stage, r.check, r.dtype): r for r in rows}


def test_a_failing_reference_backward_is_charged_to_the_reference(tmp_path: Path) -> None:
    op = plant(copy_op("sigmoid", tmp_path), "reference.py", "    return grad_y * y * (1 - y)",
               "    raise RuntimeError('planted')")
    rows = _rows(validate(op, "numba"))
    charged = rows[("reference", "backward for numba", "float32")]
    assert charged.verdict == FAIL and "reference.py" in charged.detail and "planted" in charged.detail
    assert rows[("numba", "forward", "float32")].verdict == PASS  # numba's forward is not to blame
    backward = rows[("numba", "backward", "float32")]
    assert backward.verdict == UNRUN and "reference stage's backward raised" in backward.detail


def test_rows_after_a_crashing_forward_are_not_run_not_pass(tmp_path: Path) -> None:
    op = plant(copy_op("sigmoid", tmp_path), "numba_kernel.py", "    x = x.contiguous()\n",
               "    raise RuntimeError('planted')\n")
    rows = _rows(validate(op, "numba"))
    assert rows[("numba", "forward", "float32")].verdict == FAIL
    for check in ("backward", "edge backward"):
        row = rows[("numba", check, "float32")]
        assert row.verdict == UNRUN and "its forward failed" in row.detail and row.of_bound is None
    assert rows[("numba", "inputs unchanged", "all")].verdict == UNRUN


def test_each_row_lists_the_cases_it_covered() -> None:
    rows = _rows(validate("sigmoid", "numba"))
    assert rows[("numba", "forward", "float32")].cases == ["size 1", "size 127", "size 129", "size 401"]
    assert rows[("numba", "edge backward", "float64")].cases == ["extremes"]
    assert "extremes" in rows[("numba", "inputs unchanged", "all")].cases


@pytest.mark.parametrize("fail_fast", [False, True])
def test_fail_fast_stops_at_the_first_failing_row(mutant, fail_fast: bool) -> None:
    """With fail_fast the rows end at the first failing comparison (its paired backward row, not
    run, beside it): no later check of its dtype, no other dtype, no later stage."""
    op = load_op(str(mutant("sigmoid", "no_bounds_check")))
    stages = ("numba", "cuda") if fail_fast else ("numba",)  # fail-fast leaves the later stage unbuilt
    rows = runner.validate(op, runner.Options(stages=stages, seed=1, fail_fast=fail_fast))
    checks = [(r.stage, r.check, r.dtype) for r in rows]
    assert rows[0].failed and checks[:2] == [("numba", "forward", "float32"), ("numba", "backward", "float32")]
    if fail_fast:
        assert len(rows) == 2 and rows[1].verdict == UNRUN
    else:  # the same first rows, then the rest: the edge rows, float64, the whole-stage checks
        assert {("numba", "edge forward", "float32"), ("numba", "forward", "float64"),
                ("numba", "gradcheck", "float64")} <= set(checks)


def test_a_bug_on_the_misaligned_path_fails_the_non_contiguous_rows(tmp_path: Path) -> None:
    """Tensors one element off a 16-byte boundary take sigmoid's element-by-element launch, which
    no other case reaches: its grid one block short leaves the last elements unwritten."""
    op = plant(copy_op("sigmoid", tmp_path), "kernel.cu",
               "sigmoid_forward_kernel<T, 1><<<brrr::blocks_for(n, kThreads), kThreads",
               "sigmoid_forward_kernel<T, 1><<<brrr::blocks_for(n, kThreads) - 1, kThreads")
    bad = failed(validate(op, "cuda"))
    dtypes = ("float32", "float64", "float16", "bfloat16")  # sigmoid's cuda stage takes all four
    assert {k for k in bad if k[1] != "non-contiguous fwd"} <= {("cuda", "non-contiguous bwd", d) for d in dtypes}
    row = bad[("cuda", "non-contiguous fwd", "float32")]
    assert row.detail.startswith("[misaligned, size 257] y: 1 of 257 elements out of tolerance"), row.detail


def test_without_a_cuda_toolkit_nvccs_compile_check_is_a_skipped_row_saying_why() -> None:
    """The cuda stage executed on the CPU needs no nvcc, but the GPU compile check it would add is named
    as not run (README: "Without either, the compile check is a skipped row")."""
    from unittest import mock

    from brrr_kernels.cuda import builder, cpu_build
    from brrr_kernels.op.loaders import load_op
    from brrr_kernels.validation.executor import Options, Validation, nvcc_skipped
    from brrr_kernels.validation.plan import PLANS
    from brrr_kernels.verdict.report import SKIP

    v = Validation(load_op("sigmoid"), Options(stages=("cuda",), cuda_on_cpu=True))
    compile_check = PLANS["cuda"][0]
    with mock.patch.object(cpu_build, "available", lambda: True):
        with mock.patch.object(builder, "find_nvcc", lambda: None):
            row = nvcc_skipped(v, compile_check)
        assert row is not None and row.verdict == SKIP and row.check == "nvcc compile"
        assert "no CUDA toolkit" in row.detail and "not run" in row.detail
        with mock.patch.object(builder, "find_nvcc", lambda: "/usr/local/cuda/bin/nvcc"):
            assert nvcc_skipped(v, compile_check) is None


# --- device printf: a kernel's own output is kept in the row of the check that made it ------------------


def test_device_printf_lines_are_kept_in_their_rows_not_printed(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from brrr_kernels.verdict.report import format_table, to_json

    folder = tmp_path / "rowsum"
    shutil.copytree(Path(__file__).resolve().parent.parent / "cuda" / "byok_ops" / "rowsum", folder)
    plant(folder, "kernel.cu", "    if (threadIdx.x == 0) out[row] = acc;\n",
          "    if (threadIdx.x == 0) out[row] = acc;\n"
          '    if (threadIdx.x == 0 && row == 1) printf("row %lld of %lld\\nnext\\n", (long long)row, (long long)cols);\n')
    rows = runner.validate(load_op(str(folder)), runner.Options(stages=("cuda",), seed=3, cuda_on_cpu=True))
    assert "row 1 of" not in capfd.readouterr().out  # kept, not sent to the terminal
    forward = next(r for r in rows if r.check == "forward" and r.dtype == "float32")
    assert forward.verdict == PASS
    # every case's launch, in the order they ran; each line of one printf prefixed with block and thread
    assert forward.printed == [f"[size {size}] [block (1, 0, 0), thread (0, 0, 0)] {text}"
                               for size, cols in (("(3, 7)", 7), ("(2, 300)", 300), ("(64, 1000)", 1000))
                               for text in (f"row 1 of {cols}", "next")]
    strided = next(r for r in rows if r.check == "non-contiguous fwd" and r.dtype == "float32")
    assert "[misaligned, size (2, 300)] [block (1, 0, 0), thread (0, 0, 0)] row 1 of 300" in strided.printed
    # calls no case owns (opcheck's, on gradcheck_size's 3 x 5) go to their own check's row
    opcheck = next(r for r in rows if r.check == "opcheck")
    assert opcheck.printed and set(opcheck.printed) == {"[block (1, 0, 0), thread (0, 0, 0)] row 1 of 5",
                                                        "[block (1, 0, 0), thread (0, 0, 0)] next"}
    table = format_table(rows)
    assert "    device printf, 6 lines:\n      [size (3, 7)] [block (1, 0, 0), thread (0, 0, 0)] row 1 of 7\n" in table
    kept = json.loads(to_json(rows, {}))["rows"]
    assert next(r for r in kept if r["check"] == "forward" and r["dtype"] == "float32")["printed"] == forward.printed
