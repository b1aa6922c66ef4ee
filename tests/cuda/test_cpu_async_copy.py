"""Asynchronous copies on the CPU (include/cpu/brrr_cpu_async.h, brrr_cpu_libcudacxx.h; cp.async through
pipeline/cpu_ptx.py): tiles staged through shared memory arrive where a GPU puts them, and a copy's
destination touched before the wait that lands it is a fault naming both lines (checked build), or
reads what was there before (plain build) rather than passing by luck of the sequential order."""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_programs import build, line_in, run

CASES = Path(__file__).with_name("async_copy_cases.cu")
SOURCE = CASES.resolve()
TILE, TILES = 128, 5
INPUT = [(i % 97) * 0.25 - 3.0 for i in range(TILE * TILES)]
CORRECT = ["ptx_double_buffer", "primitives", "thread_pipeline", "block_barrier", "tensor_copies", "bulk_copies",
           "bulk_one_waits_then_syncthreads", "bulk_lanes_wait_then_syncwarp", "bulk_stores", "tensor_stores"]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-async"))


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cases with the memory checks, as `brrr validate` runs a kernel (no allocation registry:
    shared memory is checked, global bounds are not)."""
    return build(CASES, tmp_path_factory.mktemp("cpu-async-checked"), checked=True)


def values(out: str) -> list[float]:
    assert not out.startswith("FAULT"), out
    return [float(v) for v in out.split()]


def line_of(text: str) -> int:
    return line_in(CASES, text)


@pytest.mark.parametrize("case", CORRECT)
@pytest.mark.parametrize("build_kind", ["plain", "checked"])
def test_staged_tiles_arrive(request: pytest.FixtureRequest, case: str, build_kind: str) -> None:
    program = request.getfixturevalue(build_kind)
    assert values(run(program, case)) == [2 * x + 1 for x in INPUT]


@pytest.mark.parametrize("build_kind", ["plain", "checked"])
def test_an_mbarrier_initialised_again_for_every_tile_past_the_tracked_count(request: pytest.FixtureRequest,
                                                                            build_kind: str) -> None:
    """1100 mbarrier.init in one block, past the 1024 barriers whose phases the runtime records per
    thread: the tiles still arrive (the rest go unrecorded rather than growing memory with every init).
    Over a second of fiber switches, so the launch's time limit is raised for it."""
    out = run(request.getfixturevalue(build_kind), "bulk_reinit_per_tile", env={"BRRR_CPU_TIMEOUT": "120"})
    assert values(out) == [2 * x + 1 for x in INPUT]


@pytest.mark.parametrize("build_kind", ["plain", "checked"])
def test_cvta_to_and_from_shared_in_ptx_round_trips(request: pytest.FixtureRequest, build_kind: str) -> None:
    out = run(request.getfixturevalue(build_kind), "cvta_round_trip")
    assert values(out) == [2 * x + 1 for x in INPUT[:32]]


def test_cp_async_src_size_fills_the_rest_with_zeros(checked: Path) -> None:
    assert values(run(checked, "ptx_zero_fill")) == [2 * x + 1 for x in INPUT[:6]] + [1.0, 1.0]


@pytest.mark.parametrize("case, read, tile", [
    ("read_before_wait", "out[threadIdx.x * 4 + k] = 2.0f * buf[threadIdx.x * 4 + k] + 1.0f;", 0),
    ("wait_group_too_lax", "// the last: in flight", TILES - 1),
])
def test_planted_read_before_wait_group(plain: Path, checked: Path, case: str, read: str, tile: int) -> None:
    out = run(checked, case)
    copy = line_of('asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\\n"')
    assert out.startswith(f"FAULT: {SOURCE}:{line_of(read)}: read before an asynchronous copy landed"), out
    assert f"issued at {SOURCE}:{copy} has not landed" in out, out
    # Without the checks the tile is not there: sequential execution does not hide the bug.
    got = values(run(plain, case))
    assert got[tile * TILE:(tile + 1) * TILE] != [2 * x + 1 for x in INPUT[tile * TILE:(tile + 1) * TILE]]


def test_a_landed_copy_read_by_another_thread_without_a_barrier_races(checked: Path) -> None:
    out = run(checked, "landed_without_barrier")
    copy = line_of("__pipeline_memcpy_async(&buf[threadIdx.x * 4], in + threadIdx.x * 4, 16);")
    read = line_of("out[threadIdx.x] = buf[(threadIdx.x * 4 + 4) % kTile];")
    assert out.startswith(f"FAULT: {SOURCE}:{copy}: race on shared memory"), out
    assert f"read at {SOURCE}:{read} with no __syncthreads" in out, out


@pytest.mark.parametrize("case, marker, kind, detail", [
    ("misaligned_copy", "in + threadIdx.x * 4 + 1, 16);", "asynchronous copy", "needs both aligned to 16 bytes"),
    ("barrier_missing_arrival", "bar.arrive_and_wait();\n    out[threadIdx.x] = buf", "deadlock",
     "phase still needs 1 of its 32 arrivals"),
])
def test_planted_misuse_is_named_at_once(plain: Path, case: str, marker: str, kind: str, detail: str) -> None:
    out = run(plain, case)  # BRRR_CPU_TIMEOUT is 2 s: a deadlock reported by the time-out would say so
    text = CASES.read_text()
    line = text.count("\n", 0, text.index(marker)) + 1
    assert out.startswith(f"FAULT: {SOURCE}:{line}: {kind}"), out
    assert detail in out and "BRRR_CPU_TIMEOUT" not in out, out


@pytest.mark.parametrize("case, copy, read", [
    # libcudacxx's cp_async_bulk_tensor_2d_global_to_shared onto a cuda::barrier with barrier_arrive_tx
    ("tensor_read_before_wait", "cp_async_bulk_tensor_2d_global_to_shared(&buf[j][0]", "// tensor read"),
    # cp.async.bulk onto a PTX mbarrier, its expect_tx arrival first (the order CUTLASS and most Hopper
    # kernels issue them in)
    ("bulk_read_before_wait", "// bulk copy", "// bulk read"),
])
def test_a_tile_read_before_its_copy_landed_names_both_lines(plain: Path, checked: Path, case: str, copy: str,
                                                             read: str) -> None:
    """A copy onto a barrier lands when the barrier's phase completes (every arrival made, every byte
    delivered), so a tile read before the wait is named in the checked build with the copy's line: read
    before the copy landed, or a race with its landing (no barrier between the read and the copy). Without
    the checks the tile read is not the copy's: wrong values, or a fault."""
    out = run(checked, case)
    copy_at, read_at = f"{SOURCE}:{line_of(copy)}", f"{SOURCE}:{line_of(read)}"
    landed = out.startswith(f"FAULT: {read_at}: read before an asynchronous copy landed") and copy_at in out
    raced = out.startswith(f"FAULT: {copy_at}: race on shared memory") and f"read at {read_at}" in out
    assert landed or raced, out
    out = run(plain, case)
    assert out.startswith("FAULT") or values(out)[:TILE] != [2 * x + 1 for x in INPUT[:TILE]], out


def test_a_tile_read_after_it_landed_by_a_thread_that_never_waited_names_the_copy(checked: Path) -> None:
    """The copy has landed in the CPU's order, and a __syncthreads separates it from the reads, so no
    race is seen and the values are right; but no thread waited on the mbarrier, so on a GPU the bytes
    need not be there. A thread may read what a copy onto a barrier landed only once it has seen the
    barrier's phase complete, by its own wait or through a __syncthreads or __syncwarp after a thread that
    waited (the correct cases bulk_one_waits_then_syncthreads and bulk_lanes_wait_then_syncwarp)."""
    out = run(checked, "bulk_syncthreads_without_wait")
    read_at = f"{SOURCE}:{line_of('// bulk read')}"
    assert out.startswith(f"FAULT: {read_at}: read before an asynchronous copy landed"), out
    copy_at = f"{SOURCE}:{line_of('// bulk copy')}"
    assert f"issued at {copy_at} landed as phase 0 (parity 0) of the mbarrier at shared offset" in out, out
    assert "completed; this thread has not waited for that phase" in out, out


def test_a_bulk_copy_running_past_its_shared_array_is_an_out_of_bounds_write_at_its_line(checked: Path) -> None:
    """Two tiles' bytes into buf[1] run on past buf: named when the copy is issued, before it lands in
    whatever follows buf in shared memory."""
    out = run(checked, "bulk_past_buffer")
    assert out.startswith(f"FAULT: {SOURCE}:{line_of('// bulk copy')}: "
                          "out-of-bounds write"), out
    assert "buf" in out, out


@pytest.mark.parametrize("build_kind", ["plain", "checked"])
def test_a_bulk_copy_of_a_size_not_a_multiple_of_16_is_a_fault_naming_its_line(request: pytest.FixtureRequest,
                                                                               build_kind: str) -> None:
    out = run(request.getfixturevalue(build_kind), "bulk_size_not_16")
    assert out.startswith(f"FAULT: {SOURCE}:{line_of('// bulk copy')}: "), out
    assert "cp.async.bulk of 508 bytes" in out and "a positive multiple of 16" in out, out
