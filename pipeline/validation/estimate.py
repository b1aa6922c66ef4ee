"""How long the numba stage will take in the simulator, said before it starts when that is long.

The simulator runs every GPU thread as Python, so its time is threads x cost per thread, and the
cost depends on the kernel. The stage's first call (validate's check that it is no unfinished
template) is timed and its threads counted, which gives the op's own cost per thread; the sizes
of the stage's checks give the threads, at least one forward and one backward thread per element
of the largest input, and never fewer than that first call launched. Before that first call, only
the README's fastest cost per thread is known: a size too large even at that speed is said first.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from ..op.spec import Op, Size

SLOW_S = 60.0  # a stage longer than this is announced, with its estimate
FASTEST_PER_THREAD_S = 1e-4  # the simulator's best case, 0.1 ms a thread (README: 0.1 to 5 ms)


@contextmanager
def counting_threads() -> Iterator[list[int]]:
    """Count the simulated threads of the kernel launches in the body: yields [count], filled as they run."""
    counted = [0]
    try:
        from ..sim.numba_internals import internal

        FakeCUDAKernel = internal("kernel", "FakeCUDAKernel")
    except ImportError:  # not the simulator: nothing to count
        yield counted
        return
    original = FakeCUDAKernel.__call__

    def call(kernel: Any, *args: Any) -> Any:
        grid, block = getattr(kernel, "grid_dim", None), getattr(kernel, "block_dim", None)
        if grid and block:
            counted[0] += math.prod(grid) * math.prod(block)
        return original(kernel, *args)

    FakeCUDAKernel.__call__ = call
    try:
        yield counted
    finally:
        FakeCUDAKernel.__call__ = original


def smallest_size(op: Op) -> Size:
    """The simulator size with the fewest elements: the first call uses it."""
    return min(op.spec.sim_sizes, key=lambda s: elements(op, s))


def elements(op: Op, size: Size) -> int:
    """Elements of the largest input make_inputs returns for `size` (spec_checks made sure it can)."""
    inputs = op.spec.make_inputs(size, torch.float32, torch.device("cpu"), torch.Generator().manual_seed(0))
    return max((x.numel() for x in inputs), default=1)


def stage_threads(op: Op, first_threads: int) -> int:
    """Simulated threads the numba stage's checks imply, given the first call's."""
    spec = op.spec
    per_dtype = sum(max(first_threads, 2 * elements(op, s)) for s in spec.sim_sizes)
    dtypes = spec.stage_dtypes("numba")
    total = per_dtype * len(dtypes)
    if torch.float64 in dtypes:  # gradcheck: two forward calls per input element, one backward per output element
        n = elements(op, spec.gradcheck_size)
        total += 3 * n * max(first_threads // 2, n)
    return total


def before_first_call(op: Op) -> str | None:
    """A warning when even the first call, at the fastest cost per thread, runs longer than SLOW_S."""
    size = smallest_size(op)
    threads = 2 * elements(op, size)
    seconds = threads * FASTEST_PER_THREAD_S
    if seconds <= SLOW_S:
        return None
    return (f"{op.name}: the numba stage's smallest size, {size}, is {threads:,} simulated threads: at least "
            f"{_duration(seconds)} for its first call in the simulator, and more for the whole stage; "
            f"smaller sim_sizes in spec.py run faster")


def after_first_call(op: Op, seconds: float, threads: int) -> str | None:
    """A warning when the stage's threads at the first call's cost per thread take longer than SLOW_S."""
    if threads <= 0:
        return None
    per_thread = seconds / threads
    total = stage_threads(op, threads)
    estimate = total * per_thread
    if estimate <= SLOW_S:
        return None
    return (f"{op.name}: the numba stage will take about {_duration(estimate)} in the simulator "
            f"({total:,} simulated threads at {per_thread * 1e3:.2g} ms a thread, measured on its first call); "
            f"smaller sim_sizes in spec.py run faster")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
