"""The builder: ptxas reports, compiler errors against the user's file, the compile cache."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import copy_op, needs_nvcc

from pipeline import builder
from pipeline.spec import load_op

PTXAS = """\
ptxas info    : Compiling entry function '_Z22sigmoid_forward_kernelIfEvPKT_PS0_l' for 'sm_90'
ptxas info    : Function properties for _Z22sigmoid_forward_kernelIfEvPKT_PS0_l
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 16 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]
"""


def test_parse_resources_reads_registers_spills_and_smem() -> None:
    (k,) = builder.parse_resources(PTXAS)
    assert k["registers"] == 16 and k["shared_bytes"] == 2048
    assert (k["stack_bytes"], k["spill_stores"], k["spill_loads"]) == (8, 4, 12)
    assert k["kernel"].startswith("sigmoid_forward_kernel")


def test_compiler_errors_keep_the_users_path_and_line(tmp_path: Path) -> None:
    source = tmp_path / "op" / "kernel.cu"
    out = f'{source}(42): error: identifier "yy" is undefined\n      y[i] = yy[i];\n             ^\n\n1 error detected\n'
    text = builder.compiler_errors(out, source)
    assert "kernel.cu(42): error" in text and 'identifier "yy"' in text
    assert builder.first_error_location(out) == (str(source), 42)


def test_build_key_changes_with_the_source(tmp_path: Path) -> None:
    op = load_op(str(copy_op("sigmoid", tmp_path)))
    before = builder.build_key(op, "check", "sm_90", ())
    assert builder.build_key(op, "check", "sm_80", ()) != before
    path = op.path("cuda")
    path.write_text(path.read_text() + "\n// edited\n")
    assert builder.build_key(op, "check", "sm_90", ()) != before


@needs_nvcc
def test_compile_check_is_cached_and_a_corrupt_entry_is_rebuilt(tmp_path: Path, brrr_cache: Path) -> None:
    op = load_op("sigmoid")
    first = builder.compile_check(op)
    again = builder.compile_check(op)
    assert again.cached and again.kernels == first.kernels
    names = {k.kernel for k in first.kernels}
    assert {"sigmoid_forward_kernel<float, 4>", "sigmoid_backward_kernel<double, 2>"} <= names
    (entry,) = [p for p in (brrr_cache / "check").glob("sigmoid-*.json")]
    entry.write_text("{ not json")
    rebuilt = builder.compile_check(op)
    assert not rebuilt.cached and json.loads(entry.read_text())["kernels"]
