"""mul: planted bugs in its stages that validation must catch, and its CUDA build."""

from __future__ import annotations

import pytest
import torch
from conftest import HAS_GPU, compile_only, failed, gpu, needs_nvcc, validate

from brrr_kernels.cuda import builder
from brrr_kernels.op.loaders import load_op
from brrr_kernels.verdict.report import NOT_RUN


def test_swapped_gradients_in_numba_fail_backward_not_forward(mutant) -> None:
    op = mutant("mul", "swapped_gradients")
    bad = failed(validate(op, "numba"))
    for dtype in ("float32", "float64"):
        detail = bad[("numba", "backward", dtype)].detail
        assert "grad_a:" in detail and "grad_b:" in detail, detail
    assert not any(check in ("forward", "edge forward") for _, check, _ in bad)
    assert "Jacobian mismatch" in bad[("numba", "gradcheck", "float64")].detail


def test_swapped_gradients_in_reference_fail_gradcheck_and_oracle(mutant) -> None:
    op = mutant("mul", "reference_swapped_gradients")
    bad = failed(validate(op, "reference"))
    assert "Jacobian mismatch" in bad[("reference", "gradcheck", "float64")].detail
    assert "grad_a:" in bad[("reference", "backward vs oracle", "float32")].detail
    assert ("reference", "forward vs oracle", "float32") not in bad


def test_one_gradient_from_the_wrong_tensor_is_named(mutant) -> None:
    """Only grad_b wrong: the report names grad_b and not grad_a."""
    op = mutant("mul", "grad_b_from_b")
    detail = failed(validate(op, "numba"))[("numba", "backward", "float32")].detail
    assert "grad_b:" in detail and "grad_a:" not in detail


def test_mismatched_shapes_are_refused_not_read_past() -> None:
    from brrr_kernels.op.loaders import load_numba

    numba = load_numba(load_op("mul"))
    with pytest.raises(ValueError, match="one shape"):
        numba.forward(torch.ones(3), torch.ones(4))


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_compiles_all_four_dtypes_without_spills() -> None:
    (row,) = compile_only("mul")
    assert row.verdict == NOT_RUN
    kernels = {k["kernel"]: k for k in row.extras["kernels"]}
    for t, w in (("float", 4), ("double", 2), ("__half", 8), ("__nv_bfloat16", 8)):
        for kernel in ("mul_forward_kernel", "mul_backward_kernel"):
            assert f"{kernel}<{t}, {w}>" in kernels and f"{kernel}<{t}, 1>" in kernels
    assert all(k["spill_stores"] == 0 for k in kernels.values())


@gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_products_are_rounded_once(dtype: torch.dtype) -> None:
    """Computed in float, so the result is the exact product rounded once: torch's own answer."""
    ext = builder.build_extension(load_op("mul"))
    a = torch.randn(4099, device="cuda").to(dtype)
    b = torch.randn(4099, device="cuda").to(dtype)
    assert torch.equal(ext.forward(a, b), (a.float() * b.float()).to(dtype))


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_inputs_off_a_16_byte_boundary_take_the_scalar_path(dtype: torch.dtype) -> None:
    ext = builder.build_extension(load_op("mul"))
    a = torch.randn(4100, device="cuda").to(dtype)[1:]  # starts one element past a boundary
    b = torch.randn(4099, device="cuda").to(dtype)
    assert torch.equal(ext.forward(a, b), (a.float() * b.float()).to(dtype))
    grad_a, grad_b = ext.backward(b, a, b)
    assert torch.equal(grad_a, (b.float() * b.float()).to(dtype)) and torch.equal(grad_b, (b.float() * a.float()).to(dtype))
