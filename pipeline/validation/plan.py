"""What `brrr validate` checks, stage by stage, as data: the README's table of checks, in code.

A `Check` is one row kind of the report: the stage it checks, what the stage is compared with,
on which cases, and whether it looks at forward or at backward. A stage's plan lists its checks
in the order the report shows them; `EachDtype` repeats its checks for each dtype the spec gives
the stage. validate.py runs a plan wherever the stage runs (`loaders.Where`).

To add a check, add a line here; the executor already knows what each `Against` and `Cases`
means. A forward check followed by a backward one on the same cases shares their runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import partial

from ..op.spec import Phase, StageName


class Against(Enum):
    """What a stage's results are compared with."""

    ORACLE = "the spec's native PyTorch op (and autograd through it), in float64"
    REFERENCE = "the reference stage in float64, on the same device"
    NUMBA = "the numba stage in the same dtype, where it runs"
    INPUTS = "the inputs as they were before each call of the stage's comparisons, bit for bit"
    NUMERIC = "finite differences: torch.autograd.gradcheck in float64"
    COMPILER = "the compilers: the stage builds (without a place to run it, only compiles)"
    LIBRARY = ("torch.library: the op registered as a PyTorch op passes opcheck, and torch.compile(fullgraph=True) "
               "gives eager's outputs and gradients; on the cuda stage where it runs, else on the reference")


class Cases(Enum):
    """Which inputs a check runs on (made afresh for each dtype, shared by the checks of one dtype)."""

    NONE = "none of its own"
    RANDOM = "fresh random inputs at the sizes of where the stage runs (around the block size, or large on a GPU)"
    SMALL = "fresh random inputs at the simulator sizes, wherever the stage runs"
    STRIDED = ("the two largest random sizes, viewed with a stride of 2 in the last dimension and one element off "
               "alignment, and the largest laid out dense with its dimensions in reverse order (a transpose)")
    VERSIONS = ("fresh random inputs at the sizes of where the stage runs; executed on the CPU, those up to 2^16 "
                "input elements")
    EDGE = "the spec's named edge inputs (±1e5, ±inf, ...)"
    GRADCHECK = "random inputs at the spec's gradcheck size, float64"
    HUGE = "more than 2^31 elements, checked on a sample that includes the last ones (--huge, GPU only)"


@dataclass(frozen=True)
class Check:
    stage: StageName
    name: str  # the report's check column
    against: Against
    cases: Cases = Cases.NONE
    phase: Phase = "forward"
    first_versions: bool = False  # the forward_v1, ... binding.cpp registers (kept for bench): a row each


@dataclass(frozen=True)
class EachDtype:
    """These checks once for every dtype of the stage (the spec's `dtypes`), in this order."""

    checks: tuple[Check, ...]


Step = Check | EachDtype
Plan = tuple[Step, ...]

_ref = partial(Check, "reference")
REFERENCE_PLAN: Plan = (
    _ref("gradcheck", Against.NUMERIC, Cases.GRADCHECK),
    _ref("opcheck", Against.LIBRARY, Cases.GRADCHECK),  # before the oracle checks: a spec without an oracle ends there
    # One call of the compiled op compares its outputs and its gradients: a check of its own, not
    # the backward half of a forward/backward pair.
    _ref("compile fullgraph", Against.LIBRARY, Cases.GRADCHECK),
    EachDtype((_ref("forward vs oracle", Against.ORACLE, Cases.RANDOM),
               _ref("backward vs oracle", Against.ORACLE, Cases.RANDOM, "backward"))),
    EachDtype((_ref("edge inputs", Against.ORACLE, Cases.EDGE),)),
)

_numba = partial(Check, "numba")
NUMBA_PLAN: Plan = (
    EachDtype((_numba("forward", Against.REFERENCE, Cases.RANDOM),
               _numba("backward", Against.REFERENCE, Cases.RANDOM, "backward"),
               _numba("edge forward", Against.REFERENCE, Cases.EDGE),
               _numba("edge backward", Against.REFERENCE, Cases.EDGE, "backward"))),
    _numba("inputs unchanged", Against.INPUTS),
    _numba("gradcheck", Against.NUMERIC, Cases.GRADCHECK),
)

_cuda = partial(Check, "cuda")
CUDA_PLAN: Plan = (
    _cuda("compile", Against.COMPILER),
    EachDtype((_cuda("forward", Against.REFERENCE, Cases.RANDOM),
               _cuda("backward", Against.REFERENCE, Cases.RANDOM, "backward"),
               _cuda("forward vs numba", Against.NUMBA, Cases.SMALL),
               _cuda("backward vs numba", Against.NUMBA, Cases.SMALL, "backward"),
               _cuda("non-contiguous fwd", Against.REFERENCE, Cases.STRIDED),
               _cuda("non-contiguous bwd", Against.REFERENCE, Cases.STRIDED, "backward"),
               _cuda("edge forward", Against.REFERENCE, Cases.EDGE),
               _cuda("edge backward", Against.REFERENCE, Cases.EDGE, "backward"),
               _cuda("first versions", Against.REFERENCE, Cases.VERSIONS, first_versions=True))),
    _cuda("inputs unchanged", Against.INPUTS),
    _cuda("gradcheck", Against.NUMERIC, Cases.GRADCHECK),
    _cuda("opcheck", Against.LIBRARY, Cases.GRADCHECK),
    _cuda("compile fullgraph", Against.LIBRARY, Cases.GRADCHECK),
)

HUGE = _cuda("huge (> 2^31 elements)", Against.REFERENCE, Cases.HUGE)  # only with --huge, after the plans

PLANS: dict[StageName, Plan] = {"reference": REFERENCE_PLAN, "numba": NUMBA_PLAN, "cuda": CUDA_PLAN}
