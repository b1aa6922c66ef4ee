"""How much of a back-to-back timing comes from the L2 keeping the input between calls: brrr's op and
torch.compile's, each timed back to back on one input set (as `brrr bench` times them) and on
several input sets taken in turn (whose bytes together are well past the L2). A kernel that loads
its input under an L2 evict_last policy (as Triton lowers eviction_policy="evict_last") leaves part
of it resident for the next call on the same input; taking inputs in turn removes that.

usage, on a GPU machine:  python3 benchmarks/input_reuse.py [--op layernorm] [--dtype float32] [--sets 4]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import torch

from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.op.loaders import load_op
from brrr_kernels.ops import register

CALLS, REPEATS = 200, 7


def per_call_us(fns: dict[str, Callable[[int], Any]]) -> dict[str, float]:
    """Median time a call back to back (CALLS between two events; fn(i) makes call i), the
    functions taking turns REPEATS times."""
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default="layernorm")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--sets", type=int, default=4, help="input sets taken in turn")
    args = parser.parse_args()
    try:
        spec = load_op(args.op).spec
    except OpLoadError as e:
        parser.error(str(e))
    dtype = getattr(torch, args.dtype)
    size = spec.bench_sizes[0]
    sets = [spec.make_inputs(size, dtype, torch.device("cuda"), torch.Generator().manual_seed(s)) for s in range(args.sets)]
    params = spec.param_values
    impls = {"brrr": register(args.op), "compile": torch.compile(spec.oracle, dynamic=False)}
    fns: dict[str, Callable[[int], Any]] = {}
    for name, impl in impls.items():
        fns[f"{name}, one input set"] = lambda i, impl=impl: impl(*sets[0], *params)
        fns[f"{name}, {args.sets} sets in turn"] = lambda i, impl=impl: impl(*sets[i % len(sets)], *params)
    with torch.no_grad():
        times = per_call_us(fns)
    print(f"{args.op} {size} {args.dtype}: us a call back to back ({CALLS} calls, median of {REPEATS})")
    for label, us in times.items():
        print(f"  {label:32s} {us:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
