"""`brrr bench`: timing rows, first versions checked before they are timed, the profiler trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import HAS_GPU, SIGMOID_VARIANTS, brrr, copy_op, gpu, plant

from brrr_kernels.commands.bench import release_kept_lines, twin


@pytest.mark.skipif(HAS_GPU, reason="checks the message on machines without a GPU")
def test_bench_without_gpu_exits_2_with_a_one_line_reason() -> None:
    proc = brrr("bench", "sigmoid")
    assert proc.returncode == 2 and proc.stderr.strip() == "brrr: error: brrr bench needs a CUDA GPU; torch sees none here"


@gpu
def test_bench_times_first_versions_only_when_they_match_the_reference(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "binding.cpp", "BRRR_BIND(m) {\n", SIGMOID_VARIANTS)
    out = tmp_path / "bench.json"
    proc = brrr("bench", str(folder), "--size", "1048576", "--no-numba", "--json", str(out),
                "--profile", str(tmp_path / "trace.json"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    forward = {r["impl"]: r for r in rows if r["pass_"] == "forward"}
    assert forward["cuda"]["ms"] > 0 and forward["cuda v2"]["ms"] > 0
    assert 0 < forward["cuda"]["same_copy_fraction"] < 2  # a copy of the same bytes was timed beside it
    assert "cuda v1 (failed: cuda v1 disagrees with forward)" in forward
    assert not any(r["impl"].startswith("cuda v") for r in rows if r["pass_"] == "forward+backward")
    trace = json.loads((tmp_path / "trace.json").read_text())
    names = {e.get("name", "") for e in trace["traceEvents"]}
    assert any(n.startswith("sigmoid cuda v2 ") for n in names) and any(n.startswith("sigmoid eager ") for n in names)


@gpu
def test_kept_l2_lines_are_released_in_torchs_context() -> None:
    torch.zeros(1, device="cuda")  # torch's context is current on this thread
    assert release_kept_lines() == 0  # CUDA_SUCCESS: the reset ran in that context


def test_table_sets_each_row_against_both_copies() -> None:
    from brrr_kernels.commands.bench import Timing, format_table

    row = Timing("softmax", "(4096, 8192)", "bfloat16", "forward", "cuda", 0.0371, 3617.0, 0.854, 3.1, 0.022, 0.962)
    text = format_table([row], 4244.0, "H200")
    header = next(ln for ln in text.splitlines() if ln.startswith("op "))
    assert "% copy  % same vs eager" in header
    assert "  85.4%   96.2%    3.10x" in text.splitlines()[-1]


@pytest.mark.parametrize("make", [lambda: torch.randn(6, 8), lambda: torch.randn(8, 6).t(),
                                  lambda: torch.randn(40)[3:35].view(4, 8), lambda: torch.arange(12).view(3, 4)[:, 1:]])
def test_a_twin_input_set_has_its_own_memory_laid_out_as_the_first(make) -> None:
    x = make()
    y = twin(x)
    assert torch.equal(x, y) and y.dtype == x.dtype
    assert (y.stride(), y.storage_offset()) == (x.stride(), x.storage_offset())
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
