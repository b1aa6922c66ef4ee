"""The backward alone by triton's do_bench: the independent timing beside `brrr bench --pass backward`,
which ../shared/tools/gpu_indep.py does not time (it times forward and forward+backward).

Not brrr's bench code: the op comes from brrr_kernels.ops.register (torch.ops.brrr.NAME, with its
autograd), eager is the op's oracle and torch.compile compiles that. Each implementation runs its
forward once with gradients; do_bench then times autograd.grad from that graph (retain_graph), the L2
flushed before each run, median of the runs (tc_indep.ms: warm-up 50 ms, 300 ms of runs). Bytes as bench counts a
backward: the upstream gradient and the inputs read, a gradient per input written; set against a
copy of 1 GiB timed the same way. Each gradient of brrr's is checked against eager's first.

usage, on a GPU machine:  python3 benchmarks/bwd_indep.py [--ops layernorm,softmax] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import torch
from tc_indep import ms  # do_bench's median, as tc_indep times (this folder is on the path when run)

from brrr_kernels.op.loaders import load_op
from brrr_kernels.ops import register

OPS = "layernorm,softmax,bias_gelu"


def copy_gbps() -> float:
    src = torch.empty(1 << 28, dtype=torch.float32, device="cuda")
    dst = torch.empty_like(src)
    return 2 * src.nbytes / ms(lambda: dst.copy_(src)) / 1e6


def backward_of(fn: Callable[..., Any], inputs: list[torch.Tensor], params: tuple[Any, ...],
                upstream: torch.Tensor) -> Callable[[], tuple[torch.Tensor, ...]]:
    """autograd.grad of fn's first output from one forward's graph, which it keeps."""
    xs = [x.detach().requires_grad_(x.is_floating_point()) for x in inputs]
    out = fn(*xs, *params)
    y = out[0] if isinstance(out, tuple) else out
    wrt = [x for x in xs if x.requires_grad]
    return lambda: torch.autograd.grad(y, wrt, upstream, retain_graph=True)


def time_op(name: str, dtype: torch.dtype, copy: float) -> dict[str, Any] | None:
    spec = load_op(name).spec
    size = (spec.bench_sizes or spec.gpu_sizes[-1:])[0]
    inputs = list(spec.make_inputs(size, dtype, torch.device("cuda"), torch.Generator().manual_seed(0)))
    params = tuple(spec.param_values)
    brrr = register(name)
    impls = {"brrr": brrr, "eager": spec.oracle, "compile": torch.compile(spec.oracle, dynamic=False)}
    runs: dict[str, Callable[[], tuple[torch.Tensor, ...]]] = {}
    upstream = None
    for impl, fn in impls.items():
        try:
            if upstream is None:
                probe = fn(*inputs, *params)
                upstream = torch.randn_like(probe[0] if isinstance(probe, tuple) else probe)
            runs[impl] = backward_of(fn, inputs, params, upstream)
            runs[impl]()
        except Exception as e:  # noqa: BLE001 - one implementation failing is reported, the others still timed
            print(f"{name} {dtype} {impl}: {str(e).splitlines()[0][:120]}", flush=True)
    if "brrr" not in runs or "eager" not in runs or upstream is None:
        return None
    err = max(((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)).item()
              for a, b in zip(runs["brrr"](), runs["eager"]()))
    res = {impl: ms(run) for impl, run in runs.items()}
    in_bytes = sum(x.nbytes for x in inputs)
    moved = upstream.nbytes + 2 * in_bytes
    pct = {impl: 100 * moved / t / 1e6 / copy for impl, t in res.items()}
    print(f"{name:10s} {str(dtype).removeprefix('torch.'):9s} bwd      "
          + "  ".join(f"{k}={res[k] * 1e3:.0f}us({pct[k]:.0f}%)" for k in res)
          + f"  brrr/compile={res.get('compile', float('nan')) / res['brrr']:.2f}  relerr={err:.1e}", flush=True)
    return {"op": name, "dtype": str(dtype).removeprefix("torch."), "phase": "bwd", "ms": res, "copy_gbps": copy,
            "relerr": err}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=OPS, help=f"comma-separated op names (default {OPS})")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    args = parser.parse_args()
    copy = copy_gbps()
    print(f"copy {copy:.0f} GB/s ({torch.cuda.get_device_name()}, torch {torch.__version__}, cuda {torch.version.cuda})",
          flush=True)
    rows = [row for d in args.dtypes.split(",") for name in args.ops.split(",")
            if (row := time_op(name, getattr(torch, d), copy)) is not None]
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
