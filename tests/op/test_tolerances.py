"""The comparison rule: each element within ulps of its own magnitude, floored only at the smallest normal."""

from __future__ import annotations

import pytest
import torch
from conftest import failed, plant, validate

from brrr_kernels.op.loaders import builtin_op_names, load_op
from brrr_kernels.op.tolerances import DEFAULT, Widen, rule_for

DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def _passes(got: float, expected: float, dtype: torch.dtype, widen: tuple[Widen, ...] = (), terms=None) -> bool:
    rule = rule_for("y", dtype, "numba", widen)
    e = torch.tensor([expected], dtype=torch.float64)
    return bool((rule.excess(torch.tensor([got], dtype=torch.float64), e, terms) <= 1).all())


def test_every_dtype_has_a_default_and_a_reason() -> None:
    for dtype in DTYPES:
        assert DEFAULT[dtype].why and 0 < DEFAULT[dtype].ulps <= 8


@pytest.mark.parametrize("dtype", DTYPES)
def test_an_error_is_judged_against_its_own_element(dtype: torch.dtype) -> None:
    """1e-3 relative fails at every magnitude above the smallest normal: no absolute floor hides it."""
    info = torch.finfo(dtype)
    for magnitude in (1.0, 1e-13 if dtype == torch.float64 else 1e-3, 10 * info.tiny):
        wrong = 1e-3 if dtype in (torch.float64, torch.float32) else 8 * info.eps
        assert not _passes(magnitude * (1 + wrong), magnitude, dtype)
        assert _passes(magnitude * (1 + info.eps), magnitude, dtype)


def test_the_softplus_log1p_error_fails_in_float64() -> None:
    """log(1 + exp(-30)) instead of log1p(exp(-30)): 9.34808e-14 where 9.35762e-14 is right."""
    assert not _passes(9.34808e-14, 9.35762e-14, torch.float64)


def test_a_sigmoid_flushed_to_zero_fails_while_subnormal_differences_pass() -> None:
    assert not _passes(0.0, 3.06e-7, torch.float32)  # sigmoid(-15) in float32
    assert not _passes(0.0, 3.35e-4, torch.float16)  # sigmoid(-8) in float16
    assert _passes(0.0, 4.47e-309, torch.float64)  # sigmoid(-710): a subnormal flushed or not
    assert _passes(0.0, 5.9e-5, torch.float16)
    assert not _passes(3e-308, 4.47e-309, torch.float64)  # a normal number where a subnormal is due
    assert not _passes(float("nan"), 1.0, torch.float32) and _passes(float("nan"), float("nan"), torch.float32)
    assert not _passes(float("inf"), -float("inf"), torch.float32) and _passes(float("inf"), float("inf"), torch.float32)


def test_a_widening_applies_to_its_output_dtype_and_stage_only() -> None:
    w = Widen("grad_x", "1 - y cancels", scale=lambda t: t["big"], dtypes=(torch.float32,), stages=("numba",))
    terms = {"big": torch.tensor([1.0], dtype=torch.float64)}
    assert rule_for("grad_x", torch.float32, "numba", (w,)).widened == (w,)
    assert rule_for("y", torch.float32, "numba", (w,)).widened == ()
    assert rule_for("grad_x", torch.float64, "numba", (w,)).widened == ()
    assert rule_for("grad_x", torch.float32, "cuda", (w,)).widened == ()
    rule = rule_for("grad_x", torch.float32, "numba", (w,))
    e = torch.tensor([1e-9], dtype=torch.float64)
    assert float(rule.bound(e, terms)[0]) == pytest.approx(8 * torch.finfo(torch.float32).eps)
    assert "1 - y cancels" in rule.describe()


def test_a_widening_never_narrows_and_ignores_an_infinite_scale() -> None:
    e = torch.tensor([2.0, 3.0], dtype=torch.float64)
    w = Widen("y", "test", scale=lambda t: torch.tensor([0.0, float("inf")], dtype=torch.float64))
    plain = rule_for("y", torch.float32, "numba").bound(e)
    assert torch.equal(rule_for("y", torch.float32, "numba", (w,)).bound(e, {}), plain)


def test_ulps_of_counts_float64_ulps_in_a_float32_stage() -> None:
    w = Widen("y", "float64 statistics", scale=lambda t: torch.tensor([1e6], dtype=torch.float64),
              ulps_of=torch.float64)
    bound = float(rule_for("y", torch.float32, "numba", (w,)).bound(torch.tensor([0.0], dtype=torch.float64), {})[0])
    assert bound == pytest.approx(8 * torch.finfo(torch.float64).eps * 1e6)


def test_op_widenings_say_why_and_name_real_outputs() -> None:
    for name in builtin_op_names():
        spec = load_op(name).spec
        outputs = set(spec.outputs) | {f"grad_{n}" for n in spec.inputs}
        for w in spec.tolerances:
            assert len(w.why) > 20, f"{name}: the widening of {w.output} needs its reason"
            assert w.output in outputs, f"{name}: widens {w.output!r}, not an output or gradient"


# --- the rule at work: the precision bugs of issue #13, planted, fail for their named reason ---------

SOFTPLUS = {
    "spec.py": '''"""Softplus, log(1 + exp(x)): the stable form, so exp never overflows and 1 + tiny keeps its digits."""

import torch

from brrr_kernels import Inputs, OpSpec, Size, one_per_thread

BLOCK = 64


def make_inputs(size: Size, dtype: torch.dtype, device: torch.device, gen: torch.Generator) -> Inputs:
    return (8 * torch.randn(size, dtype=dtype, generator=gen).to(device),)


def left_tail(dtype: torch.dtype, device: torch.device) -> Inputs:
    return (torch.tensor([-30.0, -20.0, -12.0, 0.0, 12.0, 30.0], dtype=dtype, device=device),)


SPEC = OpSpec(
    name="softplus",
    inputs=("x",),
    outputs=("y",),
    saved=("x",),
    make_inputs=make_inputs,
    sim_sizes=(1, BLOCK + 1),
    gpu_sizes=(1, 4099),
    gradcheck_size=5,
    edge_cases={"left tail": left_tail},
    oracle=lambda x: torch.nn.functional.softplus(x, threshold=1000.0),
    layouts={"numba": one_per_thread(BLOCK)},
)
''',
    "reference.py": '''import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    return x.clamp_min(0) + torch.log1p(torch.exp(-x.abs()))


def backward(grad_y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return grad_y * torch.sigmoid(x)
''',
    "numba_kernel.py": '''import math

import torch

from brrr_kernels import cdiv, import_cuda, launch

cuda = import_cuda()
BLOCK = 64


@cuda.jit
def softplus_forward_kernel(x, y, n):
    i = cuda.grid(1)
    if i < n:
        v = x[i]
        y[i] = max(v, 0.0) + math.log1p(math.exp(-abs(v)))


@cuda.jit
def softplus_backward_kernel(grad_y, x, grad_x, n):
    i = cuda.grid(1)
    if i < n:
        v = x[i]
        e = math.exp(-abs(v))
        s = 1.0 / (1.0 + e) if v >= 0 else e / (1.0 + e)
        grad_x[i] = grad_y[i] * s


def forward(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    if x.numel():
        launch(softplus_forward_kernel, cdiv(x.numel(), BLOCK), BLOCK, x.view(-1), y.view(-1), x.numel())
    return y


def backward(grad_y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    grad_y, x = grad_y.contiguous(), x.contiguous()
    grad_x = torch.empty_like(x)
    if x.numel():
        launch(softplus_backward_kernel, cdiv(x.numel(), BLOCK), BLOCK, grad_y.view(-1), x.view(-1),
               grad_x.view(-1), x.numel())
    return grad_x
''',
    "kernel.cu": "// This test validates the reference and numba stages only.\n",
    "binding.cpp": "// This test validates the reference and numba stages only.\n",
}


def test_softplus_with_log_of_one_plus_fails_in_float64(tmp_path) -> None:
    """log(1 + exp(-|x|)) for log1p: 9.34808e-14 where 9.35762e-14 is right at x = -30, a relative error
    of 1e-3 that the old absolute floor (1e-12 in float64) passed with exit 0."""
    folder = tmp_path / "softplus"
    folder.mkdir()
    for name, text in SOFTPLUS.items():
        (folder / name).write_text(text)
    assert not failed(validate(folder)), "the correct softplus must pass"
    plant(folder, "numba_kernel.py", "math.log1p(math.exp(-abs(v)))", "math.log(1.0 + math.exp(-abs(v)))")
    bad = failed(validate(folder, "numba"))
    row = bad[("numba", "edge forward", "float64")]
    assert "[left tail] y:" in row.detail and "out of tolerance" in row.detail, row.detail
    assert row.worst is not None and row.worst.input == -30.0 and row.max_rel > 1e-4
    assert ("numba", "forward", "float64") in bad  # random inputs below -17 show it too


def test_sigmoid_flushed_to_zero_below_minus_14_fails_in_float32(mutant) -> None:
    op = mutant("sigmoid", "flush_below_14")
    bad = failed(validate(op, "numba"))
    row = bad[("numba", "forward", "float32")]
    assert "y:" in row.detail and "out of tolerance" in row.detail and "relative error 1" in row.detail, row.detail
    assert row.worst is not None and row.worst.input < -14 and row.worst.got == 0.0




def test_sigmoid_grad_x_allows_the_rounding_of_a_subnormal_saved_y_and_no_more() -> None:
    """float16 sigmoid backward on an H100, 2026-11-24: x = -10.875, grad_y = 3.2754; y = 1.8925e-5 saved
    as 1.8954e-5 (subnormal), grad_x 6.2108e-5 against 6.19861e-5, 1.01x the bound measured against |y|.
    Every operation rounded correctly: the saved y's subnormal rounding is the error, and passes; a y
    four subnormal steps off, or a normal y 3 ulps off, still fails."""
    spec = load_op("sigmoid").spec
    rule = spec.rule("grad_x", torch.float16, "cuda")
    x = torch.tensor([-10.875], dtype=torch.float64)
    g = torch.tensor([3.275390625], dtype=torch.float64)

    def excess(x: torch.Tensor, y_saved: torch.Tensor) -> float:
        y = torch.sigmoid(x)
        expected = g * y * (1 - y)
        got = (g * y_saved * (1 - y_saved)).half()
        return float(rule.excess(got, expected, {"x": x, "y": y, "grad_y": g}).max())

    y16 = torch.sigmoid(x).half().double()
    assert y16.item() < torch.finfo(torch.float16).tiny
    assert excess(x, y16) <= 1
    assert excess(x, y16 + 4 * 2.0**-24) > 1
    normal = torch.tensor([-4.0], dtype=torch.float64)  # y = 0.018, normal: y 3 ulps high fails there
    assert excess(normal, torch.sigmoid(normal) * (1 + 3 * torch.finfo(torch.float16).eps)) > 1
