"""The C++ autograd formula of registered ops (native_autograd) against the Python one it replaces."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from brrr_kernels.cuda import builder
from brrr_kernels.op.loaders import builtin_op_names, load_op, load_reference
from brrr_kernels.validation import native_autograd, torch_library

_names = itertools.count()


@pytest.fixture
def python_autograd(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(native_autograd, "available", lambda: False)
    yield


def defined(name: str) -> Any:
    """torch.ops.<a namespace of its own>.NAME with the reference on CPU, under whichever autograd is on."""
    op = load_op(name)
    ref = load_reference(op)
    return torch_library.define(op, f"brrr_test_autograd_{next(_names)}", {"CPU": (ref.forward, ref.backward)}, ref)


def leaves(name: str) -> tuple[list[torch.Tensor], tuple[Any, ...]]:
    spec = load_op(name).spec
    made = spec.make_inputs(spec.gradcheck_size, torch.float64, torch.device("cpu"),
                            torch.Generator().manual_seed(7))
    return [x.requires_grad_(x.is_floating_point()) for x in made], spec.param_values


def gradients(fn: Any, name: str) -> tuple[tuple[torch.Tensor, ...], tuple[Any, ...]]:
    xs, params = leaves(name)
    out = fn(*xs, *params)
    y = out[0] if isinstance(out, tuple) else out
    wrt = [x for x in xs if x.requires_grad]
    upstream = torch.randn(y.shape, dtype=y.dtype, generator=torch.Generator().manual_seed(3))
    return torch.autograd.grad(y, wrt, upstream), (out if isinstance(out, tuple) else (out,))


def test_it_builds_and_loads_here() -> None:
    assert native_autograd.available()


@pytest.mark.parametrize("name", [n for n in builtin_op_names() if not load_op(n).spec.forward_only])
def test_gradients_are_the_python_formulas_bit_for_bit(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    native, _ = gradients(defined(name), name)
    monkeypatch.setattr(native_autograd, "available", lambda: False)
    python, _ = gradients(defined(name), name)
    assert len(native) == len(python) > 0
    for a, b in zip(native, python):
        assert torch.equal(a, b)


def test_gradcheck_through_the_cpp_node() -> None:
    fn = defined("layernorm")
    xs, params = leaves("layernorm")
    assert torch.autograd.gradcheck(lambda *a: fn(*a, *params)[0], tuple(xs))


def test_stats_take_no_gradient_and_the_output_has_the_cpp_node() -> None:
    y, mean, rstd = defined("layernorm")(*leaves("layernorm")[0])
    assert "BrrrBackward" in y.grad_fn.name()
    assert not mean.requires_grad and not rstd.requires_grad


def test_only_the_inputs_that_ask_get_a_gradient() -> None:
    fn = defined("layernorm")
    x, weight, bias = leaves("layernorm")[0]
    bias.requires_grad_(False)
    fn(x, weight.detach(), bias)[0].sum().backward()
    assert x.grad is not None and weight.grad is None and bias.grad is None


def test_a_saved_input_changed_in_place_is_refused_as_torch_refuses_it() -> None:
    fn = defined("layernorm")
    x, weight, bias = leaves("layernorm")[0]
    w = weight * 1  # not a leaf, so it may change in place
    y = fn(x, w, bias)[0]
    w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_a_second_backward_through_a_freed_graph_is_refused() -> None:
    y = defined("sigmoid")(*leaves("sigmoid")[0])
    y.sum().backward()
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_no_grad_gives_results_without_a_graph() -> None:
    fn = defined("sigmoid")
    with torch.no_grad():
        y = fn(*leaves("sigmoid")[0])
    assert y.grad_fn is None and not y.requires_grad


def test_setting_off_means_python_autograd(monkeypatch: pytest.MonkeyPatch) -> None:
    native_autograd.available.cache_clear()
    monkeypatch.setenv(native_autograd.SETTING, "0")
    try:
        assert not native_autograd.available()
    finally:
        native_autograd.available.cache_clear()


def test_without_a_compiler_it_warns_once_and_python_autograd_takes_over(monkeypatch: pytest.MonkeyPatch) -> None:
    native_autograd.available.cache_clear()
    monkeypatch.setattr(builder, "find_cxx", lambda: "/nonexistent/c++")
    try:
        with pytest.warns(UserWarning, match="C\\+\\+ autograd formula could not be built"):
            assert not native_autograd.available()
    finally:
        native_autograd.available.cache_clear()


@pytest.mark.usefixtures("python_autograd")
def test_the_python_fallback_keeps_gradients() -> None:
    fn = defined("layernorm")
    xs, params = leaves("layernorm")
    assert torch.autograd.gradcheck(lambda *a: fn(*a, *params)[0], tuple(xs))
