"""The example scripts run as written."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO


def test_stages_side_by_side_agree() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    proc = subprocess.run([sys.executable, "examples/stages_side_by_side.py", "sigmoid"], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(maxsplit=1) for line in proc.stdout.splitlines())
    assert lines["reference"] == lines["numba"]
