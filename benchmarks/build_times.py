"""Build times of an op's CUDA C stage on this machine, each in a new process: brrr's first build
(cold cache), a cached load, a rebuild after a one-line edit to kernel.cu, and torch's load_inline
of the same two sources; on a GPU, `brrr validate OP --stage cuda` after a kernel edit and once
cached; and two concurrent `brrr build` processes on a cold cache. Needs a CUDA build of torch
(it links and loads the library; without a GPU it builds for sm_90). Run from the repo root:

    python benchmarks/build_times.py [OP]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
THREADS = "constexpr int kThreads = 256;"


def python(code: str, env: dict[str, str]) -> float:
    """Run `code` in a new interpreter; it prints the seconds it measured last."""
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return float(out.stdout.strip().splitlines()[-1])


def edit_kernel(source: Path, step: int) -> None:
    """A one-line change, different at each step, to a kernel's launch configuration (or a comment)."""
    text = source.read_text()
    edited = THREADS.replace("256", str(256 >> step))
    source.write_text(text.replace(THREADS, edited, 1) if THREADS in text else text + f"\n// edit {step}\n")


def validate_seconds(folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds of `brrr validate OP --stage cuda`, seconds its compile row took)."""
    report = folder.parent / "validate.json"
    start = time.monotonic()
    subprocess.run([sys.executable, "-m", "brrr_kernels", "validate", str(folder), "--stage", "cuda", "--json", str(report)],
                   env=env, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - start
    rows = json.loads(report.read_text())["rows"]
    return wall, next(r["seconds"] for r in rows if r["check"] == "compile")


def main() -> None:
    import torch

    op = sys.argv[1] if len(sys.argv) > 1 else "sigmoid"
    gpu = torch.cuda.is_available()
    arch = None if gpu else "sm_90"
    work = Path(tempfile.mkdtemp(prefix="brrr-times-"))
    folder = work / op
    shutil.copytree(REPO / "stages" / op, folder, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "BRRR_CACHE": str(work / "cache")}
    build = (f"import time; from brrr_kernels.cuda import builder; from brrr_kernels.op.loaders import load_op; import torch; "
             f"s=time.monotonic(); builder.build_extension(load_op('{folder}'), arch={arch!r}); print(time.monotonic()-s)")
    rows: list[tuple[str, float]] = [
        ("brrr: first build (cold cache)", python(build, env)),
        ("brrr: cached load, new process", python(build, env)),
    ]
    edit_kernel(folder / "kernel.cu", 1)
    rows.append(("brrr: rebuild after a one-line kernel edit", python(build, env)))
    if gpu:
        edit_kernel(folder / "kernel.cu", 2)
        wall, compile_s = validate_seconds(folder, env)
        rows.append(("validate --stage cuda after a kernel edit: build", compile_s))
        rows.append(("validate --stage cuda after a kernel edit: wall", wall))
        wall, compile_s = validate_seconds(folder, env)
        rows.append(("validate --stage cuda, cached: build", compile_s))
        rows.append(("validate --stage cuda, cached: wall", wall))
    include = REPO / "pipeline" / "include"
    inline = (f"import time; from pathlib import Path; from torch.utils.cpp_extension import load_inline; "
              f"k=Path('{folder / 'kernel.cu'}').read_text(); b=Path('{folder / 'binding.cpp'}').read_text(); "
              f"s=time.monotonic(); load_inline(name='inline_{op}', cpp_sources=[b], cuda_sources=[k], "
              f"is_python_module=False, extra_include_paths=['{include}'], extra_cflags=['-DBRRR_NAMESPACE=inline_{op}'], "
              f"extra_cuda_cflags=['-std=c++20', '--expt-relaxed-constexpr'], build_directory='{work / 'inline'}'); "
              f"print(time.monotonic()-s)")
    (work / "inline").mkdir()
    try:
        rows.append(("torch load_inline, same sources (cold)", python(inline, {**env, "TORCH_CUDA_ARCH_LIST": "9.0"})))
    except RuntimeError as e:
        rows.append(("torch load_inline, same sources (cold)", float("nan")))
        print(f"load_inline failed:\n{e}")
    # Two processes building one op on a cold cache: one compiles, the other waits and reuses.
    env2 = {**env, "BRRR_CACHE": str(work / "cache2")}
    args = ["--arch", arch] if arch else []
    procs = [subprocess.Popen([sys.executable, "-m", "brrr_kernels", "build", str(folder), *args], env=env2, cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate()[0] for p in procs]
    compiled = sum("built in" in o or ("compiled for" in o and "(cached)" not in o) for o in outs)
    device = torch.cuda.get_device_name() if gpu else f"no GPU ({os.cpu_count()} CPU cores)"
    print(f"{op} on {device}, torch {torch.__version__}")
    print(f"{'what':50s} {'seconds':>8s}")
    for label, seconds in rows:
        print(f"{label:50s} {seconds:8.2f}")
    print(f"concurrent builds on a cold cache: exit codes {[p.returncode for p in procs]}, "
          f"{compiled} compiled, {len(outs) - compiled} reused the other's objects")


if __name__ == "__main__":
    main()
