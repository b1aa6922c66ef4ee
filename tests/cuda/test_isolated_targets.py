"""An op in the single-.cu layout of the seeds (kernels, torch wrapper and PYBIND11_MODULE in one .cu,
spec.torch_module) runs in isolated.py's child process on the CPU, as kernel.cu and binding.cpp do:
an abort in its wrapper or its kernel is that case's FAIL row, named at its line, and brrr goes on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO, brrr, plant

from brrr_kernels.cuda import cpu_build
from brrr_kernels.cuda.isolated_targets import ModuleLibrary, OpsLibrary, target_of
from brrr_kernels.verdict.report import FAIL

pytestmark = pytest.mark.skipif(not cpu_build.available(), reason="needs a host compiler")

SEED = REPO / "examples" / "seed_mul"
SOURCE = "elementwise_mult.cu"
FAULTS = {
    # the wrapper aborts on the 255-element case; the kernel's thread 256 on the 257-element one
    "    int n = a.numel();\n": "    int n = a.numel();\n    if (n == 255) std::abort();  // WRAPPER\n",
    "    int idx = blockIdx.x * blockDim.x + threadIdx.x;\n":
        "    int idx = blockIdx.x * blockDim.x + threadIdx.x;\n    if (n == 257 && idx == 256) abort();  // KERNEL\n",
}


def _line(path: Path, mark: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if mark in text)


def test_a_seed_layout_op_whose_wrapper_or_kernel_aborts_fails_those_cases_and_the_rest_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / "aborting_seed"
    shutil.copytree(SEED, folder, ignore=shutil.ignore_patterns("__pycache__"))
    for old, new in FAULTS.items():
        plant(folder, SOURCE, old, new)
    out = tmp_path / "report.json"
    result = brrr("validate", str(folder), "--stage", "cuda", "--json", str(out))
    text = result.stdout + result.stderr
    assert result.returncode == 1, text  # the verdict's exit code: brrr itself did not die (134)
    rows = json.loads(out.read_text())["rows"]
    forward = next(r for r in rows if r["check"] == "forward" and r["dtype"] == "float32")
    detail = forward["detail"]
    wrapper, kernel = _line(folder / SOURCE, "// WRAPPER"), _line(folder / SOURCE, "// KERNEL")
    assert forward["verdict"] == FAIL, detail
    assert f"{SOURCE}:{wrapper}" in detail and "SIGABRT" in detail and "[size 255]" in detail, detail
    kernel_fault = f"{SOURCE}:{kernel} in elementwise_mult_kernel, block (1, 0, 0) thread (0, 0, 0): crash: SIGABRT"
    assert kernel_fault in detail, detail
    # the other cases and checks ran: the sizes that do not abort were compared, later rows pass
    assert {"size 1", "size 4099"} <= set(forward["cases"]), forward["cases"]
    assert any(r["verdict"] == "pass" for r in rows if r["check"] in ("opcheck", "compile fullgraph")), text


def test_each_cpu_build_crosses_to_the_child_as_its_paths_and_names(tmp_path: Path) -> None:
    class Extension:  # builder.Extension's fields that matter
        library = tmp_path / "op.so"
        namespace = "brrr_cpu_checked_op"

    name = "brrr_0123456789abcdef.brrr_module_op_cpu_checked"  # module_build.import_name: the library's own

    class Module:  # module_build.ModuleBuild's
        library = tmp_path / "module.so"
        module = SimpleNamespace(__name__=name)
        folder = tmp_path / "op"

    assert target_of(Extension()) == OpsLibrary(str(tmp_path / "op.so"), "brrr_cpu_checked_op")
    assert target_of(Module()) == ModuleLibrary(str(tmp_path / "module.so"), name, str(tmp_path / "op"))
