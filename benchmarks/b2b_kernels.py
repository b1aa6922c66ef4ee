"""Calls back to back, as `brrr bench` times them, seen kernel by kernel: each kernel's own duration
and the idle time between one call's last kernel and the next call's first (torch.profiler's CUDA
activity). Where bench has brrr's op slower than torch.compile's, this says whether the kernels are
slower or the time between them is longer.

usage, on a GPU machine:  python3 benchmarks/b2b_kernels.py [--op layernorm] [--dtype float32] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.op.loaders import load_op
from brrr_kernels.ops import register

CALLS = 200


def kernel_times(fn: Callable[[], Any]) -> dict[str, float]:
    """Median kernel duration and median gap before each call's first kernel, microseconds."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(int(2e8))  # the GPU busy while the host issues every call: back to back after it
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(CALLS):
            fn()
        torch.cuda.synchronize()
    kernels = sorted((e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA
                      and "sleep" not in e.name.lower()), key=lambda e: e.time_range.start)
    per_call = len(kernels) // CALLS
    starts = [k.time_range.start for k in kernels]
    ends = [k.time_range.end for k in kernels]
    durations = [ends[i] - starts[i] for i in range(len(kernels))]
    gaps = [starts[i] - ends[i - 1] for i in range(per_call, len(kernels), per_call)]
    span = (ends[-1] - starts[per_call]) / (CALLS - 1)
    return {"kernels_per_call": per_call, "kernel_us": statistics.median(durations),
            "gap_us": statistics.median(gaps), "per_call_us": span,
            "names": sorted({k.name[:90] for k in kernels})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default="layernorm")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    try:
        load_op(args.op)
    except OpLoadError as e:  # a mistyped op is one line and exit 2, not a traceback
        parser.error(str(e))
    spec = load_op(args.op).spec
    dtype = getattr(torch, args.dtype)
    size = spec.bench_sizes[0]
    inputs = spec.make_inputs(size, dtype, torch.device("cuda"), torch.Generator().manual_seed(0))
    params = spec.param_values
    impls = {"brrr": register(args.op), "compile": torch.compile(spec.oracle, dynamic=False), "eager": spec.oracle}
    found = {}
    with torch.no_grad():
        for name, fn in impls.items():
            found[name] = kernel_times(lambda fn=fn: fn(*inputs, *params))
            f = found[name]
            print(f"{args.op} {size} {args.dtype} {name:8s} {f['kernels_per_call']} kernels a call, kernel "
                  f"{f['kernel_us']:.1f} us, gap before a call {f['gap_us']:.2f} us, a call {f['per_call_us']:.1f} us  "
                  f"{f['names']}", flush=True)
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"op": args.op, "size": size, "dtype": args.dtype, "impls": found}, out, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
