"""The command line as a user meets it: exit codes, messages instead of tracebacks, --json."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import KNOWN_SPILLS, REPO, brrr, copy_op, needs_nvcc, plant

from brrr_kernels.op.loaders import builtin_op_names


def test_help_imports_neither_torch_nor_numba() -> None:
    code = ("import sys\nfrom brrr_kernels.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "assert 'torch' not in sys.modules and 'numba' not in sys.modules, 'heavy import in --help'\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert "validate" in proc.stdout


@pytest.mark.parametrize(("given", "kept"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_threads_sleep_unless_the_user_says_otherwise(given: str | None, kept: str) -> None:
    """torch's OpenMP threads would spin ~20 ms after each op, on the core brrr's CPU execution needs."""
    from brrr_kernels.cli import quiet_openmp

    environ = {} if given is None else {"OMP_WAIT_POLICY": given}
    quiet_openmp(environ)
    assert environ == {"OMP_WAIT_POLICY": kept}


def test_no_command_prints_help_and_exits_2() -> None:
    proc = brrr()
    assert proc.returncode == 2 and "usage: brrr" in proc.stdout


def test_unknown_op_is_a_usage_error() -> None:
    proc = brrr("validate", "no_such_op")
    assert proc.returncode == 2
    assert "no op named 'no_such_op'" in proc.stderr and "Traceback" not in proc.stderr


def test_validate_writes_json_rows(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    proc = brrr("validate", "sigmoid", "--stage", "reference", "--stage", "numba", "--json", str(out), "--seed", "7")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert data["meta"]["seed"] == 7 and data["meta"]["exit_code"] == 0
    checks = {(r["stage"], r["check"], r["dtype"]): r for r in data["rows"]}
    assert checks[("numba", "forward", "float32")]["verdict"] == "pass"
    assert checks[("numba", "forward", "float32")]["worst"]["block"] is not None
    assert "-- sigmoid: " in proc.stdout and " passed, 0 failed" in proc.stdout


def test_a_failing_check_exits_1_and_names_stage_and_check(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "reference.py", "grad_y * y * (1 - y)", "grad_y * y")
    proc = brrr("validate", str(folder), "--stage", "reference")
    assert proc.returncode == 1
    assert any(line.startswith("reference  gradcheck") and "FAIL" in line for line in proc.stdout.splitlines())
    assert "Traceback" not in proc.stderr


def test_fail_fast_stops_at_the_first_failing_row_and_says_so(tmp_path: Path) -> None:
    """A reference with a wrong backward: --fail-fast ends the op there (its other reference checks,
    the numba and cuda stages never run) and says so; exit 1 as without it."""
    folder = plant(copy_op("sigmoid", tmp_path), "reference.py", "grad_y * y * (1 - y)", "grad_y * y")
    out = tmp_path / "rows.json"
    proc = brrr("validate", str(folder), "--fail-fast", "--json", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["verdict"] for r in rows].count("FAIL") == 1 and rows[-1]["verdict"] in ("FAIL", "not run")
    assert {r["stage"] for r in rows} == {"reference"}
    assert "stopped at its first failing row (--fail-fast)" in proc.stdout and "Traceback" not in proc.stderr
    assert "--fail-fast" in brrr("validate", "--help").stdout


def test_missing_stage_file_exits_2(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    (folder / "reference.py").unlink()
    proc = brrr("validate", str(folder))
    assert proc.returncode == 2 and "missing reference.py" in proc.stderr and "Traceback" not in proc.stderr


def test_syntax_error_in_a_stage_names_file_and_line(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "numba_kernel.py", "    if i >= n:\n", "    if i >= n\n")
    proc = brrr("validate", str(folder), "--stage", "numba")
    line = (folder / "numba_kernel.py").read_text().splitlines().index("    if i >= n") + 1
    assert proc.returncode == 2
    assert f"numba_kernel.py:{line}: syntax error" in proc.stderr and "Traceback" not in proc.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "numba_kernel.py", "    if i >= n:\n", "    if i >= n\n")
    proc = brrr("validate", str(folder), "--stage", "numba", "--debug")
    assert proc.returncode == 2 and "Traceback" in proc.stderr


@needs_nvcc
def test_cu_that_does_not_compile_shows_the_compiler_error_at_file_and_line(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu", "grad_x[i] = sigmoid_grad(grad_y[i], y[i])",
                   "grad_x[i] = sigmoid_grad(grad_y[i], yy[i])")
    line = 1 + (folder / "kernel.cu").read_text().split("yy[i]")[0].count("\n")
    proc = brrr("validate", str(folder), "--stage", "cuda", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # nvcc's form where the cuda stage runs on a GPU; the host compiler's where it runs on the CPU.
    nvcc = f"sigmoid/kernel.cu({line}): error" in proc.stdout and "identifier \"yy\" is undefined" in proc.stdout
    out = proc.stdout.replace("‘", "'").replace("’", "'")
    cxx = f"sigmoid/kernel.cu:{line}:" in out and "'yy' was not declared" in out
    assert nvcc or cxx, proc.stdout


@functools.cache
def build_resources(name: str) -> subprocess.CompletedProcess[str]:
    """`brrr build NAME --resources`, run once a worker: sigmoid's is read by two tests."""
    return brrr("build", name, "--resources")


@needs_nvcc
def test_build_resources_reports_every_kernel() -> None:
    proc = build_resources("sigmoid")
    assert proc.returncode == 0, proc.stderr
    rows = [ln.split() for ln in proc.stdout.splitlines() if ln.strip().startswith("sigmoid_")]
    names = {" ".join(r[:-5]) for r in rows}  # kernel names may hold spaces; five numbers follow
    assert names >= {"sigmoid_forward_kernel<float, 4>", "sigmoid_backward_kernel<double, 2>"}
    assert all(int(r[-5]) > 0 and all(v.isdigit() for v in r[-5:]) for r in rows)


@needs_nvcc
@pytest.mark.parametrize("name", builtin_op_names())
def test_build_resources_works_for_every_op(name: str) -> None:
    proc = build_resources(name)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["kernel", "regs"])
    rows = [ln.split() for ln in lines[header + 1:] if ln.startswith("  ")]
    # registers, shared bytes, spill stores, spill loads, stack bytes after the kernel's name: no built-in
    # kernel spills but those conftest.py names (KNOWN_SPILLS)
    assert rows and all(all(v.isdigit() for v in r[-5:]) and int(r[-5]) > 0 for r in rows)
    assert all(r[-3:-1] == ["0", "0"] for r in rows if " ".join(r[:-5]) not in KNOWN_SPILLS), rows


@needs_nvcc
def test_a_binding_typo_is_shown_against_binding_cpp_and_its_line(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "binding.cpp", "auto y = at::empty_like(xc);", "auto y = at::empty_like(xcc);")
    line = 1 + (folder / "binding.cpp").read_text().split("xcc")[0].count("\n")
    proc = brrr("build", str(folder), cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert f"sigmoid/binding.cpp:{line}:" in proc.stdout + proc.stderr and "xcc" in proc.stdout + proc.stderr


def test_a_spec_that_cannot_make_inputs_is_a_loading_error(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "spec.py", "generator=gen).to(device),)", "generator=gen).to(device) + oops,)")
    proc = brrr("validate", str(folder), "--stage", "reference")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert re.search(r"spec.py:\d+: make_inputs\(1, torch.float64, cpu\) raised NameError", proc.stderr)


@pytest.mark.parametrize("error, says", [
    (ValueError("boom"), "brrr: internal error (a bug in brrr): ValueError: boom\n  please report it with the traceback "
                         "that the same command with --debug prints"),
    (OSError(28, "No space left on device", "/cache/x.o"), "brrr: error: /cache/x.o: No space left on device"),
], ids=["a bug in brrr", "the machine"])
def test_internal_error_is_for_brrrs_own_bugs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                              error: Exception, says: str) -> None:
    from brrr_kernels import cli

    def fail(args: object) -> int:
        raise error

    monkeypatch.setattr(cli, "list_ops", fail)
    assert cli.main(["list"]) == 2
    assert capsys.readouterr().err.strip() == says


@pytest.mark.parametrize("jobs", ["0", "-2"])
def test_jobs_below_one_is_a_usage_error(capsys: pytest.CaptureFixture[str], jobs: str) -> None:
    from brrr_kernels import cli

    assert cli.main(["validate", "sigmoid", "--jobs", jobs]) == 2
    assert capsys.readouterr().err.strip() == f"brrr: error: --jobs must be at least 1, got {jobs}"


@pytest.mark.parametrize("signum, code", [(2, 130), (15, 143)], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_parser_is_built_ends_with_the_one_line_and_its_code(
        signum: int, code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The moment right after start-up: brrr's handlers are in, the parser not yet built (it was a
    traceback and exit 1 there)."""
    from brrr_kernels import cli
    from brrr_kernels.base import interrupts

    def interrupted() -> None:
        raise interrupts.Interrupted(signum)

    monkeypatch.setattr(cli, "_parser", interrupted)
    monkeypatch.setattr(interrupts, "_announced", False)
    assert cli.main(["validate", "sigmoid"]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.strip() == ("brrr: terminated (SIGTERM)" if code == 143 else "brrr: interrupted")
