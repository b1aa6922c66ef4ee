"""The CPU build of an op's cuda stage: linking where the toolchain is not the one brrr expects."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from brrr_kernels.base.errors import BuildError
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


@pytest.mark.parametrize("defines", ['{"BRRR_SCALE": "3", "BRRR_FLAG": ""}', "{}"])
def test_the_specs_defines_reach_the_compile(tmp_path: Path, defines: str) -> None:
    # A kernel.cu that compiles only with the macros a setup.py would pass (-DBRRR_SCALE=3 -DBRRR_FLAG).
    folder = tmp_path / "sigmoid"
    shutil.copytree(load_op("sigmoid").folder, folder, ignore=shutil.ignore_patterns("__pycache__", "bugs"))
    kernel = folder / "kernel.cu"
    kernel.write_text('#if BRRR_SCALE != 3 || !defined(BRRR_FLAG)\n#error "built without the spec\'s defines"\n#endif\n'
                      + kernel.read_text())
    spec = folder / "spec.py"
    spec.write_text(spec.read_text().replace("SPEC = OpSpec(", f"SPEC = OpSpec(defines={defines}, ", 1))
    op = load_op(str(folder))
    job = cpu_build.kernel_job(op)
    if defines == "{}":
        with pytest.raises(BuildError, match="built without the spec's defines"):
            builder.compile_job(job)
    else:
        assert "-DBRRR_SCALE=3" in job.command and "-DBRRR_FLAG" in job.command
        assert builder.compile_job(job).path.is_file()


def test_the_lines_that_test_cuda_arch_are_named_for_the_compile_rows_note(tmp_path: Path) -> None:
    """On the CPU __CUDA_ARCH__ is undefined, as in host code: where an op's sources choose code by it,
    the CPU build's row says so by line, since only a GPU runs what they select where it is defined."""
    from types import SimpleNamespace

    from brrr_kernels.cuda.cpu_build import arch_branches, arch_note

    (tmp_path / "kernel.cu").write_text('#include "convert.cuh"\n// #if __CUDA_ARCH__ in a comment\n__global__ void k() {}\n')
    (tmp_path / "convert.cuh").write_text("#pragma once\n#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
                                          "#define FAST 1\n#elif __CUDA_ARCH__\n#endif\n")
    op = SimpleNamespace(folder=tmp_path)
    assert arch_branches(op) == ["convert.cuh:2", "convert.cuh:4"]
    assert "convert.cuh:2, convert.cuh:4" in (arch_note(op) or "")
    (tmp_path / "convert.cuh").write_text("#pragma once\n")
    assert arch_note(op) is None
