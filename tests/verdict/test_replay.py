"""Failure replays (pipeline/verdict/replay.py): each failing case keeps a file of its own, named for the
op's folder, the check and the case, so runs at once never replace each other's, and old ones are pruned."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import torch

from brrr_kernels.op.loaders import load_op
from brrr_kernels.verdict.replay import KEEP_S, Failure, load_failure, save_failure


def _saved(line: str) -> Path:
    words = line.split()
    return Path(words[words.index("--input") + 1])


def test_two_failing_runs_of_one_op_at_once_keep_a_case_each_and_old_cases_are_pruned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRRR_CACHE", str(tmp_path))
    op = load_op("sigmoid")
    cases = [torch.rand(7, generator=torch.Generator().manual_seed(seed)) for seed in (1, 2)]
    paths = [_saved(save_failure(Failure(op, (x,), (), "forward", index=3), "numba-forward-float32")) for x in cases]
    assert paths[0] != paths[1] and all(p.is_file() for p in paths)
    for path, x in zip(paths, cases):
        assert torch.equal(load_failure(path)["inputs"][0], x)
    stale = paths[0].with_name(paths[0].name.rsplit("-", 1)[0] + "-00000000.pt")
    stale.write_bytes(paths[0].read_bytes())
    os.utime(stale, (time.time() - 2 * KEEP_S,) * 2)
    other_check = paths[0].with_name(paths[0].name.replace("numba-forward", "cuda-forward"))
    other_check.write_bytes(b"")
    os.utime(other_check, (time.time() - 2 * KEEP_S,) * 2)
    third = _saved(save_failure(Failure(op, (torch.ones(7),), (), "forward", index=3), "numba-forward-float32"))
    assert not stale.exists()  # older than KEEP_S, same op and check: pruned
    assert all(p.is_file() for p in (*paths, third, other_check))  # fresh ones, and another check's, kept
