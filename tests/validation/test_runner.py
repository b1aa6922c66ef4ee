"""Many ops at once (--jobs): an op whose worker process dies is one FAIL row naming it, and the other
ops' verdicts, the exit code and --json are kept, whatever killed the worker."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import brrr, copy_op, plant

from brrr_kernels.verdict.report import FAIL

# The reference's forward crashes the process it runs in: the worker (the reference is not isolated,
# as the extension on a GPU is not: this is how such a crash reaches the worker on any machine).
CRASH = ("def forward(x: torch.Tensor) -> torch.Tensor:\n",
         "def forward(x: torch.Tensor) -> torch.Tensor:\n    import os\n    os.abort()\n")


def test_a_worker_process_that_dies_is_a_row_naming_its_op_beside_the_others_verdicts(tmp_path: Path) -> None:
    crashing = plant(copy_op("sigmoid", tmp_path / "a"), "spec.py", 'name="sigmoid"', 'name="crashing"')
    plant(crashing, "reference.py", *CRASH)
    healthy = copy_op("sigmoid", tmp_path / "b")
    out = tmp_path / "report.json"
    result = brrr("validate", str(crashing), str(healthy), "--stage", "reference", "--jobs", "2", "--json", str(out))
    text = result.stdout + result.stderr
    assert result.returncode == 1, text
    assert "Traceback" not in text and "BrokenProcessPool" not in text, text
    rows = json.loads(out.read_text())["rows"]
    lost = [r for r in rows if r["verdict"] == FAIL]
    assert len(lost) == 1 and lost[0]["check"] == "worker process", text
    assert str(crashing) in lost[0]["detail"] and "was killed by SIGABRT" in lost[0]["detail"], lost[0]["detail"]
    assert f"== {crashing}" in result.stdout and "worker process" in result.stdout, result.stdout  # in the table too
    kept = [r for r in rows if r["op"] == "sigmoid"]
    assert kept and all(r["verdict"] == "pass" for r in kept), text
    # Progress on stderr as each op's worker ends, whichever ends first.
    assert re.search(rf"  sigmoid: {len(kept)} passed, 0 failed, \d+ s \([12] of 2 ops done\)", result.stderr), result.stderr
    assert f"  {crashing}: 0 passed, 1 failed (" in result.stderr, result.stderr


def test_one_op_whose_code_runs_on_a_gpu_runs_in_a_worker_so_a_crash_is_a_row(tmp_path: Path, monkeypatch) -> None:
    """On a GPU the op's host code runs in brrr's process: one op alone, without --jobs, goes to a worker
    too (here the GPU is pretended, the crash the reference's)."""
    from brrr_kernels.validation import runner

    crashing = plant(copy_op("sigmoid", tmp_path / "a"), "reference.py", *CRASH)
    monkeypatch.setattr(runner, "_runs_on_gpu", lambda options: True)
    outcomes = list(runner.validate_many([str(crashing)], runner.Options(stages=("reference",)), jobs=1))
    assert len(outcomes) == 1 and len(outcomes[0].rows) == 1, outcomes
    row = outcomes[0].rows[0]
    assert row.check == "worker process" and row.verdict == FAIL, row
    assert "was killed by SIGABRT" in row.detail and "--cuda-on-cpu" in row.detail, row.detail
