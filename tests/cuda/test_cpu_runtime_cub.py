"""CUB's block and warp collectives on the CPU (include/cpu/cub/): kernels written as public CUDA code
writes them (vLLM's `cub::BlockReduce<float, 1024>(temp).Reduce(v, cub::Sum{}, blockDim.x)`), with
the values each thread should see computed here from CUB's documented contracts: the aggregate in
thread 0 (lane 0) only, every other thread a poison; float sums in CUB's WARP_REDUCTIONS order; and
planted bugs (a TempStorage reused without a barrier, a call in a branch) failing at their line."""

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
])
def test_planted_cub_bugs_fail_naming_the_line(program: Path, case: str, line: str, kind: str, detail: str) -> None:
    out = run(program, case)
    assert out.startswith(f"FAULT: {SOURCE}:{line_of(line)}: {kind}"), out
    assert detail in out, out


def test_a_temp_storage_reused_without_a_barrier_races(program: Path) -> None:
    """CUB puts no barrier after a reduction: thread 0 still reads the partials the next call writes."""
    out = run(program, "reuse_without_sync")
    first, second = line_of("// bug: reused storage, first use"), line_of("const float b = BlockReduce(temp).Reduce")
    assert out.startswith(f"FAULT: {SOURCE}:"), out
    assert "race on shared memory in reuse_without_sync" in out, out
    assert {f"{SOURCE}:{first}", f"{SOURCE}:{second}"} <= set(out.replace(": ", " ").split()), out
