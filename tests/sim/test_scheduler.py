"""The simulator's turn-taking blocks: warp functions as on a GPU, barriers checked, a time limit."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
import torch
from conftest import REPO

from brrr_kernels import import_cuda, launch
from brrr_kernels.sim.scheduler import BarrierDivergence, KernelTimeLimit, WarpMaskError, time_limit
from brrr_kernels.verdict.faults import fault_from

cuda = import_cuda()
HERE = Path(__file__)
FULL = 0xFFFFFFFF


def line_of(text: str) -> int:
    """The line of this file holding `text` (kernels below are found by their source)."""
    return next(i for i, ln in enumerate(HERE.read_text().splitlines(), 1) if text in ln)


@cuda.jit
def shuffles(x, out):
    i = cuda.threadIdx.x
    v = x[i]
    out[0, i] = cuda.shfl_xor_sync(FULL, v, 5)
    out[1, i] = cuda.shfl_up_sync(FULL, v, 3)
    out[2, i] = cuda.shfl_down_sync(FULL, v, 7)
    out[3, i] = cuda.shfl_sync(FULL, v, 37)  # lane 37 of a warp is lane 5: the source is taken mod 32
    out[4, i] = cuda.ballot_sync(FULL, v > 0)
    out[5, i] = cuda.any_sync(FULL, v > 2.5)
    out[6, i] = cuda.all_sync(FULL, v > -10)
    out[7, i] = cuda.laneid
    cuda.syncwarp()
    out[8, i] = cuda.activemask()


def test_warp_functions_give_the_gpu_results_on_every_lane() -> None:
    gen = torch.Generator().manual_seed(0)
    threads = 64  # two warps: shuffles stay inside each
    x = torch.randn(threads, dtype=torch.float64, generator=gen)
    out = torch.full((9, threads), float("nan"), dtype=torch.float64)
    launch(shuffles, 1, threads, x, out)
    lane = torch.arange(threads) % 32
    base = torch.arange(threads) - lane
    up = torch.where(lane >= 3, torch.arange(threads) - 3, torch.arange(threads))
    down = torch.where(lane + 7 < 32, torch.arange(threads) + 7, torch.arange(threads))
    assert torch.equal(out[0], x[base + (lane ^ 5)])  # shfl_xor_sync: lane ^ 5 on every lane
    assert torch.equal(out[1], x[up]) and torch.equal(out[2], x[down])
    assert torch.equal(out[3], x[base + 5])
    for w in range(2):
        bits = sum(1 << k for k in range(32) if x[32 * w + k] > 0)
        ballot = bits - (1 << 32) if bits >= 1 << 31 else bits  # numba's ballot_sync is an int32
        assert torch.all(out[4, 32 * w:32 * w + 32] == ballot)
        assert torch.all(out[5, 32 * w:32 * w + 32] == float(bool((x[32 * w:32 * w + 32] > 2.5).any())))
    assert torch.all(out[6] == 1) and torch.equal(out[7], lane.double()) and torch.all(out[8] == FULL)


@cuda.jit
def warp_reduce(x, out):
    v = x[cuda.threadIdx.x]
    offset = 16
    while offset > 0:
        v += cuda.shfl_xor_sync(FULL, v, offset)
        offset //= 2
    out[cuda.threadIdx.x] = v


def test_xor_butterfly_sums_a_warp_on_every_lane() -> None:
    x = torch.arange(32, dtype=torch.float64)
    out = torch.empty(32, dtype=torch.float64)
    launch(warp_reduce, 1, 32, x, out)
    assert torch.all(out == x.sum())


@cuda.jit
def exits_before_shuffle(x, out):
    i = cuda.threadIdx.x
    if i == 31:
        return
    out[i] = cuda.shfl_down_sync(FULL, x[i], 1)  # planted: the mask still names lane 31


@cuda.jit
def barrier_in_a_branch(x, out):
    i = cuda.threadIdx.x
    if i == 0:
        cuda.syncthreads()  # planted: only thread 0 gets here
    out[i] = x[i]


@cuda.jit
def barriers_on_two_lines(x, out):
    i = cuda.threadIdx.x
    if i < 8:
        cuda.syncthreads()  # the first half's barrier
    else:
        cuda.syncthreads()  # the second half's barrier
    out[i] = x[i]


@cuda.jit
def spins(x, out):
    i = cuda.threadIdx.x
    k = 0
    while i == 3:  # planted: thread 3 never leaves
        k += 1
    out[i] = x[i] + k


@cuda.jit
def naps(x, out):
    i = cuda.threadIdx.x
    if i == 0:
        time.sleep(0.6)  # no CPU time: as a launch waits for a core on a loaded machine
    out[i] = x[i]


def _fault(kernel, threads: int = 32):
    x = torch.randn(threads, dtype=torch.float64)
    out = torch.empty(threads, dtype=torch.float64)
    with pytest.raises(Exception) as info:
        launch(kernel, 1, threads, x, out)
    return info.value, fault_from(info.value, HERE)


@pytest.mark.parametrize("run", range(10))
def test_mask_naming_an_exited_lane_is_reported(run: int) -> None:
    error, fault = _fault(exits_before_shuffle)
    assert isinstance(error, WarpMaskError)
    assert "names lane 31 (thread (31, 0, 0)), which has exited" in str(error)
    assert fault.line == line_of("planted: the mask still names lane 31") and fault.thread == (0, 0, 0)


@pytest.mark.parametrize("run", range(10))
def test_barrier_in_a_branch_is_divergence(run: int) -> None:
    error, fault = _fault(barrier_in_a_branch, 16)
    assert isinstance(error, BarrierDivergence)
    assert "15 threads ((1, 0, 0) ... (15, 0, 0)) never reach" in str(error)
    assert fault.line == line_of("planted: only thread 0 gets here") and fault.thread == (0, 0, 0)


def test_barriers_on_two_lines_are_divergence_naming_both() -> None:
    error, fault = _fault(barriers_on_two_lines, 16)
    assert isinstance(error, BarrierDivergence)
    first, second = line_of("the first half's barrier"), line_of("the second half's barrier")
    assert f"test_scheduler.py:{first}" in str(error) and f"test_scheduler.py:{second}" in str(error)
    assert fault.thread == (8, 0, 0) and fault.line == second


@pytest.mark.parametrize("run", range(10))
def test_an_endless_loop_is_stopped_at_the_time_limit_with_its_line(run: int) -> None:
    start = time.monotonic()
    with time_limit(0.3):
        error, fault = _fault(spins, 8)
    assert time.monotonic() - start < 5
    assert isinstance(error, KernelTimeLimit)
    assert f"thread (3, 0, 0) is still running at test_scheduler.py:{line_of('planted: thread 3 never leaves') + 1}" \
           in str(error) or f"test_scheduler.py:{line_of('planted: thread 3 never leaves')}" in str(error)
    assert "4 threads ((4, 0, 0) ... (7, 0, 0)) wait at its turn" in str(error)
    assert fault.thread == (3, 0, 0) and fault.line in (line_of("planted: thread 3"), line_of("planted: thread 3") + 1)


def test_a_kernel_error_still_names_its_thread() -> None:
    error, fault = _fault(warp_reduce, 33)  # lane 0 of the second warp: its mask names 31 lanes that do not exist
    assert isinstance(error, WarpMaskError) and "does not exist" in str(error)
    assert fault.thread == (32, 0, 0)


def test_each_run_is_the_same() -> None:
    """Turn-taking: the same interleaving every time, so even a racy kernel's result repeats."""
    results = []
    for _ in range(3):
        x = torch.arange(32, dtype=torch.float64)
        out = torch.empty(32, dtype=torch.float64)
        launch(warp_reduce, 1, 32, x, out)
        results.append(out)
    assert all(torch.equal(r, results[0]) for r in results)
    assert math.isclose(float(results[0][0]), 496.0)
    assert REPO.is_dir()


def test_a_kernel_that_ran_out_of_time_is_not_waited_out_again() -> None:
    """Within one validation (remembering_time_outs), the second launch of a looping kernel fails at
    once with the first one's finding: a loop costs one time limit, not one for each case and check."""
    from brrr_kernels.sim.scheduler import remembering_time_outs

    with remembering_time_outs(), time_limit(0.3):
        first, _ = _fault(spins, 8)
        with time_limit(60):  # were it waited out again, the message below would not say so
            again, fault = _fault(spins, 8)
    assert isinstance(first, KernelTimeLimit) and isinstance(again, KernelTimeLimit)
    assert "not run again: this kernel ran out of time in an earlier launch" in str(again)
    assert fault.thread == (3, 0, 0) and fault.line in (line_of("planted: thread 3"), line_of("planted: thread 3") + 1)


def test_the_time_limit_counts_cpu_time_so_a_launch_slowed_by_the_machine_is_no_hang() -> None:
    x = torch.arange(4, dtype=torch.float64)
    out = torch.empty(4, dtype=torch.float64)
    with time_limit(0.5):  # 0.6 s of wall time, almost no CPU time: within the limit
        launch(naps, 1, 4, x, out)
    assert torch.equal(out, x)
    with time_limit(0.1), pytest.raises(KernelTimeLimit, match="0.4 s"):  # past 4 times the limit in wall time
        launch(naps, 1, 4, x, out)


@pytest.mark.parametrize("value", ["abc", "-1", "inf"])
def test_a_malformed_sim_time_limit_is_a_usage_error(value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from brrr_kernels.base.errors import UsageError
    from brrr_kernels.base.settings import check_all

    monkeypatch.setenv("BRRR_SIM_TIME_LIMIT", value)
    with pytest.raises(UsageError, match="BRRR_SIM_TIME_LIMIT="):
        check_all()
