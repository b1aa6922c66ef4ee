"""Shared-memory races and reads of unwritten shared memory, named with both threads and both lines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from conftest import STAGES

from brrr_kernels import import_cuda, launch
from brrr_kernels.op.loaders import load_numba, load_op
from brrr_kernels.sim.scheduler import BarrierDivergence, SharedMemoryRace, UnwrittenSharedRead
from brrr_kernels.sim.shared_memory import SharedArray
from brrr_kernels.verdict.faults import fault_from

cuda = import_cuda()
HERE = Path(__file__)
from numba import float64  # noqa: E402  (after import_cuda)


def line_in(path: Path, text: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if text in ln)


# Each op's barriers, removed one at a time (its bugs/ file): the lines of the two accesses the
# barrier orders, the phase whose kernel has it, and a size that reaches it.
BARRIERS = [
    ("softmax", "no_barrier_before_fold", ("part[cuda.threadIdx.x // 32] = v", "r = part[first]"), "forward",
     (2, 1030)),
    ("matmul", "no_barrier_after_loads", ("a_tile[ty, tx] = a[row * a_rs + ka * a_cs]",
                                          "acc += a_tile[ty, kk] * b_tile[kk, tx]"), "forward", (5, 7, 3)),
    ("matmul", "no_barrier_before_overwrite", ("a_tile[ty, tx] = a[row * a_rs + ka * a_cs]",
                                               "acc += a_tile[ty, kk] * b_tile[kk, tx]"), "forward", (6, 5, 7)),
    ("layernorm", "no_barrier_before_fold", ("partial[cuda.threadIdx.x // 32] = value", "result = partial[0]"),
     "forward", (1, 1)),
    ("layernorm", "no_barrier_before_group_fold", ("partial_w[cuda.threadIdx.y, cuda.threadIdx.x] = gw",
                                                   "gw += partial_w[k, cuda.threadIdx.x]"), "backward", (2, 3)),
]


def run_phase(op_dir: Path, phase: str, size: tuple[int, ...], seed: int) -> None:
    op = load_op(str(op_dir))
    stage = load_numba(op)
    spec = op.spec
    gen = torch.Generator().manual_seed(seed)
    inputs = spec.make_inputs(size, torch.float64, torch.device("cpu"), gen)
    if phase == "forward":
        stage.forward(*inputs, *spec.param_values)
        return
    results = stage.forward(*inputs, *spec.param_values)
    results = results if isinstance(results, tuple) else (results,)
    named = dict(zip(spec.inputs, inputs)) | dict(zip(spec.outputs + spec.stats, results))
    upstream = [torch.randn(r.shape, dtype=torch.float64, generator=gen) for r in results[: len(spec.outputs)]]
    stage.backward(*upstream, *(named[n] for n in spec.saved), *spec.param_values)


@pytest.mark.parametrize("op, bug, lines, phase, size", BARRIERS, ids=[f"{b[0]}-{b[1]}" for b in BARRIERS])
def test_a_missing_barrier_is_a_race_naming_both_lines_for_any_seed(mutant, op, bug, lines, phase, size) -> None:
    folder = mutant(op, bug)
    source = folder / "numba_kernel.py"
    wanted = {line_in(source, text) for text in lines}
    for seed in range(10):
        with pytest.raises(SharedMemoryRace) as info:
            run_phase(folder, phase, size, seed)
        message = str(info.value)
        assert "shared-memory race on " in message
        named = {int(n) for n in re.findall(r"numba_kernel\.py:(\d+)", message)}
        assert named == wanted, message
        fault = fault_from(info.value, source)
        assert fault.line in wanted and fault.block is not None and fault.thread is not None


@cuda.jit
def reads_before_anyone_writes(x, out):
    buf = cuda.shared.array(8, dtype=float64)
    i = cuda.threadIdx.x
    if i < 4:
        buf[i] = x[i]  # planted: lanes 4..7 never write their slot
    cuda.syncthreads()
    out[i] = buf[(i + 1) % 8]  # the read of buf[4]


@cuda.jit
def neighbours_without_a_barrier(x, out):
    buf = cuda.shared.array(8, dtype=float64)
    i = cuda.threadIdx.x
    buf[i] = x[i]  # the write
    out[i] = buf[(i + 1) % 8]  # the read, with no barrier before it


@cuda.jit
def atomics_do_not_race(x, out):
    total = cuda.shared.array(1, dtype=float64)
    if cuda.threadIdx.x == 0:
        total[0] = 0.0
    cuda.syncthreads()
    cuda.atomic.add(total, 0, x[cuda.threadIdx.x])
    cuda.syncthreads()
    out[cuda.threadIdx.x] = total[0]


@cuda.jit
def barrier_in_a_branch_with_a_race(x, out):
    buf = cuda.shared.array(8, float64)
    i = cuda.threadIdx.x
    buf[i] = x[i]
    if i < 4:
        cuda.syncthreads()  # planted: only the first half waits here
    out[i] = buf[7 - i]


def _launch(kernel, seed: int = 0) -> torch.Tensor:
    x = torch.randn(8, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    out = torch.empty(8, dtype=torch.float64)
    launch(kernel, 1, 8, x, out)
    return out


@pytest.mark.parametrize("seed", range(10))
def test_a_read_of_unwritten_shared_memory_is_reported(seed: int) -> None:
    with pytest.raises(UnwrittenSharedRead) as info:
        _launch(reads_before_anyone_writes, seed)
    message = str(info.value)
    read = line_in(HERE, "the read of buf[4]")
    assert f"thread (3, 0, 0) reads buf[4] at test_shared_memory.py:{read}" in message, message
    assert "which no thread of block (0, 0, 0) has written" in message
    fault = fault_from(info.value, HERE)
    assert (fault.line, fault.thread) == (read, (3, 0, 0))


def test_a_race_names_both_threads_both_lines_and_the_element() -> None:
    with pytest.raises(SharedMemoryRace) as info:
        _launch(neighbours_without_a_barrier)
    write, read = line_in(HERE, "buf[i] = x[i]  # the write"), line_in(HERE, "the read, with no barrier")
    assert str(info.value).endswith(
        f"shared-memory race on buf[1]: thread (0, 0, 0) read it at test_shared_memory.py:{read} in "
        f"neighbours_without_a_barrier, then thread (1, 0, 0) writes it at test_shared_memory.py:{write} in "
        f"neighbours_without_a_barrier, with no cuda.syncthreads() or cuda.syncwarp() between them"), str(info.value)


@pytest.mark.parametrize("seed", range(3))
def test_a_barrier_in_a_branch_is_named_divergence_beside_its_race(seed: int) -> None:
    """The second half skips the barrier and reads what the first half wrote in the same phase: the
    race is held until the barrier would complete, which it never can, so divergence is named first."""
    with pytest.raises(BarrierDivergence) as info:
        _launch(barrier_in_a_branch_with_a_race, seed)
    message = str(info.value)
    assert "barrier divergence: thread (0, 0, 0) waits at cuda.syncthreads()" in message, message
    assert "which 4 threads ((4, 0, 0) ... (7, 0, 0)) never reach" in message, message
    assert "; the race it leaves unordered: shared-memory race on buf[3]" in message, message
    fault = fault_from(info.value, HERE)
    assert fault.line == line_in(HERE, "planted: only the first half waits here"), message


def test_atomics_on_one_element_are_not_a_race() -> None:
    x = torch.randn(8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    out = _launch(atomics_do_not_race)
    assert torch.allclose(out, x.sum().expand(8))


def test_shared_arrays_are_tracked_and_named_after_their_variable() -> None:
    seen = []

    @cuda.jit
    def peek(out):
        tile = cuda.shared.array((2, 3), dtype=float64)
        tile[cuda.threadIdx.x, 0] = 1.0
        seen.append(tile)
        out[cuda.threadIdx.x] = tile.shape[1]

    out = torch.empty(2, dtype=torch.float64)
    launch(peek, 1, 2, out)
    assert isinstance(seen[0], SharedArray) and seen[0].name == "tile" and out.tolist() == [3.0, 3.0]
    assert STAGES.is_dir()
