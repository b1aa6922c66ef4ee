"""The CPU execution runs the op's code in a child process: a crash, an abort, a stack overflow, a
trap or a kernel that never ends costs the check it happens in, named at its line, and nothing else."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import brrr, copy_op, plant, validate

from brrr_kernels.base.interrupts import descendants
from brrr_kernels.cuda import cpu_build, isolated
from brrr_kernels.verdict.report import FAIL, PASS

pytestmark = pytest.mark.skipif(not cpu_build.available(), reason="needs a host compiler")

BINDING_FAULTS = {
    # forward: abort() on the 401-element case; backward: a wild write on cases over 200 elements
    "at::Tensor forward(at::Tensor x) {": "at::Tensor forward(at::Tensor x) {\n    if (x.numel() == 401) std::abort();",
    "at::Tensor backward(at::Tensor grad_y, at::Tensor y) {":
        "at::Tensor backward(at::Tensor grad_y, at::Tensor y) {\n"
        "    if (grad_y.numel() > 200) *(volatile int*)(intptr_t)grad_y.numel() = 1;",
}

KERNEL_FAULTS = {
    "template <typename T, int W>\n"
    "__global__ void sigmoid_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {":
        "__device__ __noinline__ int big_local(int64_t n) {\n"
        "    volatile char big[4 << 20];  // BIG\n"
        "    big[(4 << 20) - 1] = static_cast<char>(n);\n"
        "    return big[(4 << 20) - 1] + big[0];\n"
        "}\n\n"
        "template <typename T, int W>\n"
        "__global__ void sigmoid_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {\n"
        "    if (n == 127) __trap();  // TRAP\n"
        "    if (n == 129 && threadIdx.x == 3) y[0] = static_cast<T>(big_local(n));\n"
        "    if (n == 255 && threadIdx.x == 0) {\n"
        "        for (volatile int64_t spin = 0; spin >= 0; spin = spin + 1 - 1) {  // LOOP\n"
        "        }\n"
        "    }",
}


def _planted(tmp: Path, name: str, file: str, edits: dict[str, str]) -> Path:
    folder = copy_op("sigmoid", tmp)
    folder = folder.rename(tmp / name)
    for old, new in edits.items():
        plant(folder, file, old, new)
    return folder


def _line(folder: Path, file: str, mark: str) -> int:
    return next(i for i, text in enumerate((folder / file).read_text().splitlines(), 1) if mark in text)


def _isolated_children() -> list[int]:
    """Processes below this one that run an op's code (the forkserver they fork from may stay, idle)."""
    found = []
    for pid in descendants(os.getpid()):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == isolated.CHILD_NAME:
                found.append(pid)
        except OSError:
            continue
    return found


def _details(rows: list) -> str:
    return "\n".join(f"{r.stage} {r.check} {r.dtype} {r.verdict}\n{r.detail}" for r in rows)


def _built(rows: list) -> None:
    compile_row = next(r for r in rows if r.check == "compile")
    assert not compile_row.failed, compile_row.detail


def test_a_crash_in_binding_cpp_fails_its_cases_at_its_line_and_the_rest_goes_on(tmp_path: Path) -> None:
    folder = _planted(tmp_path, "crashing", "binding.cpp", BINDING_FAULTS)
    rows = validate(folder, "cuda")
    _built(rows)
    text = _details(rows)
    forward = next(r for r in rows if r.check == "forward" and r.dtype == "float32")
    backward = next(r for r in rows if r.check == "backward" and r.dtype == "float32")
    abort_line = _line(folder, "binding.cpp", "std::abort()")
    wild_line = _line(folder, "binding.cpp", "volatile int*")
    assert forward.verdict == FAIL and "[size 401]" in forward.detail, text
    assert f"binding.cpp:{abort_line}" in forward.detail and "SIGABRT" in forward.detail, forward.detail
    assert backward.verdict == FAIL and f"binding.cpp:{wild_line}" in backward.detail, backward.detail
    assert "SIGSEGV" in backward.detail and "the last launch entered: sigmoid_forward_kernel" in backward.detail
    # the other cases ran: sizes under 200 pass backward, and every forward case but 401 was compared
    assert {"size 1", "size 127", "size 129"} <= set(backward.cases), backward.cases
    assert {"size 255", "size 4099"} <= set(forward.cases), forward.cases
    edge = next(r for r in rows if r.check == "edge forward" and r.dtype == "float32")
    assert edge.verdict == PASS, text
    assert _isolated_children() == []


def test_a_trap_a_stack_overflow_and_an_endless_loop_are_named_at_their_kernel_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRRR_CPU_TIMEOUT", "2")  # the loop is caught at this limit, whatever the machine's load
    folder = _planted(tmp_path, "kernel_faults", "kernel.cu", KERNEL_FAULTS)
    rows = validate(folder, "cuda")
    _built(rows)
    forward = next(r for r in rows if r.check == "forward" and r.dtype == "float32")
    detail = forward.detail
    trap, big, loop = (_line(folder, "kernel.cu", m) for m in ("// TRAP", "// BIG", "// LOOP"))
    assert f"kernel.cu:{trap}" in detail and "trap" in detail and "out-of-bounds" not in detail, detail
    assert f"kernel.cu:{big - 1}" in detail and "stack overflow" in detail and "thread (3, 0, 0)" in detail, detail
    assert f"kernel.cu:{loop}" in detail and "time limit" in detail, detail
    # a kernel that ran out of time is refused at once afterwards: every later forward fails with its fault
    later = next(r for r in rows if r.check == "forward" and r.dtype == "float64")
    assert later.verdict == FAIL and f"kernel.cu:{loop}" in later.detail, later.detail
    assert _isolated_children() == []


@pytest.mark.parametrize("value", ["abc", "-3", "nan", "0"])
def test_a_malformed_cpu_timeout_is_a_usage_error(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from brrr_kernels.base.errors import UsageError

    monkeypatch.setenv("BRRR_CPU_TIMEOUT", value)
    with pytest.raises(UsageError, match=f"BRRR_CPU_TIMEOUT='{value}': expected a number of seconds above 0"):
        isolated.cpu_time_limit()


def test_a_malformed_setting_stops_validate_before_work() -> None:
    result = brrr("validate", "sigmoid", "--stage", "reference", env={"BRRR_CPU_TIMEOUT": "abc"})
    assert result.returncode == 2, result.stderr
    assert "BRRR_CPU_TIMEOUT='abc'" in result.stderr and "Traceback" not in result.stderr


def test_two_jobs_one_op_crashing_report_both_and_write_json(tmp_path: Path) -> None:
    crashing = _planted(tmp_path, "crashing", "binding.cpp", BINDING_FAULTS)
    healthy = copy_op("sigmoid", tmp_path / "healthy")
    out = tmp_path / "report.json"
    result = brrr("validate", str(crashing), str(healthy), "--stage", "cuda", "--jobs", "2", "--json", str(out))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BrokenProcessPool" not in result.stdout + result.stderr
    assert "SIGSEGV" in result.stdout and "binding.cpp" in result.stdout
    report = json.loads(out.read_text())
    folders = {r.get("op") for r in report["rows"]}
    assert folders == {"sigmoid"} and len(report["rows"]) >= 2 * 30, len(report["rows"])
    verdicts = [r["verdict"] for r in report["rows"]]
    assert verdicts.count("pass") > len(verdicts) // 2


def _answer_after(end: object, nap: float, spin: bool) -> None:
    import time

    until = time.monotonic() + nap
    while spin and time.monotonic() < until:  # CPU time, as a loop in host code spends it
        pass
    time.sleep(0 if spin else nap)  # no CPU time, as a call waiting for a core on a loaded machine
    end.send("done")  # type: ignore[attr-defined]


@pytest.mark.parametrize("nap, spin, answered", [(0.6, False, True), (30.0, True, False), (30.0, False, False)])
def test_a_calls_limit_is_the_childs_cpu_time_or_four_times_it_in_wall_time(nap: float, spin: bool,
                                                                            answered: bool) -> None:
    import multiprocessing

    context = multiprocessing.get_context("fork")
    mine, end = context.Pipe()
    child = context.Process(target=_answer_after, args=(end, nap, spin), daemon=True)
    child.start()
    try:
        # 0.6 s asleep is past a 0.3 s limit in wall time but spends no CPU time: answered. A spin is
        # stopped at its CPU limit; a child blocked for good, at 4 times the limit in wall time.
        assert isolated._answered(mine, child.pid, 0.3) is answered
    finally:
        child.kill()
        child.join()
