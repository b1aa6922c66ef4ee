"""numba's simulator internals brrr relies on: all present in the installed numba-cuda, and a missing
one named with what brrr needs it for."""

from __future__ import annotations

import pytest

from brrr_kernels.sim import numba_internals
from brrr_kernels.sim.numba_internals import INTERNALS, Internal, SimulatorChanged, internal, missing


def test_every_listed_internal_is_in_the_installed_numba_cuda() -> None:
    assert missing() == []


def test_a_missing_internal_is_named_with_its_use(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = Internal("kernel", "NoSuchManager", "stands for a piece a numba-cuda release dropped")
    monkeypatch.setattr(numba_internals, "INTERNALS", (*INTERNALS, gone))
    with pytest.raises(SimulatorChanged, match=r"numba\.cuda\.simulator\.kernel\.NoSuchManager.*a piece a numba-cuda"):
        internal("kernel", "NoSuchManager")
    assert missing() == ["kernel.NoSuchManager: stands for a piece a numba-cuda release dropped"]


def test_only_sim_imports_numba_simulator() -> None:
    from conftest import REPO

    outside = [str(p.relative_to(REPO)) for p in (REPO / "pipeline").rglob("*.py")
               if "numba.cuda.simulator" in p.read_text() and p.parent.name != "sim"]
    assert outside == []
