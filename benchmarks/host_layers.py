"""Where the host's time to issue one call of a brrr op goes, layer by layer, beside eager's.

`brrr bench` reports the host time a call takes to issue (host ms) apart from the GPU's time, and
where the host's is the larger the op is host-bound. Triton's do_bench times one call at a time
between events, so a host-bound call is timed at the host's speed: that is why do_bench's figure for
layernorm's backward alone (benchmarks/bwd_indep.py) was 2-3x bench's. This script splits the host
time of the op's forward and of its backward into the layers a call passes through:

  binding:   torch.ops.<extension>.forward / backward, the C++ op binding.cpp registers (checks,
             allocation, the launches);
  torch op:  torch.ops.brrr.NAME / NAME_backward, the Python kernel brrr registers over it;
  autograd:  the forward under autograd (saving for backward) and autograd.grad from a kept graph,
             against the same two for the op's oracle (eager PyTorch).

Each figure is the median over rounds of the mean host time of `CALLS` calls issued back to back
(time.perf_counter around the issuing; the GPU synchronised between rounds, not inside), at a
size small enough that the GPU never holds the host back.

  exported:  with --exported PACKAGE, the same op as `brrr export` packages it (built with pip and
             importable), under autograd and through autograd.grad.

usage, on a GPU machine:  python3 benchmarks/host_layers.py [--op layernorm] [--size 8,1024] [--out FILE.json]
                          [--exported brrr_layernorm]
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.cuda import builder
from brrr_kernels.op.loaders import load_cuda, load_op
from brrr_kernels.ops import register

CALLS = 200
ROUNDS = 15


def host_us(fn: Callable[[], Any]) -> float:
    """Median over ROUNDS of the mean host microseconds to issue one of CALLS calls of fn."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        rounds.append((time.perf_counter() - start) / CALLS * 1e6)
        torch.cuda.synchronize()
    return statistics.median(rounds)


def layers(name: str, size: tuple[int, ...], dtype: torch.dtype, exported: str | None = None) -> dict[str, float]:
    op = load_op(name)
    spec = op.spec
    stage = load_cuda(op, builder.build_extension(op))
    brrr = register(name)
    params = spec.param_values
    inputs = [t.cuda() for t in spec.make_inputs(size, dtype, torch.device("cpu"), torch.Generator().manual_seed(0))]
    out = stage.forward(*inputs, *params)
    outs = out if isinstance(out, tuple) else (out,)
    n_out = len(spec.outputs)
    upstream = [torch.randn_like(o) for o in outs[:n_out]]
    named = dict(zip(spec.inputs, inputs)) | dict(zip(spec.outputs + spec.stats, outs))
    saved = [named[s] for s in spec.saved]

    def graph(fn: Callable[..., Any]) -> Callable[[], Any]:
        xs = [x.detach().requires_grad_(x.is_floating_point()) for x in inputs]
        y = fn(*xs, *params)
        y = y[0] if isinstance(y, tuple) else y
        wrt = [x for x in xs if x.requires_grad]
        return lambda: torch.autograd.grad(y, wrt, upstream[0], retain_graph=True)

    def under_autograd(fn: Callable[..., Any]) -> Callable[[], Any]:
        xs = [x.detach().requires_grad_(x.is_floating_point()) for x in inputs]
        return lambda: fn(*xs, *params)

    backward_op = getattr(torch.ops.brrr, f"{spec.name}_backward")
    package = {}
    if exported:
        fn = getattr(importlib.import_module(exported), spec.name)
        package = {"forward: exported op under autograd": host_us(under_autograd(fn)),
                   "backward: exported autograd.grad": host_us(graph(fn))}
    return package | {
        "forward: binding": host_us(lambda: stage.forward(*inputs, *params)),
        "forward: torch op": host_us(lambda: brrr(*inputs, *params)),
        "forward: torch op under autograd": host_us(under_autograd(brrr)),
        "forward: eager under autograd": host_us(under_autograd(spec.oracle)),
        "backward: binding": host_us(lambda: stage.backward(*upstream, *saved, *params)),
        "backward: torch op": host_us(lambda: backward_op(*upstream, *saved, *params)),
        "backward: autograd.grad": host_us(graph(brrr)),
        "backward: eager autograd.grad": host_us(graph(spec.oracle)),
    }


def profile_backward(name: str, size: tuple[int, ...], dtype: torch.dtype) -> None:
    """cProfile of CALLS backward calls through autograd: which Python functions the host time is in."""
    import cProfile
    import pstats

    spec = load_op(name).spec
    brrr = register(name)
    xs = [t.cuda().requires_grad_(t.is_floating_point())
          for t in spec.make_inputs(size, dtype, torch.device("cpu"), torch.Generator().manual_seed(0))]
    y = brrr(*xs, *spec.param_values)
    y = y[0] if isinstance(y, tuple) else y
    g = torch.randn_like(y)
    wrt = [x for x in xs if x.requires_grad]
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(CALLS):
        torch.autograd.grad(y, wrt, g, retain_graph=True)
    profiler.disable()
    torch.cuda.synchronize()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default="layernorm")
    parser.add_argument("--size", default="8,1024", help="comma-separated shape of the op's size (default 8,1024)")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    parser.add_argument("--exported", default=None, metavar="PACKAGE",
                        help="also the op as brrr export packaged it (an installed package, e.g. brrr_layernorm)")
    parser.add_argument("--profile", action="store_true", help="and cProfile's top functions of the backward's issuing")
    args = parser.parse_args()
    try:
        load_op(args.op)
    except OpLoadError as e:  # a mistyped op is one line and exit 2, not a traceback
        parser.error(str(e))
    size = tuple(int(v) for v in args.size.split(","))
    found = layers(args.op, size, getattr(torch, args.dtype), args.exported)
    print(f"{args.op} {size} {args.dtype}: host us to issue one call ({torch.cuda.get_device_name()}, "
          f"torch {torch.__version__})")
    for what, us in found.items():
        print(f"  {what:36s} {us:8.1f}")
    if args.profile:
        profile_backward(args.op, size, getattr(torch, args.dtype))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"op": args.op, "size": size, "dtype": args.dtype, "host_us": found}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
