"""square: planted 2-D indexing bugs that validation must catch, and its thread layout."""

from __future__ import annotations

import re

import pytest
import torch
from conftest import HAS_GPU, compile_only, failed, gpu, needs_nvcc, validate

from brrr_kernels.cuda import builder
from brrr_kernels.op.loaders import load_op
from brrr_kernels.verdict.report import NOT_RUN


def test_swapped_grid_axes_leave_elements_unwritten(mutant) -> None:
    """row, col = cuda.grid(2): rows walk along x, columns along y; the grid no longer covers the matrix."""
    op = mutant("square", "swapped_grid_axes")
    bad = failed(validate(op, "numba"))
    row = bad[("numba", "forward", "float32")]
    assert "NaN where a number was expected" in row.detail
    assert row.worst.got != row.worst.got  # NaN: the poison survived
    assert ("numba", "backward", "float32") not in bad  # the planted bug is in the forward kernel only


def test_missing_column_bounds_check_names_the_thread_past_the_edge(mutant) -> None:
    op = mutant("square", "no_column_check")
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
    op = mutant("square", "rows_one_short")
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


def kernel_cu_owners(rows: int, cols: int, width: int, block: tuple[int, int] = (32, 8)) -> dict[int, tuple]:
    """kernel.cu's loops replayed in Python: the (block, thread) that writes each element."""
    bx, by = block
    packs_per_row = -(-cols // width)
    grid_x, grid_y = -(-packs_per_row // bx), min(-(-rows // by), 65535)
    owners: dict[int, tuple] = {}
    for block_x in range(grid_x):
        for block_y in range(grid_y):
            for tx in range(bx):
                for ty in range(by):
                    pack, row = block_x * bx + tx, block_y * by + ty
                    if pack * width >= cols:
                        continue
                    for r in range(row, rows, grid_y * by):
                        head = -(r * cols) % width
                        columns = list(range(min(head, cols))) if pack == 0 else []
                        c0 = head + pack * width
                        columns += range(c0, min(c0 + width, cols))
                        for c in columns:
                            assert r * cols + c not in owners, f"element ({r}, {c}) written twice"
                            owners[r * cols + c] = ((block_x, block_y, 0), (tx, ty, 0))
    return owners


@pytest.mark.parametrize("shape", [(1, 1), (5, 1), (3, 3), (17, 8), (11, 19), (9, 257), (3, 1032)])
@pytest.mark.parametrize("itemsize", [4, 8])
def test_cuda_layout_is_the_kernels_packs_and_covers_each_element_once(shape: tuple[int, int], itemsize: int) -> None:
    """Each row's packs start at its first 16-byte aligned column; head and tail go to pack 0 and the last pack."""
    layout = load_op("square").spec.layouts["cuda"]
    owners = kernel_cu_owners(*shape, width=16 // itemsize)
    assert sorted(owners) == list(range(shape[0] * shape[1]))
    for index, place in owners.items():
        assert layout.place(index, shape, itemsize) == place, index


def test_cuda_layout_names_the_pack_past_a_rows_head() -> None:
    place = load_op("square").spec.layouts["cuda"].place
    cols = 257  # row 5 starts 1285 elements in: 1 past a float32 16-byte boundary, so its head is 3
    assert place(5 * cols + 2, (9, cols), 4) == ((0, 0, 0), (0, 5, 0))  # head column: pack 0's
    assert place(5 * cols + 7, (9, cols), 4) == ((0, 0, 0), (1, 5, 0))  # columns 7..10: pack 1
    assert place(5 * cols + 256, (9, cols), 4) == ((1, 0, 0), (31, 5, 0))  # tail column of pack 63
    assert place(5 * cols + 256, (9, cols), 8) == ((3, 0, 0), (31, 5, 0))  # float64: head 1, pack 127


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_compiles_without_spills() -> None:
    (row,) = compile_only("square")
    assert row.verdict == NOT_RUN
    kernels = {k["kernel"]: k for k in row.extras["kernels"]}
    for t, w in (("float", 4), ("double", 2)):
        for kernel in ("square_forward_kernel", "square_backward_kernel"):
            assert f"{kernel}<{t}, {w}>" in kernels and f"{kernel}<{t}, 1>" in kernels
    assert all(k["spill_stores"] == 0 for k in kernels.values())


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("offset", [0, 1])
def test_rows_of_any_alignment_match_torch(dtype: torch.dtype, offset: int) -> None:
    """offset 0: packs from each row's first aligned column; offset 1: x starts off a 16-byte boundary, the scalar path."""
    ext = builder.build_extension(load_op("square"))
    for rows, cols in ((5, 1), (9, 3), (67, 257), (33, 1032)):
        x = torch.randn(offset + rows * cols, device="cuda", dtype=dtype)[offset:].view(rows, cols)
        g = torch.randn(rows, cols, device="cuda", dtype=dtype)
        assert torch.equal(ext.forward(x), x * x)
        assert torch.equal(ext.backward(g, x), 2 * x * g)
