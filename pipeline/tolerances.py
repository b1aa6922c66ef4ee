"""The one table of comparison tolerances, per dtype, with the reason for each number.

A stage's result `got` matches `expected` (the reference stage evaluated in float64 on the
same inputs) when |got - expected| <= atol + rtol * |expected| for every element.
An op may override an entry in its spec, and must say why there.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float
    why: str


DEFAULT: dict[torch.dtype, Tolerance] = {
    # float64 carries 53 bits (eps 2.2e-16). Different but correct evaluation orders of a
    # few transcendental calls land within ~1e-15 relative; 1e-10 leaves margin for ops
    # that sum thousands of terms while still catching any real bug.
    torch.float64: Tolerance(rtol=1e-10, atol=1e-12, why="eps 2.2e-16; sums of ~1e4 terms stay ~1e-12"),
    # float32 eps is 1.2e-7: an elementwise op is within a few ulps of the float64 truth;
    # 1e-5 relative allows reductions of a few thousand terms (error grows ~sqrt(n) ulps).
    torch.float32: Tolerance(rtol=1e-5, atol=1e-6, why="eps 1.2e-7; a few ulps plus reduction growth"),
    # float16 eps is 9.8e-4: inputs and outputs are rounded once each (2 half-ulps) even when
    # the kernel computes in float32.
    torch.float16: Tolerance(rtol=2e-3, atol=1e-3, why="eps 9.8e-4; input and output each rounded once"),
    # bfloat16 eps is 7.8e-3 (8 bits of mantissa): same reasoning, eight times coarser.
    torch.bfloat16: Tolerance(rtol=1.6e-2, atol=8e-3, why="eps 7.8e-3; input and output each rounded once"),
}


def tolerance_for(dtype: torch.dtype, overrides: dict[torch.dtype, Tolerance] | None = None) -> Tolerance:
    if overrides and dtype in overrides:
        return overrides[dtype]
    return DEFAULT[dtype]
