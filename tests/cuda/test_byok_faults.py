"""Faults in the user's terms (the checked CPU build): an out-of-bounds store made through __stcs is
placed at kernel.cu's line, not at brrr's stand-in header, and names the kernel's parameter; a
float4 load at an address 4 bytes past a multiple of 16 faults as on a GPU, naming its line."""

from __future__ import annotations

import pytest
import torch
from conftest import REPO

from brrr_kernels.cuda import cpu_build
from brrr_kernels.op.loaders import load_op

FAULTS = REPO / "tests" / "cuda" / "byok_ops" / "faults"


def line_of(text: str) -> int:
    return next(i for i, line in enumerate((FAULTS / "kernel.cu").read_text().splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def calls() -> object:
    ext = cpu_build.build_cpu_extension(load_op(str(FAULTS)), cpu_build.CHECKED)
    return getattr(torch.ops, ext.namespace)


def fault_of(call: object, x: torch.Tensor) -> str:
    with pytest.raises(RuntimeError) as info:
        call(x)  # type: ignore[operator]
    return str(info.value).splitlines()[0]


def test_a_correct_copy_through_ldcs_and_stcs_reports_nothing(calls: object) -> None:
    x = torch.randn(1001)
    assert torch.equal(calls.forward(x), x)  # type: ignore[attr-defined]


def test_an_out_of_bounds_stcs_is_placed_at_the_kernels_line_naming_its_parameter(calls: object) -> None:
    message = fault_of(calls.forward_past_end, torch.randn(1001))  # type: ignore[attr-defined]
    line = line_of("__stcs(&out[i + 1]")
    assert message.endswith(
        f"kernel.cu:{line}: out-of-bounds write in copy_past_end_kernel, block (7, 0, 0), thread (104, 0, 0): "
        "4 bytes at out[1001], 1 element past the last element of out (1001 elements)"), message
    assert "brrr_cpu.h" not in message


def test_a_misaligned_float4_load_faults_at_its_line(calls: object) -> None:
    message = fault_of(calls.forward_float4_offset, torch.randn(1001))  # type: ignore[attr-defined]
    line = line_of("reinterpret_cast<const float4*>(inp1 + 1)[i]")
    assert f"kernel.cu:{line}: misaligned " in message, message
    assert "in float4_offset_kernel, block (0, 0, 0), thread (0, 0, 0)" in message, message
    assert "float4 (16-byte aligned) at an address 4 bytes past a multiple of 16, 4 bytes from the start of inp1" in message


def test_a_fault_inside_a_headers_helper_is_placed_there_and_names_the_kernels_parameter(calls: object) -> None:
    message = fault_of(calls.forward_helper_past_end, torch.randn(1001))  # type: ignore[attr-defined]
    line = next(i for i, text in enumerate((FAULTS / "common.h").read_text().splitlines(), 1) if "__stcs(" in text)
    # the header has no kernel: the parameter's name comes from where helper_past_end_kernel is defined
    assert message.endswith(
        f"common.h:{line}: out-of-bounds write in helper_past_end_kernel, block (7, 0, 0), thread (104, 0, 0): "
        "4 bytes at out[1001], 1 element past the last element of out (1001 elements)"), message
    assert "argument 1" not in message
