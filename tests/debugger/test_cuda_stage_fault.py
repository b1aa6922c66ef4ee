"""`brrr debug --stage cuda` on a call the memory checks stop: gdb runs the checked build to the
faulting access and shows kernel.cu's line with the thread's locals (not a heap corruption, not
the runtime's report)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import REPO, brrr, plant

FAULTS = REPO / "tests" / "cuda" / "byok_ops" / "faults"


@pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")
def test_debug_on_a_faulting_store_stops_at_its_line(tmp_path: Path) -> None:
    folder = tmp_path / "faults"
    shutil.copytree(FAULTS, folder)
    # forward makes the off-by-one __stcs: the last thread stores one past the end of out
    plant(folder, "binding.cpp", "if (xc.numel() > 0) copy(", "if (xc.numel() > 0) copy_past_end(")
    line = next(i for i, text in enumerate((folder / "kernel.cu").read_text().splitlines(), 1)
                if "__stcs(&out[i + 1]" in text)
    out = brrr("debug", str(folder), "--stage", "cuda", "--index", "3", stdin="print i\nprint n\nkill\n")
    text = out.stdout + out.stderr
    assert f"kernel.cu:{line}: out-of-bounds write in copy_past_end_kernel" in text, text
    assert f"brrr: stopped at the faulting access, in copy_past_end_kernel at {folder.resolve()}/kernel.cu:{line}" in text, text
    assert "$1 = 1000\n" in text and "$2 = 1001\n" in text, text  # the faulting thread's own locals
