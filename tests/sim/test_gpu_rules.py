"""numba_gpu_rules.py: array shapes and dtypes the GPU compiler refuses are named with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import STAGES

from brrr_kernels.sim import gpu_rules as numba_gpu_rules

HEAD = "from numba import cuda, float32, float64\nTHREADS = 256\nWARPS = THREADS // 32\n"

# (kernel body, the text a problem must contain, or "" for none): the first line is line 6.
CASES = {
    "literal": ("a = cuda.shared.array(32, dtype=float64)", ""),
    "global name": ("a = cuda.shared.array(WARPS, float64)", ""),
    "tuple of names": ("a = cuda.shared.array((WARPS, 32), dtype=float32)", ""),
    "arithmetic": ("a = cuda.shared.array(THREADS // 32, dtype=float64)", ":6: cuda.shared.array shape `THREADS // 32`"),
    "a parameter": ("a = cuda.local.array(n, dtype=float64)", ":6: cuda.local.array shape `n`"),
    "a local": ("m = 4\n    a = cuda.local.array((m, 2), float64)", ":7: cuda.local.array shape `(m, 2)`"),
    "a call": ("a = cuda.shared.array(int(WARPS), float64)", "shape `int(WARPS)`"),
    "dtype of an argument": ("a = cuda.shared.array(32, dtype=x.dtype)", "dtype `x.dtype`"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_a_kernels_arrays(tmp_path: Path, case: str) -> None:
    body, expected = CASES[case]
    path = tmp_path / "numba_kernel.py"
    path.write_text(HEAD + f"@cuda.jit\ndef k(x, n):\n    {body}\n")
    found = numba_gpu_rules.problems(path)
    if not expected:
        assert found == []
    else:
        assert len(found) == 1 and expected in found[0] and str(path) in found[0], found


def test_a_factorys_closure_names_are_constants(tmp_path: Path) -> None:
    """matmul's pattern: the dtype and size come from the enclosing function, frozen when it compiles."""
    path = tmp_path / "numba_kernel.py"
    path.write_text(HEAD + "def make(dtype, tile):\n    @cuda.jit\n    def k(x):\n"
                    "        a = cuda.shared.array((tile, tile), dtype)\n    return k\n")
    assert numba_gpu_rules.problems(path) == []


@pytest.mark.parametrize("op", sorted(p.name for p in STAGES.iterdir() if (p / "numba_kernel.py").exists()))
def test_the_built_in_numba_stages_follow_the_rules(op: str) -> None:
    assert numba_gpu_rules.problems(STAGES / op / "numba_kernel.py") == []
