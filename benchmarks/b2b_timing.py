"""Back-to-back timing shared by the benchmark scripts that time whole calls the way `brrr bench`
does: the host queues CALLS calls behind a GPU sleep, two events around them."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import torch

CALLS, REPEATS = 200, 7


def per_call_us(fns: dict[str, Callable[[int], Any]]) -> dict[str, float]:
    """Each function's median time a call, back to back (CALLS between two events; fn(i) makes call
    i), the functions taking turns REPEATS times so that drift in the GPU's clock is shared."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        for i in range(10):
            fn(i)
    torch.cuda.synchronize()
    for _ in range(REPEATS):
        for name, fn in fns.items():
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(int(5e7))  # the host runs ahead: the calls are queued back to back
            start.record()
            for i in range(CALLS):
                fn(i)
            end.record()
            torch.cuda.synchronize()
            times[name].append(start.elapsed_time(end) * 1e3 / CALLS)
    return {name: statistics.median(t) for name, t in times.items()}
