"""A stand-in header written by an earlier build for a header that is now found is removed, so it
cannot shadow the real one from the cached include folder (brrr_kernel.cuh was stood in for once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from brrr_kernels.cuda import cpu_includes
from brrr_kernels.cuda.builder import INCLUDE_DIR


def test_a_stale_stand_in_is_removed_once_the_header_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRRR_CACHE", str(tmp_path / "cache"))
    op = tmp_path / "op"
    op.mkdir()
    kernel = op / "kernel.cu"
    kernel.write_text('#include "brrr_kernel.cuh"\n#include <not_a_real_header.h>\n')
    before = cpu_includes.prepare(op, [kernel], "op", [])
    assert set(before.stubbed) == {"brrr_kernel.cuh", "not_a_real_header.h"}
    after = cpu_includes.prepare(op, [kernel], "op", [INCLUDE_DIR])
    assert set(after.stubbed) == {"not_a_real_header.h"}
    stubs = after.folders[1]
    assert not (stubs / "brrr_kernel.cuh").exists() and (stubs / "not_a_real_header.h").is_file()
