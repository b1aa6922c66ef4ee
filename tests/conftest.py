"""Shared helpers: a simulator-mode process, op copies with planted bugs (stages/OP/bugs/), and the brrr CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TypeVar

import pytest

# The numba stage runs in the simulator unless a test says otherwise (GPU tests use subprocesses).
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

REPO = Path(__file__).resolve().parent.parent
STAGES = REPO / "stages"

import torch  # noqa: E402

from brrr_kernels.cuda import builder  # noqa: E402
from brrr_kernels.mutate import bug_files as mutants  # noqa: E402
from brrr_kernels.op import loaders  # noqa: E402
from brrr_kernels.op.loaders import load_op  # noqa: E402
from brrr_kernels.validation import runner  # noqa: E402
from brrr_kernels.verdict.report import FAIL, Row  # noqa: E402

# Under pytest-xdist each worker takes its share of the CPUs for torch's threads: -n auto on 2 cores
# is 2 workers, and 2 threads each would be twice as many threads as cores, taking turns.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))

HAS_GPU = torch.cuda.is_available()
HAS_NVCC = builder.find_nvcc() is not None  # a system toolkit, or the one `pip install '.[cuda]'` brings

T = TypeVar("T")
_no_gpu = pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU; torch sees none here")


def gpu(test: T) -> T:
    """A test that needs a CUDA GPU: skipped, with the reason, without one; `pytest -m gpu` runs them all."""
    return pytest.mark.gpu(_no_gpu(test))


needs_nvcc = pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc to compile CUDA C")
_no_cuda_torch = pytest.mark.skipif(torch.version.cuda is None or not HAS_NVCC,
                                    reason="linking needs nvcc and a CUDA build of torch; this torch is CPU-only")


def needs_cuda_torch(test: T) -> T:
    """A test that links a build (no GPU needed, but a CUDA torch): part of `pytest -m gpu` too."""
    return pytest.mark.gpu(_no_cuda_torch(test))


# The spills a round left, named rather than hidden, as `brrr build --resources` names the kernel: any
# other built-in kernel that spills fails tests/stages/test_layernorm.py and tests/test_cli.py.
KNOWN_SPILLS = {
    "layernorm_backward_fused_kernel<__nv_bfloat16, 2>": "1024-thread launch bound caps it at 64 registers; "
                                                         "52 B spilled (issue 26: the bf16 backward is under target)",
    # The kFull instances (no slot tests) hoist all of a thread's loads; where the statistics are double
    # (float, double) some pass the 64 registers a 1024-thread launch bound allows. Untimed on a GPU: the
    # bench size, 8192 columns, takes <float, 8, true, 1024, 0> and <__nv_bfloat16, 8, true, 128, 6>,
    # which do not spill.
    "layernorm_forward_block_kernel<float, 4, true, 1024, 0>": "8 B spilled (float rows of 513-1024 packs that fill "
                                                               "their threads)",
    "layernorm_forward_block_kernel<double, 2, true, 1024, 0>": "20 B spilled (double rows of 129-512 packs that fill "
                                                                "their threads)",
    "layernorm_forward_block_kernel<double, 8, true, 1024, 0>": "16 B spilled (double rows of 1025-8192 packs that "
                                                                "fill their threads)",
    # v4 backward: 16-bit rows of 1025-2048 packs (4 a thread) hold neither weight nor products, as v3, yet
    # float16's kFull instance still passes the 128 registers a 512-thread block allows by one.
    "layernorm_backward_v4_kernel<__half, 4, 2, 512, true>": "4 B spilled (float16 rows of 1025-2048 packs that "
                                                              "fill their threads)",
    # matmul v5: 64 accumulators, 16 prefetched elements and 64-bit addressing pass the 128 registers two
    # blocks of 256 threads an SM allow; ptxas spills 56-84 B of addresses outside the FMA loop of each
    # float4 instance. Timed so on an H200 (2026-11-29-h200-matmul-v5): 82.7% of cuBLAS forward, v4
    # (no spills) 68.5%.
    **{f"vectorised_matmul_kernel<{flags}>": "spills addresses at the 128-register bound (timed with them)"
       for flags in ("float, true, false, true", "float, true, true, true", "float, false, false, true")},
}

# For sigmoid's binding.cpp, in place of its 'BRRR_BIND(m) {' line: two first versions beside
# forward, v1 computing something else, v2 the same thing.
SIGMOID_VARIANTS = """
at::Tensor forward_v1(at::Tensor x) { return forward(x).add_(1.0); }
at::Tensor forward_v2(at::Tensor x) { return forward(x); }

BRRR_BIND(m) {
    m.def("forward_v1", &forward_v1);
    m.def("forward_v2", &forward_v2);
"""


@pytest.fixture(scope="session", autouse=True)
def brrr_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One build cache for the whole session, away from the user's own. Under pytest-xdist (-n) the
    workers share it (a folder beside their own temporary folders): each object is built once for
    all, and two workers building the same one take the cache's lock and compile it once."""
    if os.environ.get("BRRR_TEST_CACHE"):
        cache = Path(os.environ["BRRR_TEST_CACHE"])
    elif os.environ.get("PYTEST_XDIST_WORKER"):
        cache = tmp_path_factory.getbasetemp().parent / "brrr-cache"
        cache.mkdir(exist_ok=True)
    else:
        cache = tmp_path_factory.mktemp("brrr-cache")
    os.environ["BRRR_CACHE"] = str(cache)
    return cache


# BRRR_TEST_TIMES=FILE: each test's wall time and the CPU time of this process's whole tree (its own,
# its reaped children's and every live descendant's: the CPU execution's forked children and brrr's
# subprocesses), one JSON line per test, appended by every xdist worker. Wall time on a shared machine
# measures the neighbours' load as much as the test; CPU time does not (benchmarks/test_times.py sums it).
_TIMES = os.environ.get("BRRR_TEST_TIMES")


def _tree_cpu_seconds() -> float:
    """CPU seconds of this process, its reaped children and its live descendants (from /proc)."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # ended while the folder was read
                continue
            parents[int(entry.name)] = int(fields[1])
            ticks[int(entry.name)] = sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    if not _TIMES:
        yield
        return
    cpu, wall = _tree_cpu_seconds(), time.monotonic()
    yield
    line = {"test": item.nodeid, "wall_s": round(time.monotonic() - wall, 3),
            "cpu_s": round(_tree_cpu_seconds() - cpu, 3), "load": os.getloadavg()[0]}
    with open(_TIMES, "a") as f:  # one short write a line: workers' lines do not interleave
        f.write(json.dumps(line) + "\n")


@pytest.fixture
def small_cpu_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cuda stage executed on the CPU (in this process) at the simulator sizes and the GPU sizes
    up to 2^12 input elements, not 2^18: still several blocks ending in a partial one. For a test whose
    fault shows wherever a block or tile boundary is crossed (a translation, a planted bug whose sizes
    the test names, all under 2^12, or its edge cases): the larger sizes would repeat the same finding
    at many times the cost. The 16-bit accumulator sizes stay: a running sum in the wrong type fails there."""
    cpu_sizes_up_to(monkeypatch, 1 << 12)


def cpu_sizes_up_to(monkeypatch: pytest.MonkeyPatch, elements: int) -> None:
    """small_cpu_sizes with another bound, for a test that names a size between 2^12 and 2^18 elements."""
    monkeypatch.setattr(loaders, "CPU_SIZE_BUDGET", elements)


def copy_op(name: str, dest: Path) -> Path:
    folder = dest / name
    shutil.copytree(STAGES / name, folder, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def plant(folder: Path, filename: str, old: str, new: str) -> Path:
    """Replace `old` by `new` in one stage file (for edits that are not an op's planted bugs: those
    are files, see `mutant`); the test fails if `old` is not there."""
    path = folder / filename
    text = path.read_text()
    assert old in text, f"planting a bug: {old!r} not found in {path}"
    path.write_text(text.replace(old, new))
    return folder


@pytest.fixture
def mutant(tmp_path: Path):
    def make(op: str, bug: str) -> Path:
        """A copy of the built-in op with its planted bug stages/OP/bugs/BUG.bug applied."""
        return mutants.mutant(STAGES / op, bug, tmp_path)

    return make


def validate(op: str | Path, *stages: str, fail_fast: bool = False) -> list[Row]:
    """The runner on one op, in this process: reference and numba unless stages are named. fail_fast
    (`brrr validate --fail-fast`): the rows end at the first failing comparison, for a planted-bug test
    whose assertions are all on that comparison (the checks after it, other dtypes and larger inputs,
    cost the most and assert nothing of its own there). It leaves out nvcc's compile check beside the
    CPU execution, as brrr mutate's probe does for the same question (is the bug caught?): a test of
    nvcc's verdict validates without fail_fast. matmul_tc's nvcc check is 25 CPU seconds a mutant."""
    options = runner.Options(stages=stages or ("reference", "numba"), fail_fast=fail_fast, nvcc_beside_cpu=not fail_fast)
    return runner.validate(load_op(str(op)), options)


def compile_only(op: str | Path) -> list[Row]:
    """The cuda stage as on a machine with neither a GPU nor a host compiler: nvcc's compile check alone."""
    from unittest import mock

    from brrr_kernels.cuda import cpu_build

    with mock.patch.object(cpu_build, "available", lambda: False):
        return runner.validate(load_op(str(op)), runner.Options(stages=("cuda",)))


def failed(rows: list[Row]) -> dict[tuple[str, str, str], Row]:
    """The failing rows, by (stage, check, dtype)."""
    return {(r.stage, r.check, r.dtype): r for r in rows if r.verdict == FAIL}


def brrr(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO,
         stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a fresh process, as a user would (typing `stdin`, if given)."""
    full_env = {**os.environ, **(env or {}), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "brrr_kernels", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=900, input=stdin)


# A stand-in for nvcc and the host compiler, for tests about the build's plumbing (locks, killed
# builds, interrupts) rather than its compiler: `--version` answers; a compile adds its output's
# path to $MARKS/compiles, writes half an object, waits $FAKE_DELAY seconds ("forever": never
# ends), then writes the whole object.
FAKE_COMPILER = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "fake compiler 1.0"; exit 0; fi
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
echo "$out" >> "$MARKS/compiles"
printf 'half an' > "$out"
if [ "$FAKE_DELAY" = forever ]; then sleep 1000; fi
sleep "${FAKE_DELAY:-0}"
printf 'half an object' > "$out"
"""


def fake_toolkit(root: Path, marks: Path, delay: str = "0") -> dict[str, str]:
    """A CUDA toolkit folder whose nvcc and c++ are FAKE_COMPILER; returns the environment that selects it."""
    (root / "bin").mkdir(parents=True, exist_ok=True)
    (root / "include").mkdir(exist_ok=True)
    (root / "include" / "cuda.h").write_text("")
    for tool in ("nvcc", "c++"):
        (root / "bin" / tool).write_text(FAKE_COMPILER)
        (root / "bin" / tool).chmod(0o755)
    marks.mkdir(parents=True, exist_ok=True)
    return {"CUDA_HOME": str(root), "CXX": str(root / "bin" / "c++"), "MARKS": str(marks), "FAKE_DELAY": delay}
