"""The walkthrough, the notebook and the training example, run as a reader would run them."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from conftest import HAS_GPU, REPO, brrr

from brrr_kernels.commands.walkthrough import Tour
from brrr_kernels.op.loaders import load_op


def test_walkthrough_runs_every_step_without_pausing() -> None:
    proc = brrr("walkthrough", "--no-pause")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for n in range(1, 7):
        assert f"==== step {n} of 6" in out
    assert "gradcheck(reference, float64, size 9) -> True" in out
    assert "sigmoid_forward_kernel  block (0, 0, 0) thread (5, 0, 0)" in out and "wrote y[5] = " in out
    # Step 6 checks the cuda stage's gradients on the GPU, or without one executed on the CPU.
    assert "gradcheck(cuda stage, float64, " + ("on " if HAS_GPU else "executed on the CPU) -> True") in out
    paragraphs = ["\n".join(line for line in p.splitlines() if not line.startswith("====")) for p in out.split("\n\n")]
    narration = [p for p in paragraphs if p.startswith("Step ")]
    assert len(narration) >= 6
    assert not [p for p in narration if "  " in p], "a run of spaces in the narration"


def test_say_fills_one_paragraph_without_the_source_indentation() -> None:
    out = io.StringIO()
    Tour(load_op("sigmoid"), out, pause=False).say(f"""first line {1},
        then an indented continuation line""")
    assert out.getvalue() == "first line 1, then an indented continuation line\n\n"


@pytest.fixture(scope="module")
def step_4() -> subprocess.CompletedProcess[str]:
    """`brrr walkthrough --step 4`, run once for the two tests that read it (a run imports torch and builds)."""
    return brrr("walkthrough", "--step", "4", "--no-pause")


def test_walkthrough_single_step_and_bad_step(step_4: subprocess.CompletedProcess[str]) -> None:
    assert step_4.returncode == 0, step_4.stderr
    assert "step 4 of 6" in step_4.stdout and not any(f"step {n} of 6" in step_4.stdout for n in (1, 2, 3, 5, 6))
    bad = brrr("walkthrough", "--step", "9")
    assert bad.returncode == 2 and "between 1 and 6" in bad.stderr


def test_notebook_executes(monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(REPO / "examples" / "walkthrough.ipynb", as_version=4)
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the kernel's; undone after, so no later test inherits it
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(REPO)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)
    assert "gradcheck passed" in text and "wrote y[5]" in text and " 0 failed" in text
    assert "gradcheck of the cuda stage (" + ("cuda" if HAS_GPU else "cpu") + "): True" in text


def test_training_example_loss_goes_down_and_gradients_match() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "examples/train_with_brrr_op.py", "--steps", "25"], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, last = (float(v) for v in proc.stdout.splitlines()[-1].removeprefix("loss ").split(" -> "))
    assert last < 0.5 * first


def test_walkthrough_step_4_shows_the_translation_beside_the_hand_tuned_kernel(
        step_4: subprocess.CompletedProcess[str]) -> None:
    assert step_4.returncode == 0, step_4.stderr
    out = step_4.stdout
    translated = out.index("--- kernel.cu (from brrr translate")
    hand_tuned = out.index("--- kernel.cu ---")
    assert translated < hand_tuned
    assert "__global__ void sigmoid_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n)" in out
    assert "brrr::Pack<T, W>" in out[hand_tuned:]
