"""Never silent: the numba stage's first call shows progress, and a stage the sizes make long is announced with an estimate."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import STAGES, copy_op, plant

from brrr_kernels.op.loaders import load_numba, load_op
from brrr_kernels.validation import estimate

SIGMOID_SIZES = "sim_sizes=(1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17)"


def _sized(tmp_path: Path, sizes: str) -> Path:
    return plant(copy_op("sigmoid", tmp_path), "spec.py", SIGMOID_SIZES, f"sim_sizes={sizes}")


def test_counting_threads_counts_each_simulated_launch() -> None:
    stage = load_numba(load_op("sigmoid"))
    with estimate.counting_threads() as counted:
        stage.module.forward(torch.zeros(300))
    assert counted == [3 * 128]  # three blocks of 128 threads


@pytest.mark.parametrize("op", sorted(p.name for p in STAGES.iterdir() if (p / "spec.py").is_file()))
def test_no_builtin_op_is_announced_as_slow(op: str) -> None:
    """At 1 ms a thread (the simulator's slow end), no built-in op's numba stage reaches a minute."""
    loaded = load_op(op)
    assert estimate.before_first_call(loaded) is None
    assert estimate.after_first_call(loaded, 256 * 1e-3, 256) is None


def test_a_large_size_is_announced_with_its_estimate(tmp_path: Path) -> None:
    op = load_op(str(_sized(tmp_path, "(1, 5, 200000)")))
    assert estimate.before_first_call(op) is None  # the first call is at size 1
    warning = estimate.after_first_call(op, 256 * 1e-3, 256)
    assert warning is not None and warning.startswith("sigmoid: the numba stage will take about ")
    # per dtype (2): 256 + 256 + 2 x 200000 threads; gradcheck at size 9: 3 x 9 calls of 128 threads
    assert "about 13 min in the simulator (804,480 simulated threads at 1 ms a thread" in warning


def _announced(tmp_path: Path, sizes: str, wanted: str) -> str:
    """Run `brrr validate` on sigmoid with these sizes until stderr shows `wanted`, then Ctrl-C it."""
    folder = _sized(tmp_path, sizes)
    err_path = tmp_path / "stderr"
    with open(err_path, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "brrr_kernels", "validate", str(folder), "--stage", "numba"],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while wanted not in err_path.read_text():
            assert proc.poll() is None, err_path.read_text()
            assert time.monotonic() < deadline, err_path.read_text()
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=10) == 130
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return err_path.read_text()


def test_a_first_call_that_takes_long_is_announced_before_it_starts(tmp_path: Path) -> None:
    err = _announced(tmp_path, "(10**7,)", "first call (size 10000000) ...")
    lines = err.splitlines()
    warning = next(i for i, ln in enumerate(lines) if "is 20,000,000 simulated threads: at least 33 min" in ln)
    ticker = next(i for i, ln in enumerate(lines) if "numba stage in the CUDA simulator, first call (size 10000000)" in ln)
    assert warning < ticker
    assert "first call (size 10000000): stopped after" in err and "done in" not in err


def test_a_stage_that_takes_long_is_announced_after_its_first_call(tmp_path: Path) -> None:
    err = _announced(tmp_path, "(1, 5, 200000)", "the numba stage will take about")
    assert "first call (size 1): done in" in err
    assert "simulated threads at" in err and "smaller sim_sizes in spec.py run faster" in err
