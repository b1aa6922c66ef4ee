"""torch.ops.brrr.*: schema, fake tensors, autograd and torch.compile, for every op."""

from __future__ import annotations

import pytest
import torch
from conftest import gpu

from brrr_kernels.op.loaders import builtin_op_names, load_op
from brrr_kernels.ops import register


def sample(name: str, device: str) -> tuple[torch.Tensor, ...]:
    """Inputs that take gradients, in float64 where the stage that runs on `device` computes in it (on a
    GPU the cuda stage: attention and matmul_tc have no float64 there)."""
    spec = load_op(name).spec
    dtypes = spec.stage_dtypes("cuda" if device == "cuda" else "reference")
    dtype = torch.float64 if torch.float64 in dtypes else dtypes[0]
    inputs = spec.make_inputs(spec.gradcheck_size, dtype, torch.device(device), torch.Generator().manual_seed(0))
    return tuple(x.requires_grad_(x.is_floating_point()) for x in inputs) + spec.param_values


@pytest.mark.parametrize("name", builtin_op_names())
def test_opcheck_on_cpu(name: str) -> None:
    op = register(name)
    results = torch.library.opcheck(op.default, sample(name, "cpu"))
    assert set(results.values()) == {"SUCCESS"}, results


def test_backward_goes_through_the_registered_backward() -> None:
    sigmoid = register("sigmoid")
    (x,) = sample("sigmoid", "cpu")
    sigmoid(x).sum().backward()
    s = torch.sigmoid(x.detach())
    torch.testing.assert_close(x.grad, s * (1 - s))
    assert torch.autograd.gradcheck(sigmoid, (x.detach().requires_grad_(),))


def test_compile_fullgraph_on_cpu() -> None:
    sigmoid = register("sigmoid")
    f = torch.compile(lambda t: sigmoid(t) * 2, fullgraph=True)
    x = torch.randn(33)
    torch.testing.assert_close(f(x), 2 * torch.sigmoid(x))


@gpu
@pytest.mark.parametrize("name", builtin_op_names())
def test_opcheck_and_compile_on_gpu(name: str) -> None:
    op = register(name)
    args = sample(name, "cuda")
    results = torch.library.opcheck(op.default, args)
    assert set(results.values()) == {"SUCCESS"}, results
    n_out = len(load_op(name).spec.outputs)

    def f(*a):
        out = op(*a)
        return out[:n_out] if isinstance(out, (tuple, list)) else out

    eager = f(*args)
    torch._dynamo.reset()  # f is one code object for every op: past 8 ops dynamo's recompile limit would refuse it
    compiled = torch.compile(f, fullgraph=True)(*args)
    torch.testing.assert_close(compiled, eager)


def test_spec_params_are_the_registered_ops_defaults() -> None:
    layernorm = register("layernorm")
    x, weight, bias, eps = sample("layernorm", "cpu")
    assert eps == 1e-5
    y, mean, rstd = layernorm(x, weight, bias)  # no eps: the spec's
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps))
    assert not torch.allclose(rstd, layernorm(x, weight, bias, 0.5)[2])  # a given eps is used
    y.sum().backward()  # autograd gets the default too
    assert weight.grad is not None and torch.isfinite(weight.grad).all()
    assert layernorm.default._schema.arguments[-1].default_value == pytest.approx(1e-5)
