"""`brrr build`: compile an op's CUDA C stage only, and say what each kernel uses."""

from __future__ import annotations

import argparse
import sys

from ..base.errors import EXIT_OK


def main(args: argparse.Namespace) -> int:
    """brrr build: compile each op's CUDA C; on a GPU link and load it too; --resources per kernel."""
    import torch

    from ..base.errors import BuildError
    from ..cuda import builder
    from ..op.loaders import load_op

    gpu = torch.cuda.is_available()
    arch = args.arch or (builder.device_arch() if gpu else builder.DEFAULT_ARCH)
    worst = EXIT_OK
    for name in args.ops:
        op = load_op(name)
        try:
            if gpu:
                ext = builder.build_extension(op, arch=arch, verbose=args.verbose)
                what = "reused the cached build" if ext.cached else "built"
                print(f"{op.name}: {what} in {ext.seconds:.1f}s ({ext.library})")
            report = builder.compile_check(op, arch)
        except BuildError as e:
            print(f"{op.name}: {e}", file=sys.stderr)
            worst = max(worst, e.exit_code)
            continue
        print(f"{op.name}: compiled for {report.arch} {'(cached)' if report.cached else f'in {report.seconds:.1f}s'}")
        if args.resources:
            print(f"  {'kernel':44s} {'regs':>5s} {'smem B':>7s} {'spill st':>9s} {'spill ld':>9s} {'stack B':>8s}")
            for k in report.kernels:
                print(f"  {k.kernel:44s} {k.registers:5d} {k.shared_bytes:7d} {k.spill_stores:9d} {k.spill_loads:9d} "
                      f"{k.stack_bytes:8d}")
    return worst
