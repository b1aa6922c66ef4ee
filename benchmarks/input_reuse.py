"""How much of a back-to-back timing comes from the L2 keeping the input between calls: brrr's op and
torch.compile's, each timed back to back on one input set (as `brrr bench` times them) and on
several input sets taken in turn (whose bytes together are well past the L2). A kernel that loads
its input under an L2 evict_last policy (as Triton lowers eviction_policy="evict_last") leaves part
of it resident for the next call on the same input; taking inputs in turn removes that.

usage, on a GPU machine:  python3 benchmarks/input_reuse.py [--op layernorm] [--dtype float32] [--sets 4]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import torch
from b2b_timing import CALLS, REPEATS, per_call_us

from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.op.loaders import load_op
from brrr_kernels.ops import register


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
