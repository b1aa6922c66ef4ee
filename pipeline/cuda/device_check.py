"""nvcc's compile check beside the CPU execution: each .cu through nvcc with `--cuda`, not `-c`.

Where the cuda stage runs on the CPU, nvcc's object is never linked: nvcc runs for its verdict (what
g++ accepts and nvcc refuses) and ptxas' report of each kernel. `--cuda` runs every step of `-c` that
can refuse the file or report on it (the device pass, ptxas, and cudafe++, nvcc's front end over the
host code: a __device__ function called from a launcher is refused there, and `-cubin` alone misses
it), and leaves out the last, the host compiler building an object from cudafe++'s output at -O3.
That is a quarter of nvcc's time (sigmoid's kernel.cu: 1.23 CPU seconds with `-c`, 0.90 with
`--cuda`), which every mutant of `brrr mutate --stage cuda` paid; the host compiler still compiles
kernel.cu's host code in the CPU build. On a GPU the build links `-c` objects (builder) and this is
not used.
"""

from __future__ import annotations

import hashlib
import time

from ..op.spec import Op
from . import builder, module_build
from .builder import INCLUDE_DIR, CompileReport, Job


def device_only(job: Job, op: Op | None = None) -> Job:
    """The nvcc job with `--cuda` in place of `-c`, cached under a key of its own: with `op`, over the
    source, the op folder's headers and brrr's, and the command with the op folder's path taken out
    (what is read back, ptxas' report, does not depend on where the folder is, and a refusal is never
    cached), so a copy of an op reuses it; without, the content key of `-c`'s with the changed command."""
    if "-c" not in job.command:
        raise ValueError(f"not a compile job: {job.command}")
    command = ["--cuda" if part == "-c" else part for part in job.command]
    if op is None:
        key = hashlib.sha256(f"{job.key}\0{' '.join(command)}".encode()).hexdigest()[:16]
    else:
        keyed = [part.replace(str(op.folder), "<op>") for part in command]
        key = builder.object_key(op, job.source, sorted(INCLUDE_DIR.glob("*.cuh")), keyed, (builder.nvcc_version(),))
    label = job.object.stem.rsplit("-", 1)[0]  # the object's name less its key
    return job._replace(command=command, key=key, object=job.object.with_name(f"{label}-front-{key}.ii"))


def kernel_check(op: Op, arch: str = builder.DEFAULT_ARCH) -> CompileReport:
    """The op's .cu files (kernel.cu, or an author's module's) through nvcc short of the host object,
    with ptxas' report: no GPU needed."""
    start = time.monotonic()
    if op.spec.torch_module:
        jobs = [device_only(job) for job in module_build.gpu_jobs(op, arch) if job.named.suffix == ".cu"]
    else:
        jobs = [device_only(builder.kernel_job(op, arch), op)]
    objects = builder.compile_all(jobs, f"compiling {op.name}", arch)
    cached = all(o.cached for o in objects)
    seconds = sum(o.seconds for o in objects) if cached else time.monotonic() - start
    return CompileReport(arch=arch, kernels=tuple(k for o in objects for k in o.kernels), seconds=seconds,
                         cached=cached)
