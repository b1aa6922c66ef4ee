"""The C++ side of registered ops (native_library) against the Python it replaces."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from brrr_kernels.base.errors import UsageError
from brrr_kernels.cuda import builder
from brrr_kernels.op.loaders import builtin_op_names, load_op, load_reference
from brrr_kernels.validation import native_library, torch_library

_names = itertools.count()
_kept: list[Any] = []


@pytest.fixture
def python_autograd(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(native_library, "available", lambda: False)
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
    assert native_library.available()


@pytest.mark.parametrize("name", [n for n in builtin_op_names() if not load_op(n).spec.forward_only])
def test_gradients_are_the_python_formulas_bit_for_bit(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    native, _ = gradients(defined(name), name)
    monkeypatch.setattr(native_library, "available", lambda: False)
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
    native_library.available.cache_clear()
    monkeypatch.setenv(native_library.SETTING, "0")
    try:
        assert not native_library.available()
    finally:
        native_library.available.cache_clear()


def test_another_cache_later_in_one_process_reuses_the_library_loaded(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert native_library.available()
    native_library.available.cache_clear()
    monkeypatch.setenv("BRRR_CACHE", str(tmp_path / "other"))
    try:
        assert native_library.available()  # a second copy would define torch.ops.brrr_native twice
        assert not (tmp_path / "other").exists()
    finally:
        native_library.available.cache_clear()


def test_a_mistyped_setting_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    native_library.available.cache_clear()
    monkeypatch.setenv(native_library.SETTING, "maybe")
    try:
        with pytest.raises(UsageError, match="BRRR_NATIVE='maybe': expected on or off"):
            native_library.available()
    finally:
        native_library.available.cache_clear()


def test_without_a_compiler_it_warns_once_and_python_autograd_takes_over(monkeypatch: pytest.MonkeyPatch) -> None:
    native_library.available.cache_clear()
    monkeypatch.setattr(native_library, "loaded", lambda: False)  # as in a process that has not loaded it yet
    monkeypatch.setattr(builder, "find_cxx", lambda: "/nonexistent/c++")
    try:
        with pytest.warns(UserWarning, match="brrr_library.cpp could not be built"):
            assert not native_library.available()
    finally:
        native_library.available.cache_clear()


@pytest.mark.usefixtures("python_autograd")
def test_the_python_fallback_keeps_gradients() -> None:
    fn = defined("layernorm")
    xs, params = leaves("layernorm")
    assert torch.autograd.gradcheck(lambda *a: fn(*a, *params)[0], tuple(xs))


def kernel_file(namespace: str, name: str, key: str) -> str:
    """Where the kernel NAMESPACE::NAME runs on `key` was registered (the dispatcher's own record)."""
    dump = torch._C._dispatch_dump(f"{namespace}::{name}")
    return next(line for line in dump.splitlines() if line.startswith(f"{key}:"))


def routed_sigmoid(forward: Any) -> Any:
    """The sigmoid op registered on CPU with `forward` (a torch op) as its kernel, which must be routed in C++."""
    op = load_op("sigmoid")
    ref = load_reference(op)
    ns = f"brrr_test_route_{next(_names)}"
    fn = torch_library.define(op, ns, {"CPU": (forward, ref.backward)}, ref)
    assert "brrr_library.cpp" in kernel_file(ns, "sigmoid", "CPU")
    return fn


def test_a_torch_op_target_is_called_from_cpp_with_the_same_results() -> None:
    fn = routed_sigmoid(torch.ops.aten.sigmoid)
    x = torch.randn(40, dtype=torch.float64, requires_grad=True)
    torch.testing.assert_close(fn(x), torch.sigmoid(x.detach()), rtol=0, atol=0)
    fn(x).sum().backward()
    s = torch.sigmoid(x.detach())
    torch.testing.assert_close(x.grad, s * (1 - s))


def test_a_result_sharing_an_inputs_memory_is_cloned() -> None:
    fn = routed_sigmoid(torch.ops.aten.alias)
    x = torch.randn(8)
    y = fn(x)
    assert torch.equal(y, x) and y.data_ptr() != x.data_ptr() and y._base is None


def test_a_target_taking_other_arguments_keeps_pythons_kernel() -> None:
    op = load_op("layernorm")
    ref = load_reference(op)
    ns = f"brrr_test_route_{next(_names)}"
    assert not native_library.route(ns, "nothing_defined_yet", "CPU", torch.ops.aten.sigmoid)
    fn = torch_library.define(op, ns, {"CPU": (ref.forward, ref.backward)}, ref)
    assert not native_library.route(ns, "layernorm", "CPU", torch.ops.aten.sigmoid)  # one argument, not four
    assert "brrr_library.cpp" not in kernel_file(ns, "layernorm", "CPU")
    xs, _ = leaves("layernorm")
    assert torch.equal(fn(*xs)[0], ref.forward(*xs, *load_op("layernorm").spec.param_values)[0])


def test_an_extensions_forward_and_backward_called_from_cpp_give_pythons_gradients(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from brrr_kernels.cuda import cpu_build

    op = load_op("layernorm")
    ref = load_reference(op)
    ext = cpu_build.build_cpu_extension(op)
    impls = {"CPU": (ext.forward, ext.backward)}
    ns = f"brrr_test_route_{next(_names)}"
    native = torch_library.define(op, ns, impls, ref)
    assert "brrr_library.cpp" in kernel_file(ns, "layernorm", "CPU")
    assert "brrr_library.cpp" in kernel_file(ns, "layernorm_backward", "CPU")
    monkeypatch.setattr(native_library, "available", lambda: False)
    python = torch_library.define(op, f"brrr_test_route_{next(_names)}", impls, ref)
    xs, params = leaves("layernorm")
    for a, b in zip(native(*xs, *params), python(*xs, *params)):
        assert torch.equal(a, b)
    g = torch.randn(xs[0].shape, dtype=xs[0].dtype)
    want = torch.autograd.grad(python(*xs, *params)[0], xs, g)
    for a, b in zip(torch.autograd.grad(native(*xs, *params)[0], xs, g), want):
        assert torch.equal(a, b)


TWO_OUTPUTS_SPEC = '''
import torch
from brrr_kernels import OpSpec

def make_inputs(size, dtype, device, gen):
    return (torch.randn(size, dtype=dtype, generator=gen).to(device),)

SPEC = OpSpec(name="twice_thrice", inputs=("x",), outputs=("a", "b"), saved=(), make_inputs=make_inputs,
              sim_sizes=(7,), gpu_sizes=(7,), gradcheck_size=5,
              dtypes={"reference": (torch.float64,), "cuda": (torch.float32,)})
'''
TWO_OUTPUTS_REFERENCE = '''
def forward(x):
    return 2 * x, 3 * x

def backward(grad_a, grad_b):
    return 2 * grad_a + 3 * grad_b
'''


@pytest.fixture
def two_outputs(tmp_path) -> tuple[Any, Any]:
    """An op folder whose forward has two outputs, loaded: (op, its reference stage)."""
    folder = tmp_path / "twice_thrice"
    folder.mkdir()
    (folder / "spec.py").write_text(TWO_OUTPUTS_SPEC)
    (folder / "reference.py").write_text(TWO_OUTPUTS_REFERENCE)
    op = load_op(str(folder))
    return op, load_reference(op)


@pytest.mark.parametrize("used", ["a", "b", "both"])
def test_an_output_the_loss_leaves_out_gets_a_zero_gradient(used: str, two_outputs: tuple[Any, Any]) -> None:
    op, ref = two_outputs
    native = torch_library.define(op, f"brrr_test_autograd_{next(_names)}", {"CPU": (ref.forward, ref.backward)}, ref)
    x = torch.randn(6, dtype=torch.float64, requires_grad=True)
    a, b = native(x)
    loss = {"a": a.sum(), "b": b.sum(), "both": a.sum() + b.sum()}[used]
    (grad,) = torch.autograd.grad(loss, x)
    want = {"a": 2.0, "b": 3.0, "both": 5.0}[used]
    torch.testing.assert_close(grad, torch.full_like(x, want), rtol=0, atol=0)


def test_a_target_returning_a_tensor_list_gives_the_schemas_outputs(two_outputs: tuple[Any, Any]) -> None:
    op, ref = two_outputs
    ext = f"brrr_test_ext_{next(_names)}"
    lib = torch.library.Library(ext, "DEF")  # an extension whose forward returns std::vector<at::Tensor>
    _kept.append(lib)  # the route holds its op: kept defined for the process, as an extension's are
    lib.define("forward(Tensor x) -> Tensor[]")
    lib.impl("forward", lambda x: [x, 3 * x], "CPU")  # its first result is its input itself
    ns = f"brrr_test_route_{next(_names)}"
    fn = torch_library.define(op, ns, {"CPU": (getattr(torch.ops, ext).forward, ref.backward)}, ref)
    assert "brrr_library.cpp" in kernel_file(ns, "twice_thrice", "CPU")
    x = torch.randn(5, dtype=torch.float64)
    a, b = fn(x)
    assert torch.equal(a, x) and torch.equal(b, 3 * x)
    assert a.data_ptr() != x.data_ptr()  # a custom op may not return its input: cloned


def test_torch_func_grad_goes_through_the_cpp_node() -> None:
    # register_autograd's Python formula refuses functorch transforms ("must override the setup_context
    # staticmethod"); the C++ node is an ordinary graph node to them.
    fn = defined("sigmoid")
    x = torch.randn(7, dtype=torch.float64)
    s = torch.sigmoid(x)
    torch.testing.assert_close(torch.func.grad(lambda t: fn(t).sum())(x), s * (1 - s))
