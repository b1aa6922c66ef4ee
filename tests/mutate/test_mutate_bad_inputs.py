"""brrr mutate on an op it cannot mutate, or stopped midway: one clear message, and no copy of the op
left in $TMPDIR (brrr-mutant-*, brrr-mutants-*) whatever way it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, copy_op, plant

from brrr_kernels.cuda import cpu_build


def _leftovers(tmp: Path) -> list[str]:
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("brrr-mutant"))


def _mutate(tmp: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "brrr_kernels", "mutate", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


@pytest.fixture
def tmp(tmp_path: Path) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    return folder


def test_a_syntax_error_in_the_numba_stage_names_its_file_and_line(tmp_path: Path, tmp: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "numba_kernel.py", "def forward(", "def forward((")
    proc = _mutate(tmp, str(folder))
    out, err = proc.communicate(timeout=600)
    line = next(i for i, t in enumerate((folder / "numba_kernel.py").read_text().splitlines(), 1) if "def forward((" in t)
    assert proc.returncode == 2, out + err
    assert f"numba_kernel.py:{line}: syntax error" in err and "internal error" not in err and "Traceback" not in err
    assert _leftovers(tmp) == []


@pytest.mark.skipif(not cpu_build.available(), reason="needs a host compiler")
def test_a_compile_error_in_kernel_cu_is_shown_whole(tmp_path: Path, tmp: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu", "constexpr int kThreads = 256;",
                   "constexpr int kThreads = 256 +;")
    proc = _mutate(tmp, str(folder), "--stage", "cuda")
    out, err = proc.communicate(timeout=900)
    line = next(i for i, t in enumerate((folder / "kernel.cu").read_text().splitlines(), 1) if "256 +;" in t)
    assert proc.returncode == 1, out + err
    assert f"kernel.cu:{line}:" in err and "error" in err.split(f"kernel.cu:{line}:", 1)[1], err[-3000:]
    assert _leftovers(tmp) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_an_interrupted_mutate_leaves_no_copy_of_the_op(tmp_path: Path, tmp: Path, signum: int) -> None:
    folder = copy_op("sigmoid", tmp_path)
    proc = _mutate(tmp, str(folder), "--jobs", "1")
    try:
        # Wait (no fixed delay) until a worker has made its copy of the op, then interrupt.
        deadline = time.monotonic() + 600
        while not any(tmp.rglob("brrr-mutant-*")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, "mutate ended before a mutant was copied"
        os.killpg(proc.pid, signum) if signum == signal.SIGINT else proc.send_signal(signum)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 128 + signum
    assert _leftovers(tmp) == []
