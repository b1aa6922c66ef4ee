"""The tolerance table: every dtype has a number and a reason, ordered by precision."""

from __future__ import annotations

import torch

from brrr_kernels.loaders import builtin_op_names, load_op
from brrr_kernels.tolerances import DEFAULT


def test_every_dtype_has_a_reason_and_precision_orders_the_tolerances() -> None:
    assert all(t.why for t in DEFAULT.values())
    order = [torch.float64, torch.float32, torch.float16, torch.bfloat16]
    rtols = [DEFAULT[d].rtol for d in order]
    assert rtols == sorted(rtols) and DEFAULT[torch.float64].rtol <= 1e-10 and DEFAULT[torch.float32].rtol <= 1e-5


def test_op_overrides_say_why() -> None:
    for name in builtin_op_names():
        for dtype, tol in load_op(name).spec.tolerances.items():
            assert tol.why and len(tol.why) > 20, f"{name}: the {dtype} override needs its reason"
