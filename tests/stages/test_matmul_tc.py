"""matmul_tc: the tensor-core kernels' planted bugs (asynchronous copies, barriers, fragment layouts,
zero fill, wgmma's waits and operand layouts) must fail on the CPU execution, and the numba stage's."""

from __future__ import annotations

import pytest
import torch
from conftest import HAS_GPU, failed, validate

from brrr_kernels.op.loaders import load_op
from brrr_kernels.op.tolerances import tensor_core_bound

FORWARD = ("cuda", "forward", "bfloat16")
# v3's own code (ldmatrix, mma.sync, its pipeline) runs as forward_v3, and as forward and backward where
# an operand's rows are not whole 16-byte chunks; a bug there fails one of them (fail_fast: the first).
V3_ROWS = {FORWARD, ("cuda", "backward", "bfloat16"), ("cuda", "forward_v3", "bfloat16")}


@pytest.mark.skipif(HAS_GPU, reason="names the CPU execution's checked-build report")
def test_reading_tiles_before_the_wait_group_names_both_lines(mutant) -> None:
    """No cp.async.wait_group before the math: the ldmatrix reads a tile whose copies have not landed,
    named with the read's line and the copy's, on the sizes staged by cp.async."""
    op = mutant("matmul_tc", "cuda_no_wait_group")
    bad = failed(validate(op, "cuda", fail_fast=True))
    detail = next(bad[row].detail for row in V3_ROWS if row in bad)
    assert "read before an asynchronous copy landed" in detail, detail
    assert "cp.async" in detail or "asynchronous copy" in detail


@pytest.mark.parametrize("bug", ["cuda_no_barrier_after_wait", pytest.param("cuda_no_barrier_before_overwrite", marks=(
    pytest.mark.skipif(HAS_GPU, reason="a GPU's timing need not show this race: an H100 passed it "
                                       "(benchmarks/results/2026-11-25-h100-blindspots); the CPU execution names it")))])
def test_missing_barrier_around_the_shared_tiles_fails(mutant, bug: str) -> None:
    bad = failed(validate(mutant("matmul_tc", bug), "cuda", fail_fast=True))
    rows = V3_ROWS & bad.keys()
    assert rows, sorted(bad)
    if not HAS_GPU:  # the checked build names the race on a tile
        detail = bad[rows.pop()].detail
        assert "race on shared memory" in detail or "asynchronous copy" in detail


@pytest.mark.parametrize("bug", ["cuda_ldmatrix_without_trans", "cuda_b_registers_paired_wrong",
                                 "cuda_no_zero_fill", "cuda_copy_past_the_edge", "cuda_wait_for_the_wrong_group"])
def test_fragment_layout_and_edge_bugs_fail_forward(mutant, bug: str) -> None:
    """A fragment in the wrong layout (ldmatrix without .trans on a [k][mn] tile, B's registers paired
    wrong), a tile edge not zero-filled, a copy that ignores src-size, a wait for the wrong group."""
    bad = failed(validate(mutant("matmul_tc", bug), "cuda", fail_fast=True))
    assert V3_ROWS & bad.keys(), sorted(bad)


def test_a_launch_without_the_shared_memory_opt_in_fails_naming_it(mutant) -> None:
    """v3 launched past 48 KiB of dynamic shared memory without cudaFuncSetAttribute: a GPU refuses it, and
    so does the CPU execution, naming the opt-in (the CPU has the memory; it ran there before)."""
    bad = failed(validate(mutant("matmul_tc", "cuda_no_shared_opt_in"), "cuda", fail_fast=True))
    rows = V3_ROWS & bad.keys()
    assert rows, sorted(bad)
    if not HAS_GPU:
        detail = bad[rows.pop()].detail
        assert "cudaFuncAttributeMaxDynamicSharedMemorySize" in detail and "48 KiB" in detail, detail


@pytest.mark.parametrize("bug", ["cuda_wgmma_no_final_wait", "cuda_wgmma_b_major_wrong", "cuda_wgmma_no_barrier"])
def test_wgmma_bugs_fail_forward(mutant, bug: str) -> None:
    """v4: the accumulators stored before the last wgmma.wait_group, B's major-ness flag wrong, no barrier
    between the copies landing and the warpgroups' products. The CPU execution emulates wgmma (and runs
    an asynchronous product only at its wait), so each fails there as on an H100 or H200."""
    bad = failed(validate(mutant("matmul_tc", bug), "cuda", fail_fast=True))
    assert FORWARD in bad, sorted(bad)


@pytest.mark.skipif(HAS_GPU, reason="names the CPU execution's race report; a GPU's timing need not show it")
def test_a_copy_into_a_buffer_an_unfinished_wgmma_reads_is_a_race_naming_both_lines(mutant) -> None:
    """wgmma.wait_group 2 where the pipeline needs 1: the next copies go into a buffer the tensor cores
    may still read. The CPU execution marks what each issued wgmma reads until its wait completes it."""
    bad = failed(validate(mutant("matmul_tc", "cuda_wgmma_wait_too_late"), "cuda", fail_fast=True))
    detail = bad[FORWARD].detail
    assert "race on shared memory" in detail and "which a wgmma.mma_async issued at line" in detail, detail


V5 = ("cuda", "forward_v5", "bfloat16")


def test_a_float16_only_bug_fails_in_float16_alone(mutant) -> None:
    """float16's 128 x 256 tiles take two n128 wgmma's where bfloat16 takes one n256: the second reading
    B's left half is caught by v5's float16 rows (the CPU execution's 128 x 256 tiles), and no bfloat16
    row fails."""
    bad = failed(validate(mutant("matmul_tc", "cuda_f16_right_half_from_the_left"), "cuda"))
    assert ("cuda", "forward_v5", "float16") in bad, sorted(bad)
    assert not [row for row in bad if row[2] == "bfloat16"], sorted(bad)


@pytest.mark.parametrize("bug", ["cuda_tma_no_full_wait", "cuda_tma_empty_parity_wrong", "cuda_tma_release_too_early"])
def test_tma_pipeline_bugs_fail_naming_the_race(mutant, bug: str) -> None:
    """v5: the consumers not waiting for a stage's copies, the producer waiting on the wrong phase of a
    free stage, a stage given back before its products completed. The CPU execution emulates the tensor
    memory accelerator and mbarrier and names the race or the deadlock; a GPU may show wrong sums, hang,
    or show nothing."""
    bad = failed(validate(mutant("matmul_tc", bug), "cuda", fail_fast=True))
    rows = {FORWARD, ("cuda", "backward", "bfloat16"), V5} & bad.keys()
    assert rows, sorted(bad)
    if not HAS_GPU:
        detail = bad[rows.pop()].detail
        assert "race on shared memory" in detail or "deadlock" in detail, detail


@pytest.mark.parametrize("bug", ["no_barrier_after_loads", "accumulator_rows_wrong"])
def test_numba_stage_bugs_fail(mutant, bug: str) -> None:
    bad = failed(validate(mutant("matmul_tc", bug), "numba"))
    assert ("numba", "forward", "bfloat16") in bad or ("numba", "forward", "float64") in bad, sorted(bad)


def test_tensor_core_widening_is_the_tolerance_modules_bound() -> None:
    """The bfloat16 bound is tolerances.tensor_core_bound(K) x sum |a b|, K each product's own."""
    spec = load_op("matmul_tc").spec
    a, b = spec.make_inputs((5, 37, 3), torch.float64, torch.device("cpu"), torch.Generator().manual_seed(0))
    g = torch.randn(5, 3, dtype=torch.float64)
    rule = spec.rule("c", torch.bfloat16, "cuda")
    c = a @ b
    terms = {"a": a, "b": b, "c": c, "grad_c": g}
    want = tensor_core_bound(37) * (a.abs() @ b.abs())
    bound = rule.bound(c, terms)
    assert torch.all(bound >= want * (1 - 1e-12)) and torch.all(bound <= torch.maximum(want, 2 * 2**-7 * c.abs()) * (1 + 1e-12))
    rule_b = spec.rule("grad_b", torch.bfloat16, "cuda")  # grad_b = a^T g sums over M = 5
    assert torch.allclose(rule_b.bound(a.T @ g, terms).clamp_min(0),
                          torch.maximum(tensor_core_bound(5) * (a.abs().T @ g.abs()), 2 * 2**-7 * (a.T @ g).abs()))
