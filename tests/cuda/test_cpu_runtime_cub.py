"""CUB's block and warp collectives on the CPU (include/cpu/cub/): kernels written as public CUDA code
writes them (vLLM's `cub::BlockReduce<float, 1024>(temp).Reduce(v, cub::Sum{}, blockDim.x)`), with
the values each thread should see computed here from CUB's documented contracts: the aggregate in
thread 0 (lane 0) only, every other thread a poison; float sums in CUB's WARP_REDUCTIONS order; BlockLoad
and BlockStore's blocked and striped arrangements, guarded ends and TempStorage sizes; and planted bugs
(a TempStorage reused without a barrier, a call in a branch) failing at their line."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from cpu_programs import build, line_in, run

CASES = Path(__file__).with_name("cub_cases.cu")
SOURCE = CASES.resolve()
INT_POISON = -1515870811  # 0xA5A5A5A5


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-cub"), checked=True)


def line_of(text: str) -> int:
    return line_in(CASES, text)


def floats_x(n: int) -> list[np.float32]:
    return [np.float32(((i * 7919) % 1001) / 7.0 - 70.0) for i in range(n)]


def pattern(n: int) -> list[int]:
    return [(i * 7919) % 1001 - 500 for i in range(n)]


def cub_sum(values: list[np.float32]) -> np.float32:
    """CUB's BLOCK_REDUCE_WARP_REDUCTIONS order in float32: a shuffle tree in each warp of 32 (step k
    adds lane i + 2^k to lane i), then the warp sums one after another."""
    total = None
    for base in range(0, len(values), 32):
        v = list(values[base:base + 32])
        offset = 1
        while offset < 32:
            for i in range(0, len(v) - offset, 2 * offset):
                v[i] = np.float32(v[i] + v[i + offset])
            offset *= 2
        total = v[0] if total is None else np.float32(total + v[0])
    return total


def test_block_reduce_sums_in_cubs_order_and_takes_max_min_over_num_valid(program: Path) -> None:
    got = [float(v) for v in run(program, "block_reduce_1d").split()]
    x = floats_x(384)
    for b in range(3):
        block = x[b * 128:(b + 1) * 128]
        expected = [cub_sum(block), max(block), cub_sum(block[:77]), min(block[:77])]
        assert got[4 * b:4 * b + 4] == [float(e) for e in expected], f"block {b}"
    # the order is CUB's, not a sequential one: the two differ in the last bits here
    sequential = np.float32(0)
    for v in x[:128]:
        sequential = np.float32(sequential + v)
    assert float(sequential) != got[0]


def test_a_2d_block_reduces_items_per_thread_and_scans_from_a_union_of_storages(program: Path) -> None:
    got = [int(v) for v in run(program, "block_reduce_2d").split()]
    x = pattern(512)
    firsts = [x[t * 4] for t in range(128)]
    assert got[:128] == [sum(firsts[:t]) for t in range(128)]
    assert got[128] == sum(x)


def test_vllms_block_reduce_of_1024_in_a_block_of_blockdim_threads(program: Path) -> None:
    assert float(run(program, "block_reduce_smaller_block")) == float(cub_sum(floats_x(200)))


def test_the_aggregate_is_poison_outside_thread_0(program: Path) -> None:
    """A kernel that stores every thread's aggregate fails on the CPU, as it may on a GPU."""
    floats, ints = run(program, "aggregate_everywhere").splitlines()
    f = [float(v) for v in floats.split()]
    assert f[0] == float(cub_sum(floats_x(64)))
    assert all(math.isnan(v) for v in f[1:])
    assert [int(v) for v in ints.split()] == [sum(range(64))] + [INT_POISON] * 63


def test_warp_reduce_in_lane_0_of_each_logical_warp(program: Path) -> None:
    got = [int(v) for v in run(program, "warp_reduce").split()]
    x = pattern(64)
    for t in range(64):
        w32, w8 = t // 32 * 32, t // 8 * 8
        expected = [
            sum(x[w32:w32 + 32]) if t % 32 == 0 else INT_POISON,
            sum(x[w8:w8 + 5]) if t % 8 == 0 else INT_POISON,
            max(x[w8:w8 + 8]) if t % 8 == 0 else INT_POISON,
            max(x[w32:w32 + 20]) if t % 32 == 0 else INT_POISON,
        ]
        assert got[t * 4:t * 4 + 4] == expected, f"thread {t}"


def test_block_scans_inclusive_exclusive_initial_value_and_items(program: Path) -> None:
    got = [int(v) for v in run(program, "block_scan").split()]
    x = pattern(96)
    flat = [v for t in range(96) for v in (x[t], 2 * x[t], t)]
    for t in range(96):
        expected = [
            sum(x[:t + 1]), sum(x[:t]), sum(x),
            max([-50, *x[:t]]),
            min(x[:t]) if t else INT_POISON,  # undefined in thread 0 without an initial value
            *[sum(flat[:3 * t + k + 1]) for k in range(3)],
        ]
        assert got[t * 8:t * 8 + 8] == expected, f"thread {t}"


@pytest.mark.parametrize("case, line, kind, detail", [
    ("reduce_in_a_branch", "if (threadIdx.x < 32) v = BlockReduce(temp).Sum", "barrier divergence",
     "returned without reaching it"),
    ("block_larger_than_declared", "// bug: block larger", "cub",
     "cub::BlockReduce declared for a block of (64, 1, 1) threads runs in a block of (96, 1, 1)"),
    ("full_reduce_in_smaller_block", "// bug: no num_valid", "cub", "declared for 256 threads reduces over all of them"),
    ("warp_lane_returns", "// bug: lane 7 returned", "warp mask", "for lane 7, which returned without reaching it"),
    ("transpose_in_smaller_block", "// bug: 48 of 64 threads", "cub",
     "cub::BlockLoad declared for 64 threads transposes through its TempStorage in a block of 48"),
])
def test_planted_cub_bugs_fail_naming_the_line(program: Path, case: str, line: str, kind: str, detail: str) -> None:
    out = run(program, case)
    assert out.startswith(f"FAULT: {SOURCE}:{line_of(line)}: {kind}"), out
    assert detail in out, out


@pytest.mark.parametrize("case, first, second", [
    ("reuse_without_sync", "// bug: reused storage, first use", "const float b = BlockReduce(temp).Reduce"),
    ("load_reused_without_sync", "// bug: reused load storage, first use", "BlockLoad(temp).Load(x + 128, b);"),
])
def test_a_temp_storage_reused_without_a_barrier_races(program: Path, case: str, first: str, second: str) -> None:
    """CUB puts no barrier after a reduction or a transposing load: a thread still reads what the next
    call writes."""
    out = run(program, case)
    first, second = line_of(first), line_of(second)
    assert out.startswith(f"FAULT: {SOURCE}:"), out
    assert f"race on shared memory in {case}" in out, out
    assert {f"{SOURCE}:{first}", f"{SOURCE}:{second}"} <= set(out.replace(": ", " ").split()), out


# ---- BlockLoad / BlockStore

ALGORITHMS = ["DIRECT", "STRIPED", "VECTORIZE", "TRANSPOSE", "WARP_TRANSPOSE", "WARP_TRANSPOSE_TIMESLICED"]
# block shape -> (dims, items per thread, the ragged end main() passes)
SHAPES = {"64x1x1": ((64, 1, 1), 8, 308), "16x4x1": ((16, 4, 1), 3, 116), "8x2x4": ((8, 2, 4), 5, 193)}


def position(algorithm: str, threads: int, items: int, t: int, i: int) -> int:
    """Where thread t's item i sits in the tile: striped for STRIPED, blocked for every other algorithm."""
    return i * threads + t if algorithm == "STRIPED" else t * items + i


def reader(algorithm: str, threads: int, items: int, p: int) -> tuple[int, int]:
    """The (thread, item) that reads tile position p from memory: a transpose reads striped or warp-striped,
    then exchanges, so past a guarded end a thread gets that reader's stale item."""
    if algorithm == "TRANSPOSE":
        return p % threads, p // threads
    if algorithm.startswith("WARP_TRANSPOSE"):
        warp, r = divmod(p, 32 * items)
        return warp * 32 + r % 32, r // 32
    return divmod(p, items) if algorithm != "STRIPED" else (p % threads, p // threads)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_block_load_and_store_arrange_items_as_cub_does(program: Path, algorithm: str, shape: str) -> None:
    (dx, dy, dz), items, n = SHAPES[shape]
    threads = dx * dy * dz
    tile = threads * items
    loaded, stored = ([int(v) for v in line.split()] for line in run(program, f"load_store/{algorithm}/{shape}").splitlines())
    x = pattern(tile)

    def fill(t: int, i: int) -> int:
        return 500000 + t * 100 + i

    want_full, want_guarded, want_default = [], [], []
    for t in range(threads):
        for i in range(items):
            p = position(algorithm, threads, items, t, i)
            want_full.append(x[p])
            want_guarded.append(x[p] if p < n else fill(*reader(algorithm, threads, items, p)))
            want_default.append(x[p] if p < n else -7)
    assert loaded[:tile] == want_full
    assert loaded[tile:2 * tile] == want_guarded
    assert loaded[2 * tile:] == want_default

    want_store, want_ragged = [0] * tile, [-9] * tile
    for t in range(threads):
        for i in range(items):
            p = position(algorithm, threads, items, t, i)
            want_store[p] = t * 100 + i
            if p < n:
                want_ragged[p] = -(t * 100 + i)
    assert stored[:tile] == want_store
    assert stored[tile:] == want_ragged  # the destination past the ragged end is untouched


def test_direct_loads_and_stores_with_and_without_a_guard(program: Path) -> None:
    out = [int(v) for v in run(program, "direct_functions").split()]
    x, n = pattern(192), 150
    want = [-9] * 960
    for t in range(64):
        for i in range(3):
            blocked, striped = t * 3 + i, i * 64 + t
            want[blocked] = x[striped] if striped < n else -3
            if striped < n:
                want[192 + striped] = x[blocked]
            want[384 + striped] = x[blocked] if blocked < n else -(i + 1)
            if blocked < n:
                want[576 + blocked] = x[striped]
            want[768 + blocked] = x[blocked] if blocked < n else 99
    assert out == want


def test_temp_storage_sizes_are_cubs(program: Path) -> None:
    """Kernels size dynamic shared memory by these: 128*4 floats; the same and the store's int guard, to 16
    bytes; 64*8 ints and CUB's padding slot per 32; one warp's 32*4 ints when time-sliced; 1 when direct."""
    assert [int(v) for v in run(program, "temp_storage_sizes").split()] == [2048, 2064, 2064, 2112, 512, 1, 1]


def test_a_temp_storage_union_in_dynamic_shared_memory_sized_by_sizeof(program: Path) -> None:
    got = [float(v) for v in run(program, "load_store_dynamic_smem").split()]
    x = [(i % 97) * 0.25 - 3.0 for i in range(1300)]
    assert got == [v * 2.0 + 1.0 for v in x] + [-9.0] * (1536 - 1300)


def test_a_vector_type_loads_through_a_reinterpreted_array(program: Path) -> None:
    got = [float(v) for v in run(program, "vector_load").split()]
    x = floats_x(256)
    assert got == [float(np.float32(x[j] * np.float32(j % 4 + 1))) for j in range(256)]
