"""The CPU build of an op's cuda stage: linking where the toolchain is not the one brrr expects."""

from __future__ import annotations

from pathlib import Path

import pytest

from brrr_kernels.cuda import builder, cpu_build
from brrr_kernels.op.loaders import load_op


def test_a_gold_that_cannot_link_falls_back_to_the_default_linker(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    op = load_op("sigmoid")
    jobs = [cpu_build.kernel_job(op), cpu_build.binding_job(op), cpu_build.runtime_job()]
    objects = [o.path for o in builder.compile_all(jobs, "compiling sigmoid for the CPU", "cpu")]
    real = builder._link_command
    tried: list[bool] = []

    def gold_fails(library: Path, source: Path, objs: list[Path], libs: tuple[str, ...]) -> list[str]:
        tried.append(builder.GOLD in libs)
        return ["false"] if builder.GOLD in libs else real(library, source, objs, libs)

    monkeypatch.setattr(builder, "_link_command", gold_fails)
    library = tmp_path / "sigmoid.so"
    builder._link(op, library, "brrr_gold_test", objects, (*cpu_build.CPU_LINK_LIBS, builder.GOLD), verbose=False)
    assert tried == [True, False]
    assert library.is_file()
