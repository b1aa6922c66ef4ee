"""brrr translate on an op `brrr new` just made: its numba stage is the template (forward and backward
raise NotImplementedError), so there is nothing to translate; it says so and keeps kernel.cu and
binding.cpp as they are, unfinished mark included (it wrote a stub with no kernel and dropped the mark)."""

from __future__ import annotations

from pathlib import Path

from conftest import brrr

from brrr_kernels.op.names import UNFINISHED_MARK


def test_translate_refuses_the_numba_template_and_keeps_the_cuda_templates(tmp_path: Path) -> None:
    made = brrr("new", "swish", "--inputs", "x", "--dir", str(tmp_path))
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "swish"
    before = {f: (folder / f).read_text() for f in ("kernel.cu", "binding.cpp")}
    result = brrr("translate", str(folder))
    assert result.returncode == 2, result.stdout + result.stderr
    line = next(n for n, t in enumerate((folder / "numba_kernel.py").read_text().splitlines(), 1)
                if "raise NotImplementedError" in t)
    assert f"numba_kernel.py:{line}: forward() still raises NotImplementedError" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert {f: (folder / f).read_text() for f in before} == before
    assert all(UNFINISHED_MARK in text for text in before.values())
