"""The lines where numba's simulator (NumPy 2's weak Python scalars) and a GPU (float64 literals) differ."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import brrr

from brrr_kernels.sim.floats import mixed_lines

KERNEL = '''
from numba import cuda

@cuda.jit
def k(x, y, n):
    i = cuda.grid(1)
    total = 0.0
    {line}

def host(x):
    return x[0] * 2.0  # not a kernel: never flagged
'''


@pytest.mark.parametrize(("line", "flagged"), [
    ("y[i] = x[i] * 0.5", True),
    ("y[i] = 1.0 - x[i]", True),
    ("y[i] = x[i] * -2", True),
    ("total += x[i]", True),
    ("y[i] = float(x[i]) * 0.5", False),  # the fix
    ("total += float(x[i])", False),
    ("y[i] = x[i] * x[i]", False),  # float32 with float32: float32 on both
    ("y[i] = x[i + 1]", False),  # index arithmetic is not float arithmetic
])
def test_an_element_meeting_a_python_number_is_found(tmp_path: Path, line: str, flagged: bool) -> None:
    path = tmp_path / "numba_kernel.py"
    path.write_text(KERNEL.format(line=line))
    found = mixed_lines(path)
    assert [m.code for m in found] == ([line] if flagged else [])
    if flagged:
        assert found[0].line == 8 and "write float(...)" in found[0].describe("numba_kernel.py")


def test_validate_notes_the_lines_of_a_simulated_float32_run() -> None:
    proc = brrr("validate", "sigmoid", "--stage", "numba")
    assert proc.returncode == 0, proc.stderr
    assert "note: " in proc.stderr and "numba_kernel.py:31: `grad_x[i] = grad_y[i] * y[i] * (1.0 - y[i])`" in proc.stderr
