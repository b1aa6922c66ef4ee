"""The calling contract: saved tensors picked by name, forward then backward, the torch.library schema."""

from __future__ import annotations

import pytest
import torch

from brrr_kernels.op.contract import call_forward, forward_backward, saved_positions, saved_tensors, schemas, visible
from brrr_kernels.op.loaders import builtin_op_names, load_op, load_reference


def test_saved_tensors_come_from_inputs_outputs_and_stats() -> None:
    spec = load_op("layernorm").spec
    inputs = tuple(torch.full((1,), float(i)) for i in range(len(spec.inputs)))
    results = tuple(torch.full((1,), 10.0 + i) for i in range(len(spec.outputs) + len(spec.stats)))
    names = dict(zip(spec.inputs, inputs)) | dict(zip(spec.outputs + spec.stats, results))
    picked = saved_tensors(spec, (*inputs, *spec.param_values), results)  # params after the tensors are ignored
    assert [t.item() for t in picked] == [names[n].item() for n in spec.saved]
    assert len(saved_positions(spec)) == len(spec.saved)


@pytest.mark.parametrize("name", builtin_op_names())
def test_forward_backward_gives_one_gradient_per_input(name: str) -> None:
    op = load_op(name)
    spec = op.spec
    inputs = spec.make_inputs(spec.gradcheck_size, torch.float64, torch.device("cpu"), torch.Generator().manual_seed(0))
    ref = load_reference(op)
    outputs = visible(spec, call_forward(spec, ref, inputs))
    upstream = tuple(torch.ones_like(o) for o in outputs)
    results, grads = forward_backward(spec, ref, inputs, upstream)
    assert len(results) == len(spec.outputs) + len(spec.stats)
    assert len(grads) == len(spec.inputs)
    assert all(g is None or g.shape == x.shape for g, x in zip(grads, inputs))


def test_schemas_name_params_with_their_types_and_defaults() -> None:
    forward, backward = schemas(load_op("layernorm").spec, "layernorm")
    assert forward == "layernorm(Tensor x, Tensor weight, Tensor bias, float eps=1e-05) -> (Tensor, Tensor, Tensor)"
    assert backward == ("layernorm_backward(Tensor grad_y, Tensor x, Tensor weight, Tensor mean, Tensor rstd, "
                        "float eps=1e-05) -> (Tensor, Tensor, Tensor)")
    assert schemas(load_op("sigmoid").spec, "s") == ("s(Tensor x) -> Tensor", "s_backward(Tensor grad_y, Tensor y) -> Tensor")
