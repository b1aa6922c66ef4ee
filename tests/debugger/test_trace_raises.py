"""`brrr trace` into a kernel that raises: the kernel's file, line, thread and locals, exit 1 (it
printed "internal error (a bug in brrr): ZeroDivisionError" for a while)."""

from __future__ import annotations

from pathlib import Path

from conftest import brrr, copy_op, plant


def test_trace_into_a_kernel_that_raises_names_file_line_thread_and_locals(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "numba_kernel.py", "    v = x[i]\n", "    v = x[i] + 1 // (i - 3)\n")
    line = next(n for n, t in enumerate((folder / "numba_kernel.py").read_text().splitlines(), 1) if "// (i - 3)" in t)
    result = brrr("trace", str(folder), "--block", "0", "--thread", "3")
    assert result.returncode == 1, result.stdout + result.stderr
    err = result.stderr
    assert f"numba_kernel.py:{line} in sigmoid_forward_kernel" in err and "thread (3, 0, 0)" in err, err
    assert "ZeroDivisionError" in err and "locals:" in err and "i=3" in err, err
    assert "internal error" not in err and "Traceback" not in err
