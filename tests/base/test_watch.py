"""`brrr validate --watch`: what counts as a change, and a saved edit re-validated in the warm process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, copy_op, plant

from brrr_kernels.base import watch


def test_a_change_is_a_file_added_removed_or_modified_and_caches_do_not_count(tmp_path: Path) -> None:
    (tmp_path / "kernel.cu").write_text("a")
    (tmp_path / "spec.py").write_text("b")
    before = watch.snapshot([tmp_path])
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "spec.cpython-311.pyc").write_text("x")
    (tmp_path / ".kernel.cu.swp").write_text("x")
    assert watch.changed(before, watch.snapshot([tmp_path])) == []
    (tmp_path / "kernel.cu").write_text("a, edited")
    (tmp_path / "spec.py").unlink()
    (tmp_path / "bugs").mkdir()
    (tmp_path / "bugs" / "new.bug").write_text("c")
    after = watch.snapshot([tmp_path])
    assert watch.changed(before, after) == sorted([tmp_path / "kernel.cu", tmp_path / "spec.py",
                                                   tmp_path / "bugs" / "new.bug"])
    assert watch.last_saved([tmp_path / "kernel.cu"], after) == pytest.approx(time.time(), abs=5)


def _read_until(proc: subprocess.Popen[str], marker: str, limit: float) -> str:
    """stderr lines up to and including one that contains `marker`."""
    seen, end = [], time.monotonic() + limit
    while time.monotonic() < end:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if marker in line:
            return "".join(seen)
    raise AssertionError(f"no {marker!r} within {limit} s; stderr so far:\n{''.join(seen)}")


def test_a_saved_edit_is_validated_again_and_ctrl_c_ends_the_watch(tmp_path: Path) -> None:
    op = copy_op("sigmoid", tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "brrr_kernels", "validate", str(op), "--stage", "reference",
                             "--watch", "--seed", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path)
    try:
        _read_until(proc, "watching 1 op folder", 300)
        plant(op, "reference.py", "grad_y * y * (1 - y)", "grad_y * y * (1 - y) * 1.001")
        after_edit = _read_until(proc, "verdict", 300)
        assert "changed: " in after_edit and "reference.py" in after_edit
        assert "verdict (exit 1)" in after_edit and "s after the save" in after_edit
        _read_until(proc, "watching 1 op folder", 60)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130
    first, second = out.split("== sigmoid")[1:]
    assert "0 failed" in first and "FAIL" not in first
    assert "FAIL" in second  # the edit broke backward: gradcheck sees it
