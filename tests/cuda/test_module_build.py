"""The build of an op brought as its own torch extension: a module of several sources (two .cu
files and the binding .cpp of a setup.py project), compiled and linked for the GPU here without
one, and built and run on the CPU across an edit of one source."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from conftest import REPO, needs_nvcc

from brrr_kernels.base.errors import BuildError
from brrr_kernels.cuda import builder, module_build
from brrr_kernels.op.loaders import load_op

MULTI = REPO / "tests" / "cuda" / "byok_ops" / "multi"


def _symbols(library: Path, which: str) -> set[str]:
    """Demangled names, without their parameters, of the library's dynamic symbols ("ADDR TYPE NAME", or "U NAME")."""
    out = subprocess.run(["nm", "-D", "-C", which, str(library)], capture_output=True, text=True, check=True).stdout
    fields = [line.split(None, 2) if not line.startswith(" ") else ["", *line.split(None, 1)] for line in out.splitlines()]
    return {f[2].split("(")[0] for f in fields if len(f) == 3}


def test_each_source_is_compiled_by_its_own_compiler() -> None:
    jobs = module_build.gpu_jobs(load_op(str(MULTI)), "sm_90")
    tools = {job.named.name: Path(job.command[0]).name for job in jobs}
    assert tools == {"kernel.cu": "nvcc", "shift.cu": "nvcc", "bind.cpp": Path(builder.find_cxx()).name}
    # nvcc gets the macros torch's own extension builds give it, which the author's code is written for
    for job in jobs:
        has = {"-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__"} <= set(job.command)
        assert has == (job.named.suffix == ".cu"), job.command
    # brrr's module goes into the source declaring PYBIND11_MODULE, and only there
    name = module_build._module_name(load_op(str(MULTI)), "gpu")
    assert [name in job.source.read_text() for job in jobs] == [False, False, True]


@needs_nvcc
@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm to read the library's symbols")
def test_a_module_of_several_sources_compiles_and_links_for_the_gpu(tmp_path: Path) -> None:
    op = load_op(str(MULTI))
    objects = builder.compile_all(module_build.gpu_jobs(op, "sm_90"), "compiling multi", "sm_90")
    library = tmp_path / "multi.so"
    command = module_build.gpu_link_command(library, [o.path for o in objects])
    # A CPU build of torch has no CUDA libraries to link against: those (only those) are left out here.
    dirs = [Path(f[2:]) for f in command if f.startswith("-L")]
    absent = [f for f in command if f.startswith("-l") and not any((d / f"lib{f[2:]}.so").exists() for d in dirs)]
    assert set(absent) <= {"-lc10_cuda", "-ltorch_cuda"}, absent
    subprocess.run([f for f in command if f not in absent], check=True, capture_output=True, text=True)
    name = module_build._module_name(op, "gpu")
    defined, undefined = _symbols(library, "--defined-only"), _symbols(library, "--undefined-only")
    assert f"PyInit_{name}" in defined  # one module, brrr's: the author's PYBIND11_MODULE became its function
    own = {"scale", "shift", "affine_forward"}  # the launchers of both .cu files, and bind.cpp's wrapper
    assert own <= defined and not own & undefined  # every source of the module is in it


@pytest.mark.parametrize("declared, called, blamed", [
    ("namespace c10::cuda { void missing_call(int); }", "c10::cuda::missing_call(1)", "torch's CUDA libraries"),
    # the project's own: a wrapper dispatching a dtype its .cu never instantiates
    ("template <typename T> void scale_fwd(T*);", "scale_fwd<double>(nullptr)", "never instantiates"),
])
def test_a_module_needing_a_symbol_no_library_defines_is_a_build_error_naming_it(tmp_path: Path, declared: str,
                                                                                 called: str, blamed: str) -> None:
    source = tmp_path / "needs.cpp"
    source.write_text(f"{declared}\nvoid use() {{ {called}; }}\n")
    library = tmp_path / "needs.so"
    subprocess.run([builder.find_cxx(), "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    symbol = called.split("(")[0]
    with pytest.raises(BuildError, match=rf"uses (void )?{re.escape(symbol)}.*, which no library loaded here defines") as e:
        module_build.import_module(f"brrr_test_needs_missing_{len(blamed)}", library)
    assert blamed in (e.value.hint or "")


def test_a_kernel_edit_recompiles_that_source_alone_and_the_rebuilt_module_runs_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The binding .cpp (torch's headers: minutes on 2 cores) is compiled once, not on every edit of
    a .cu beside it; the rebuild is imported afresh in the process that imported the one before."""
    folder = tmp_path / "multi"
    shutil.copytree(MULTI, folder)
    cached: dict[str, bool] = {}
    compile_all = builder.compile_all

    def recording(jobs: list[builder.Job], what: str, target: str, verbose: bool = False) -> list[builder.ObjectFile]:
        objects = compile_all(jobs, what, target, verbose)
        cached.update({job.named.name: o.cached for job, o in zip(jobs, objects)})
        return objects

    monkeypatch.setattr(builder, "compile_all", recording)
    x = torch.arange(5.0)
    before = module_build.build_cpu_module(load_op(str(folder)))
    torch.testing.assert_close(before.forward(x), 2 * x + 1)
    kernel = folder / "kernel.cu"
    kernel.write_text(kernel.read_text().replace("y[i] = x[i] * s;", "y[i] = x[i] * s + 10.0f;"))
    cached.clear()
    after = module_build.build_cpu_module(load_op(str(folder)))
    assert {name: cached[name] for name in ("kernel.cu", "shift.cu", "bind.cpp")} == \
        {"kernel.cu": False, "shift.cu": True, "bind.cpp": True}
    torch.testing.assert_close(after.forward(x), 2 * x + 11)
    torch.testing.assert_close(before.forward(x), 2 * x + 1)  # two modules of one name live side by side
    assert after.module.__name__ != before.module.__name__  # what isolated.py's child imports it by
