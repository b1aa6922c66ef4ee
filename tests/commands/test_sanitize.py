"""brrr sanitize: compute-sanitizer's verdict read right, and a clear refusal without a GPU."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import HAS_GPU, brrr, gpu

from brrr_kernels.commands import sanitize


def fake_sanitizer(folder: Path, summary: str, code: int) -> None:
    tool = folder / "compute-sanitizer"
    tool.write_text(f"#!/bin/sh\necho '========= Invalid __global__ write of size 4 bytes'\n"
                    f"echo '=========     at y_kernel+0x1a0 in kernel.cu:21'\necho '{summary}'\nexit {code}\n")
    tool.chmod(0o755)


@pytest.mark.parametrize(("summary", "code", "errors"), [
    ("========= ERROR SUMMARY: 3 errors", 99, 3),
    ("========= ERROR SUMMARY: 0 errors", 0, 0),
    ("========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)", 0, 0),
    ("========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)", 99, 2),
    ("Traceback (most recent call last): boom", 1, -1),  # no summary: never a clean verdict
    ("========= ERROR SUMMARY: 0 errors", 1, -1),  # the child failed for another reason
])
def test_the_summary_line_is_the_verdict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, summary: str, code: int,
                                         errors: int) -> None:
    fake_sanitizer(tmp_path, summary, code)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    finding = sanitize.run_tool("sigmoid", "sigmoid", "memcheck", ("1",))
    assert finding.errors == errors and finding.ok == (errors == 0)
    if errors > 0:
        assert any("Invalid __global__ write" in line for line in finding.first)


@pytest.mark.skipif(HAS_GPU, reason="the refusal is what a machine without a GPU gets")
def test_without_a_gpu_it_says_so_and_exits_2() -> None:
    proc = brrr("sanitize", "sigmoid")
    assert proc.returncode == 2 and "needs a CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr


@gpu
def test_every_tool_passes_on_sigmoid(tmp_path: Path) -> None:
    proc = brrr("sanitize", "sigmoid", "--json", str(tmp_path / "s.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(" pass ") == len(sanitize.TOOLS)


def test_the_tools_see_each_tensor_as_its_own_allocation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's caching allocator off in the child: a write just past a tensor is then outside any allocation,
    where memcheck looks (inside the caching allocator's block it saw nothing on an H100)."""
    tool = tmp_path / "compute-sanitizer"
    tool.write_text("#!/bin/sh\necho \"caching=$PYTORCH_NO_CUDA_MEMORY_CACHING\"\necho '========= ERROR SUMMARY: 0 errors'\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("PYTORCH_NO_CUDA_MEMORY_CACHING", raising=False)
    seen: list[str] = []
    real_run = sanitize.subprocess.run

    def run(*args: object, **kwargs: object) -> object:
        proc = real_run(*args, **kwargs)
        seen.append(proc.stdout)
        return proc

    monkeypatch.setattr(sanitize.subprocess, "run", run)
    assert sanitize.run_tool("sigmoid", "sigmoid", "memcheck", ("1",)).errors == 0
    assert "caching=1" in seen[0]
