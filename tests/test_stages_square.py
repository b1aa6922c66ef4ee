"""square: planted 2-D indexing bugs that validation must catch, and its thread layout."""

from __future__ import annotations

import re

import pytest
from conftest import HAS_GPU, needs_nvcc
from test_runner import failed, validate

from pipeline.report import NOT_RUN
from pipeline.spec import load_op

FORWARD_BODY = (
    "    col, row = cuda.grid(2)\n"
    "    if col >= cols:\n"
    "        return\n"
    "    for r in range(row, rows, cuda.gridDim.y * cuda.blockDim.y):\n"
    "        v = x[r, col]"
)


def test_swapped_grid_axes_leave_elements_unwritten(mutant) -> None:
    """row, col = cuda.grid(2): rows walk along x, columns along y; the grid no longer covers the matrix."""
    op = mutant("square", "numba_kernel.py", FORWARD_BODY, FORWARD_BODY.replace("col, row = cuda", "row, col = cuda"))
    bad = failed(validate(op, "numba"))
    row = bad[("numba", "forward", "float32")]
    assert "NaN where a number was expected" in row.detail
    assert row.worst.got != row.worst.got  # NaN: the poison survived
    assert ("numba", "backward", "float32") not in bad  # the planted bug is in the forward kernel only


def test_missing_column_bounds_check_names_the_thread_past_the_edge(mutant) -> None:
    op = mutant("square", "numba_kernel.py", FORWARD_BODY, FORWARD_BODY.replace("    if col >= cols:\n        return\n", ""))
    row = failed(validate(op, "numba"))[("numba", "forward", "float32")]
    assert "IndexError" in row.detail and "in square_forward_kernel" in row.detail and "v = x[r, col]" in row.detail
    pattern = r"block \((\d+), \d+, 0\) thread \((\d+), \d+, 0\).*locals: (.*)"
    faults = [re.search(pattern, part, re.S) for part in row.detail.split("\n[")]
    assert faults and all(faults), row.detail
    for bx, tx, local_vars in (f.groups() for f in faults):
        values = dict(kv.split("=") for kv in local_vars.strip().split(", "))
        col, cols = int(values["col"]), int(values["cols"])
        assert int(bx) * 8 + int(tx) == col >= cols  # the thread named is one past the last column


def test_rows_loop_that_stops_one_short_fails(mutant) -> None:
    op = mutant("square", "numba_kernel.py", FORWARD_BODY, FORWARD_BODY.replace("range(row, rows,", "range(row, rows - 1,"))
    row = failed(validate(op, "numba"))[("numba", "forward", "float64")]
    assert "NaN where a number was expected" in row.detail
    rows, _ = row.worst.shape
    assert row.worst.index[0] == rows - 1


@pytest.mark.parametrize("stage,block", [("numba", (8, 8)), ("cuda", (32, 8))])
def test_layout_names_the_thread_for_a_2d_index(stage: str, block: tuple[int, int]) -> None:
    locate = load_op("square").spec.layouts[stage].locate
    bx, by = block
    rows, cols = 3 * by + 5, 2 * bx + 3
    r, c = rows - 1, cols - 1
    assert locate(r * cols + c, (rows, cols)) == ((c // bx, r // by, 0), (c % bx, r % by, 0))


def test_cuda_layout_wraps_rows_past_the_grid_y_limit() -> None:
    """More than 65535 blocks of 8 rows: row 65535*8 is handled by block y 0, thread y 0, on its second pass."""
    locate = load_op("square").spec.layouts["cuda"].locate
    rows = 2**20 + 3
    assert locate(65535 * 8, (rows, 1)) == ((0, 0, 0), (0, 0, 0))
    assert locate(65535 * 8 + 13, (rows, 1)) == ((0, 1, 0), (0, 5, 0))


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_compiles_without_spills() -> None:
    (row,) = validate("square", "cuda")
    assert row.verdict == NOT_RUN
    kernels = {k["kernel"]: k for k in row.extras["kernels"]}
    assert {"square_forward_kernel<float>", "square_backward_kernel<double>"} <= set(kernels)
    assert all(k["spill_stores"] == 0 for k in kernels.values())
