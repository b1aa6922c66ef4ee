"""Stopping in one simulated thread, tracing it, and the road from a failed check to the debugger."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO, brrr

import brrr_kernels
from brrr_kernels import cli
from brrr_kernels.base.errors import UsageError
from brrr_kernels.op.loaders import load_op


def debug_cli(*args: str, commands: str, cwd=REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "brrr_kernels", "debug", *args], input=commands, capture_output=True,
                          text=True, cwd=cwd, timeout=300, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def sigmoid_input(seed: int = 0) -> torch.Tensor:
    spec = load_op("sigmoid").spec
    return spec.make_inputs(spec.sim_sizes[-1], torch.float32, torch.device("cpu"), torch.Generator().manual_seed(seed))[0]


def test_debug_index_stops_in_the_thread_with_its_input() -> None:
    proc = debug_cli("sigmoid", "--index", "5", commands="p i\nn\nn\nn\np i, float(v)\nc\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "stopped in sigmoid_forward_kernel, block (0, 0, 0) thread (5, 0, 0) (computes element 5)" in out
    assert "NameError" in out  # `p i` before the first line ran: pdb really stopped at the top
    m = re.search(r"\(Pdb\) \(5, (\S+)\)", out)
    assert m, out
    assert float(m.group(1)) == pytest.approx(float(sigmoid_input()[5]), rel=1e-6)


def test_debug_any_block_size_and_later_blocks() -> None:
    proc = debug_cli("sigmoid", "--block", "2", "--thread", "7", commands="n\np i\nc\n")
    assert proc.returncode == 0, proc.stderr
    assert "block (2, 0, 0) thread (7, 0, 0)" in proc.stdout and "(Pdb) 263" in proc.stdout  # 2*128 + 7


def test_trace_prints_executed_lines_locals_and_the_write() -> None:
    x = float(sigmoid_input()[5])
    lines = brrr_kernels.trace("sigmoid", index=5).splitlines()
    assert lines[0].startswith("sigmoid_forward_kernel  block (0, 0, 0) thread (5, 0, 0)")
    body = [re.sub(r"\s+", " ", ln.strip()) for ln in lines[1:]]
    assert body[0].endswith("i = cuda.grid(1) i=5")
    assert body[1].endswith("if i >= n:")
    assert body[2].endswith(f"v = x[i] v={x:.6g}")
    assert body[3].endswith("if v >= 0:")
    branch = "y[i] = 1.0 / (1.0 + math.exp(-v))" if x >= 0 else "y[i] = e / (1.0 + e)"
    assert any(b.endswith(branch) for b in body[4:])
    assert body[-1].startswith("wrote y[5] = ")
    assert float(body[-1].split("= ")[1]) == pytest.approx(torch.sigmoid(torch.tensor(x, dtype=torch.float64)).item(), rel=1e-5)


def test_trace_backward_phase() -> None:
    text = brrr_kernels.trace("sigmoid", index=3, phase="backward")
    assert text.startswith("sigmoid_backward_kernel") and "wrote grad_x[3] = " in text


def test_a_thread_outside_the_launch_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="never entered"):
        brrr_kernels.trace("sigmoid", block=50, thread=0)


def test_unknown_kernel_lists_the_kernels() -> None:
    with pytest.raises(UsageError, match="sigmoid_forward_kernel, sigmoid_backward_kernel"):
        brrr_kernels.trace("sigmoid", index=0, kernel="nope")


def test_failed_validation_prints_a_debug_command_that_stops_at_the_wrong_thread(mutant, tmp_path) -> None:
    op = mutant("sigmoid", "negative_branch")
    proc = brrr("validate", str(op), "--stage", "numba", "--seed", "3", cwd=tmp_path)
    assert proc.returncode == 1
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("numba  forward") and "float32" in ln)
    index = int(re.search(r"y\[(\d+)\]", row).group(1))
    command = re.search(r"debug it: brrr (debug .*--index (\d+))", proc.stdout)
    assert command and int(command.group(2)) == index
    args = command.group(1).split()[1:]
    run = debug_cli(*args, commands="n\nn\nn\np i, x[i] < 0\nc\n", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert f"(computes element {index})" in run.stdout
    assert f"(Pdb) ({index}, np.True_)" in run.stdout  # the planted bug lives in the x < 0 branch


def test_a_kernel_that_raises_is_reported_with_block_thread_file_and_line(mutant) -> None:
    op = mutant("sigmoid", "no_bounds_check")
    proc = brrr("trace", str(op), "--block", "3", "--thread", "100")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert re.search(r"numba_kernel.py:16 in sigmoid_forward_kernel, block \(3, 0, 0\) thread \(\d+, 0, 0\): IndexError",
                     proc.stderr), proc.stderr


def test_trace_a_2d_kernel_names_both_coordinates() -> None:
    spec = load_op("square").spec
    x = spec.make_inputs(spec.sim_sizes[-1], torch.float32, torch.device("cpu"), torch.Generator().manual_seed(0))[0]
    rows, cols = x.shape
    index = cols + 3 if rows > 1 else 3  # second row: the y coordinate matters
    row, col = divmod(index, cols)
    lines = brrr_kernels.trace("square", index=index).splitlines()
    assert lines[0].startswith(f"square_forward_kernel  block ({col // 8}, {row // 8}, 0) thread ({col % 8}, {row % 8}, 0)")
    body = [re.sub(r"\s+", " ", ln.strip()) for ln in lines[1:]]
    assert body[0].endswith(f"col, row = cuda.grid(2) col={col} row={row}")
    v = float(x[row, col])
    assert any(b.startswith(f"{body[2].split()[0]} for r in range(row, rows") and b.endswith(f"r={row}") for b in body)
    assert any(b.endswith(f"v = x[r, col] v={v:.6g}") for b in body)
    written = [b for b in body if b.startswith("wrote ")]
    assert written[0].startswith(f"wrote y[{row},{col}] = ")
    assert float(written[0].split("= ")[1]) == pytest.approx(v * v, rel=1e-5)  # printed with 6 digits


@pytest.mark.parametrize("content, says", [
    (b"\x80\x04garbage, not a torch file", "not inputs saved by a failed validation (torch.load: UnpicklingError)"),
    (None, "a torch file, but not inputs saved by a failed validation (expected the keys op, inputs, upstream)"),
    (b"", "not inputs saved by a failed validation"),
], ids=["corrupt", "another torch file", "empty"])
def test_debug_input_that_is_not_saved_inputs_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          content: bytes | None, says: str) -> None:
    path = tmp_path / "saved.pt"
    if content is None:
        torch.save({"x": torch.zeros(3)}, path)
    else:
        path.write_bytes(content)
    assert cli.main(["debug", "--input", str(path), "--index", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"brrr: error: --input {path}: ") and says in err
    assert len(err.strip().splitlines()) <= 2 and "Traceback" not in err  # the message, and at most its hint


def test_replay_command_names_the_thread_by_element_or_by_block_and_thread(tmp_path: Path) -> None:
    from conftest import copy_op

    from brrr_kernels.verdict.replay import Failure, replay_command

    sigmoid = load_op("sigmoid")
    by_index = Failure(sigmoid, (), (), "forward", index=344)
    assert replay_command(by_index, Path("/c/f.pt")) == "brrr debug sigmoid --input /c/f.pt --index 344"
    copied = load_op(str(copy_op("sigmoid", tmp_path)))  # not built in: named by its folder
    by_place = Failure(copied, (), (), "backward", block=(1, 0, 0), thread=(5, 0, 0))
    assert replay_command(by_place, Path("/c/f.pt")) == (
        f"brrr debug {copied.folder} --input /c/f.pt --phase backward --block 1,0,0 --thread 5,0,0")
    in_cuda = Failure(sigmoid, (), (), "forward", index=7, stage="cuda")  # gdb on the CPU execution
    assert replay_command(in_cuda, Path("/c/f.pt")) == "brrr debug sigmoid --input /c/f.pt --stage cuda --index 7"
