"""Small CUDA programs built for the CPU execution without torch: a .cu file of cases (each a kernel
and a `main` branch printing what it computed, or `FAULT: ` and the launch's error), rewritten as
kernel.cu is, compiled with the runtime into one executable, and run one case at a time."""

from __future__ import annotations

import subprocess
from pathlib import Path

from brrr_kernels.cuda import builder, cpu_build, memcheck
from brrr_kernels.cuda.cpu_source import rewrite


def build(cases: Path, folder: Path, checked: bool = False) -> Path:
    """`cases` rewritten and compiled with the CPU runtime into `folder`/cases (DWARF 4: addr2line
    names kernel.cu's lines after #line, as in a checked build). `checked`: as brrr validate builds
    kernel.cu, every load and store calling the memory checks (without torch's allocation registry,
    so only shared memory is bounded)."""
    objects = [builder.compile_job(cpu_build.runtime_job()).path]
    flags: tuple[str, ...] = ()
    if checked:
        objects.append(builder.compile_job(memcheck.memcheck_job()).path)
        flags = memcheck.CHECK_FLAGS
    source = folder / "cases.cpp"
    source.write_text(rewrite(cases.read_text(), cases))
    exe = folder / "cases"
    subprocess.run([builder.find_cxx(), "-std=c++20", "-O1", "-g", "-gdwarf-4", "-ffp-contract=off", *flags,
                    f"-I{cpu_build.CPU_INCLUDE}", f"-I{cpu_build.CPU_INCLUDE.parent}", f"-I{cases.parent}", str(source),
                    *map(str, objects),
                    "-o", str(exe), "-lpthread", "-ldl"], check=True)
    return exe


def run(program: Path, case: str, workers: int = 1, env: dict[str, str] | None = None) -> str:
    """The case's standard output, stripped; a 2 s time limit for launches that cannot end."""
    full = {"BRRR_CPU_WORKERS": str(workers), "BRRR_CPU_TIMEOUT": "2", **(env or {})}
    return subprocess.run([str(program), case], capture_output=True, text=True, check=True, timeout=120,
                          env=full).stdout.strip()


def line_in(cases: Path, text: str) -> int:
    """The line of `cases` holding `text`, which must be there once."""
    lines = [n for n, line in enumerate(cases.read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, text
    return lines[0]
