"""`brrr validate --huge`: the cuda stage on more than 2**31 elements, which catches 32-bit index arithmetic.

Only for elementwise ops (output[i] depends on the inputs at i, broadcast): the reference runs on
the inputs gathered at sampled positions, which include the first and last elements and those
around 2**31, so no float64 copy of the whole input is ever made.
"""

from __future__ import annotations

import torch

from ..base.progress import ticking
from ..op.contract import call_backward, call_forward, saved_tensors
from ..op.loaders import Stage
from ..op.spec import Op
from ..verdict.compare import Around, case_terms, compare
from ..verdict.faults import fault_from
from ..verdict.report import SKIP, Row
from .plan import Check
from .rows import RowBuilder
from .trial import Case, Trial, poisoned, stage_fn


def huge_row(op: Op, check: Check, stages: dict[str, Stage], seed: int, gen: torch.Generator) -> Row:
    b = RowBuilder(op, check, "float32")
    if op.spec.huge is None:
        row = b.finish()
        row.verdict, row.detail = SKIP, "the spec declares no huge inputs (elementwise ops only)"
        return row
    if "cuda" not in stages:
        b.fail("the cuda stage was not built (run with the cuda stage, on a GPU)")
        return b.finish()
    try:
        positions = _huge_compare(b, stages, seed, gen)
    except Exception as e:  # an illegal address from a 32-bit index lands here
        b.fault(fault_from(e, op.path("cuda")), Case("huge", ()))
        positions = None
    row = b.finish()
    if row.worst is not None and positions is not None:
        row.worst.index = (int(positions[row.worst.flat_index]),)
    return row


def _huge_compare(b: RowBuilder, stages: dict[str, Stage], seed: int, gen: torch.Generator) -> torch.Tensor:
    cuda, ref = stages["cuda"], stages["reference"]
    spec = b.op.spec
    assert spec.huge is not None
    device_gen = torch.Generator(device="cuda").manual_seed(seed)
    with ticking(f"{b.op.name}: cuda stage on more than 2^31 elements"):
        inputs = spec.huge(torch.device("cuda"), device_gen)
        with torch.no_grad(), poisoned():
            outputs = call_forward(spec, cuda, inputs)
            shape = outputs[0].shape
            upstream = torch.randn(shape, device="cuda", generator=device_gen, dtype=outputs[0].dtype)
            grads = call_backward(spec, cuda, (upstream,), saved_tensors(spec, inputs, outputs))
        n = outputs[0].numel()
        b.row.extras["elements"] = n
        positions = torch.cat([torch.arange(0, 4096), torch.arange(2**31 - 4096, min(2**31 + 4096, n)),
                               torch.randint(0, n, (1 << 16,), generator=gen), torch.arange(n - 4096, n)])
        positions = positions.unique().to("cuda")
        where = torch.unravel_index(positions, shape)  # index the broadcast views: no 8 GB copies
        flat = tuple(torch.broadcast_to(x, shape)[where].double() for x in inputs)
        want = Trial(stage_fn(ref), flat, "cuda", torch.float64)
        want_grads = call_backward(spec, ref, (upstream.reshape(-1)[positions].double(),),
                                   saved_tensors(spec, flat, want.outputs))
        case = Case(f"{n} elements, {positions.numel()} sampled", flat)
        terms = case_terms(spec, flat, want.outputs, (upstream.reshape(-1)[positions].double(),))
        first = spec.outputs[0]
        around = Around(terms, flat[0], probe_name=spec.inputs[0])
        b.add(compare(first, outputs[0].reshape(-1)[positions], want.outputs[0],
                      spec.rule(first, torch.float32, "cuda"), around), case)
        for name, g, w in zip(spec.inputs, grads, want_grads):
            if g is not None and g.shape == shape:  # elementwise gradients; reduced ones are not sampled
                rule = spec.rule(f"grad_{name}", torch.float32, "cuda")
                b.add(compare(f"grad_{name}", g.reshape(-1)[positions], w, rule, around), case)
        del inputs, outputs, grads, upstream
        torch.cuda.empty_cache()
    return positions
