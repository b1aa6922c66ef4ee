"""Build times of an op's kernel.cu on this machine: brrr's first build, a cached load in a new
process, a rebuild after a one-line kernel edit, and torch's load_inline of the same source.
Also two concurrent `brrr build` processes on a cold cache. Prints a table; run from the repo root.

    python benchmarks/build_times.py [OP]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(code: str, env: dict[str, str]) -> float:
    start = time.monotonic()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=REPO, capture_output=True)
    return time.monotonic() - start


def main() -> None:
    op = sys.argv[1] if len(sys.argv) > 1 else "sigmoid"
    work = Path(tempfile.mkdtemp(prefix="brrr-times-"))
    shutil.copytree(REPO / "stages" / op, work / op)
    env = {**os.environ, "PYTHONPATH": str(REPO), "BRRR_CACHE": str(work / "cache")}
    build = (f"import time; t=time.monotonic(); from pipeline import builder; from pipeline.spec import load_op; "
             f"import torch; torch.cuda.init(); s=time.monotonic(); builder.build_extension(load_op('{work / op}')); "
             f"print(time.monotonic()-s)")
    rows = []

    def measure(label: str) -> None:
        out = subprocess.run([sys.executable, "-c", build], env=env, cwd=REPO, capture_output=True, text=True, check=True)
        rows.append((label, float(out.stdout.strip().splitlines()[-1])))

    measure("brrr: first build (cold cache)")
    measure("brrr: cached load, new process")
    source = work / op / "kernel.cu"
    text = source.read_text()
    source.write_text(text.replace("constexpr int kThreads = 256;", "constexpr int kThreads = 128;", 1)
                      if "constexpr int kThreads = 256;" in text else text + "\n// edited\n")
    measure("brrr: rebuild after a one-line kernel edit")
    inline = (f"import time, torch; from torch.utils.cpp_extension import load_inline; torch.cuda.init(); "
              f"src=open('{source}').read(); s=time.monotonic(); "
              f"load_inline(name='inline_{op}', cpp_sources=[''], cuda_sources=[src], is_python_module=False, "
              f"extra_include_paths=['{REPO / 'pipeline' / 'include'}'], extra_cuda_cflags=['-DBRRR_NAMESPACE=inline_{op}'], "
              f"build_directory='{work}/inline'); print(time.monotonic()-s)")
    (work / "inline").mkdir()
    out = subprocess.run([sys.executable, "-c", inline], env=env, cwd=REPO, capture_output=True, text=True)
    rows.append(("torch load_inline, same source (cold)", float(out.stdout.strip().splitlines()[-1]) if out.returncode == 0
                 else float("nan")))
    # Two processes building one op on a cold cache: one compiles, the other waits and reuses.
    env2 = {**env, "BRRR_CACHE": str(work / "cache2")}
    procs = [subprocess.Popen([sys.executable, "-m", "pipeline", "build", str(work / op)], env=env2, cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate()[0] for p in procs]
    codes = [p.returncode for p in procs]
    built = sum("extension built" in o for o in outs)
    cached = sum("extension cached" in o for o in outs)
    print(f"{'what':45s} {'seconds':>8s}")
    for label, seconds in rows:
        print(f"{label:45s} {seconds:8.1f}")
    print(f"concurrent builds: exit codes {codes}, {built} compiled, {cached} reused the other's build")
    if out.returncode != 0:
        print("load_inline failed:\n" + out.stderr[-2000:])


if __name__ == "__main__":
    main()
