"""CPU and wall seconds of brrr's GPU compile of ops, in a fresh build cache: the objects that
build_gpu_module (an op brought as its own torch extension) or build_extension (brrr's layout) link.
nvcc and the host compiler only, so no GPU is needed; on a GPU machine it times what validate pays
before its first check.

    .venv/bin/python benchmarks/gpu_build_times.py examples/seed_bias_gelu stages/bias_gelu [--arch sm_90]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ops", nargs="+")
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    for name in args.ops:
        cache = tempfile.mkdtemp(prefix="brrr-build-times-")
        os.environ["BRRR_CACHE"] = cache
        try:
            print(time_one(name, args.arch), flush=True)
        finally:
            shutil.rmtree(cache, ignore_errors=True)


def time_one(name: str, arch: str) -> str:
    from brrr_kernels.base import progress
    from brrr_kernels.cuda import builder, module_build
    from brrr_kernels.op.loaders import load_op

    progress.set_quiet(True)
    op = load_op(name)
    jobs = module_build.gpu_jobs(op, arch) if op.spec.torch_module else [builder.kernel_job(op, arch),
                                                                           builder.binding_job(op)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    objects = builder.compile_all(jobs, f"timing {op.name}", arch)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    each = ", ".join(f"{j.named.name} by {os.path.basename(j.command[0])} {o.seconds:.1f} s" for j, o in zip(jobs, objects))
    return f"{op.name}: {each}; {cpu:.1f} CPU s, {wall:.1f} s wall, load {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)"


if __name__ == "__main__":
    main()
