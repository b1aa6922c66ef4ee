"""The lines where numba's simulator (NumPy 2's weak Python scalars) and a GPU (float64 literals) differ."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import STAGES, brrr, copy_op

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


def test_validate_notes_the_lines_of_a_simulated_float32_run(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    kernel = folder / "numba_kernel.py"
    line = "    grad_x[i] = float(grad_y[i]) * float(y[i]) * (1.0 - float(y[i]))"
    kernel.write_text(kernel.read_text().replace(line, "    grad_x[i] = grad_y[i] * y[i] * (1.0 - y[i])"))
    proc = brrr("validate", str(folder), "--stage", "numba")
    assert proc.returncode == 0, proc.stderr
    assert "note: " in proc.stderr and "numba_kernel.py:31: `grad_x[i] = grad_y[i] * y[i] * (1.0 - y[i])`" in proc.stderr


ARRAYS = '''
from numba import cuda, float64, int32
import numpy as np

@cuda.jit
def k(x, y, n):
    i = cuda.grid(1)
    part = cuda.shared.array(64, dtype=float64)
    idx = cuda.local.array(4, int32)
    acc = cuda.local.array(4, dtype=np.float64)
    mine = cuda.shared.array(64, dtype="float64")
    f32 = cuda.shared.array(64, dtype=float32)
    total = 0.0
    total += part[i]
    y[i] = part[i] * 0.5 + acc[0] * 2.0 + mine[0] * 3.0 - idx[0] * 1.5
    total += f32[i]
    y[i] = x[i] * 0.5
'''


def test_an_array_declared_float64_or_integer_is_not_float32(tmp_path: Path) -> None:
    """A read from a float64 shared array meets a Python number in float64 in the simulator as on a
    GPU: only the float32 shared array and the kernel argument are noted."""
    path = tmp_path / "numba_kernel.py"
    path.write_text(ARRAYS)
    assert [m.code for m in mixed_lines(path)] == ["total += f32[i]", "y[i] = x[i] * 0.5"]


@pytest.mark.parametrize("op", sorted(p.name for p in STAGES.iterdir() if (p / "numba_kernel.py").is_file()))
def test_no_built_in_op_prints_a_note(op: str) -> None:
    assert mixed_lines(STAGES / op / "numba_kernel.py") == []
