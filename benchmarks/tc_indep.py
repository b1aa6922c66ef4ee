"""matmul_tc against cuBLAS (torch.matmul in bfloat16 or float16) by triton's do_bench: the independent timing
beside `brrr bench` for the tensor-core op, which ../shared/tools/gpu_indep.py does not time.

Not brrr's bench code: the op comes from brrr_kernels.ops.register (torch.ops.brrr.matmul_tc, with its autograd), each
figure is do_bench's median (warm-up 50 ms, 300 ms of runs, the L2 flushed before each). Forward, and
forward+backward (autograd.grad of both inputs with a fixed upstream gradient), at 4096^3, 1024^3,
8192^3 and the ragged 4095 x 4093 x 4097; each output checked against torch.matmul first.

usage, on a GPU machine:  python3 benchmarks/tc_indep.py [--dtype float16] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json

import torch
from triton.testing import do_bench

from brrr_kernels.ops import register

SIZES = ((4096, 4096, 4096), (1024, 1024, 1024), (8192, 8192, 8192), (4095, 4093, 4097))


def ms(fn) -> float:
    return do_bench(fn, warmup=50, rep=300, return_mode="median")


def forward(fn, a: torch.Tensor, b: torch.Tensor):
    def run() -> None:
        with torch.no_grad():
            fn(a, b)

    return run


def step(fn, a: torch.Tensor, b: torch.Tensor, g: torch.Tensor):
    def run() -> None:
        torch.autograd.grad(fn(a, b), (a, b), g)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="write the figures as JSON here")
    parser.add_argument("--dtype", action="append", choices=("bfloat16", "float16"),
                        help="the operands' dtype (repeatable; default bfloat16)")
    args = parser.parse_args()
    brrr = register("matmul_tc")
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuda {torch.version.cuda}")
    rows = []
    for dtype, (m, k, n) in ((getattr(torch, d), size) for d in args.dtype or ["bfloat16"] for size in SIZES):
        gen = torch.Generator(device="cuda").manual_seed(m + k + n)
        a = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen).requires_grad_(True)
        b = torch.randn(k, n, device="cuda", dtype=dtype, generator=gen).requires_grad_(True)
        g = torch.randn(m, n, device="cuda", dtype=dtype, generator=gen)
        with torch.no_grad():
            err = ((brrr(a, b).float() - torch.matmul(a, b).float()).norm() / torch.matmul(a, b).float().norm()).item()
        flops = 2.0 * m * n * k
        fwd = {"brrr": ms(forward(brrr, a, b)), "cublas": ms(forward(torch.matmul, a, b))}
        both = {"brrr": ms(step(brrr, a, b, g)), "cublas": ms(step(torch.matmul, a, b, g))}
        for phase, t, work in (("fwd", fwd, flops), ("fwd+bwd", both, 3 * flops)):
            row = {"size": [m, k, n], "dtype": str(dtype).removeprefix("torch."), "phase": phase,
                   "brrr_ms": t["brrr"], "cublas_ms": t["cublas"],
                   "brrr_tflops": work / t["brrr"] / 1e9, "of_cublas": t["cublas"] / t["brrr"], "relerr": err}
            rows.append(row)
            print(f"{row['dtype']:8s} {m}x{k}x{n} {phase:8s} brrr {t['brrr'] * 1e3:8.1f} us {row['brrr_tflops']:6.1f} TFLOP/s   "
                  f"cuBLAS {t['cublas'] * 1e3:8.1f} us   brrr at {100 * row['of_cublas']:5.1f}% of cuBLAS   "
                  f"relerr {err:.1e}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
