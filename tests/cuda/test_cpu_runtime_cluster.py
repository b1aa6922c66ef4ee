"""Thread block clusters on the CPU (brrr_cpu_runtime.cpp, brrr_cpu_cg.h; `__cluster_dims__` through
cpu_source.py): a cluster's blocks run together, meet at the cluster barrier and read each other's
shared memory, with the values each block should see computed here from the CUDA Programming Guide's
definitions; planted bugs fail as faults naming their line."""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_programs import build, line_in, run

CASES = Path(__file__).with_name("cluster_cases.cu")
# The correct cases' output on an H200 (the same file built by nvcc; the folder's README says how).
ON_GPU = Path(__file__).parents[2] / "benchmarks" / "results" / "2026-11-30-h200-clusters"
SOURCE = CASES.resolve()
GRID_X, GRID_Y, CLUSTER_X, CLUSTER_Y = 4, 4, 2, 2  # cluster_facts' launch


@pytest.fixture(scope="module", params=["plain", "checked"])
def program(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-cluster"), checked=request.param == "checked")


def line_of(text: str) -> int:
    return line_in(CASES, text)


@pytest.mark.parametrize("workers", [1, 2])
def test_pairs_read_each_others_shared_memory(program: Path, workers: int) -> None:
    out = [float(v) for v in run(program, "swap_halves", workers).split()]
    want = [t + 100.0 * (b % 2 ^ 1) + 1000.0 * (b ^ 1) for b in range(6) for t in range(32)]
    assert out == want


@pytest.mark.parametrize("workers", [1, 2])
def test_a_cluster_launch_tells_each_block_its_place_and_sums_across_blocks(program: Path, workers: int) -> None:
    values = run(program, "cluster_facts", workers).split()
    facts, sums = [int(v) for v in values[:-4]], [float(v) for v in values[-4:]]
    clusters_x = GRID_X // CLUSTER_X
    want_sums = [0.0] * 4
    for y in range(GRID_Y):
        for x in range(GRID_X):
            b = x + GRID_X * y
            ix, iy = x % CLUSTER_X, y % CLUSTER_Y
            rank = ix + CLUSTER_X * iy
            cluster = x // CLUSTER_X + clusters_x * (y // CLUSTER_Y)
            want_sums[cluster] += b
            assert facts[b * 8:b * 8 + 8] == [rank, 4, 22, ix * 10 + iy, cluster, 4, 4 * 64, rank], f"block {b}"
    assert sums == want_sums


def test_the_ptx_forms_rank_the_block_meet_and_map_a_siblings_address(program: Path) -> None:
    out = [float(v) for v in run(program, "ptx_ring", 2).split()]
    ring = 4  # __cluster_dims__(4, 1, 1)
    want = [10.0 * (b // ring * ring + (b % ring + 1) % ring) + 1000.0 * (b // ring) + t for b in range(8) for t in range(32)]
    assert out == want


@pytest.mark.parametrize("workers", [1, 2])
def test_a_templates_cluster_shape_is_learnt_before_any_of_its_code_runs(program: Path, workers: int) -> None:
    calls, *ranks = run(program, "templated", workers).split()
    assert int(calls) == 2 * 6 * 32  # two launches of 6 blocks of 32 threads, each thread once
    assert [float(r) for r in ranks] == [b % 3 + 30.0 for b in range(6)]


@pytest.mark.parametrize("case", ["swap_halves", "cluster_facts", "ptx_ring", "templated"])
def test_the_correct_cases_print_what_an_h200_printed(program: Path, case: str) -> None:
    assert run(program, case, 2) == (ON_GPU / f"gpu-{case}.txt").read_text().strip()


@pytest.mark.parametrize("case, line, kind, detail", [
    ("ragged_grid", "return cudaLaunchKernelEx(&config, kernel, args...);", "invalid configuration argument",
     "grid (5, 3, 1) is not a whole number of clusters (2, 2, 1)"),
    ("too_large", "return cudaLaunchKernelEx(&config, kernel, args...);", "invalid configuration argument",
     "cluster (32, 1, 1) has 32 blocks: a cluster has 1 to 8 (16 where the kernel allows non-portable sizes)"),
    ("read_before_sync", "// no cluster.sync() first", "distributed shared memory",
     "block rank 1 of this cluster is not running: it has not started yet or has already returned"),
    ("rank_one_returns", "cluster.sync();  // waits for a block that has left", "deadlock",
     "waits at the cluster barrier (cluster.sync(), barrier.cluster.wait) for threads that will never arrive"),
    ("shape_mismatch", "__global__ void __cluster_dims__(2, 1, 1) swap_halves", "invalid cluster",
     "declares __cluster_dims__(2, 1, 1) but is launched in clusters of (3, 1, 1): a GPU refuses such a launch"),
])
def test_planted_cluster_bugs_fail_naming_the_line(program: Path, case: str, line: str, kind: str, detail: str) -> None:
    out = run(program, case)
    assert out.startswith(f"FAULT: {SOURCE}:{line_of(line)}: {kind}"), out
    assert detail in out, out
