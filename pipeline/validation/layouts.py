"""The strided, misaligned and permuted cases (trial.strided_cases): what a stage that fails one did,
and when a stage may decline one.

Most kernels people have read their inputs as dense row-major memory and leave the wrapper to make
them so; many wrappers forget (every public kernel tried so far). When such a case fails, the
failure alone says only "wrong values". `cause` tries what the kernel most likely did instead, and
says so only where that reproduces the stage's output exactly: the stage is run again on contiguous
copies of what it would then have read, and must return what it returned (the reference plays no
part, so a kernel also wrong for other reasons, a cancellation, still has its layout named):
- it read an input's memory densely from its first element, ignoring the strides;
- it wrote an output densely into a tensor allocated with other strides (`empty_like(x)` of a
  permuted x): the output's memory read densely is what the stage returns for contiguous inputs.
Neither is claimed where the stage returns the same for the inputs made contiguous: then the layout
was not what went wrong.

A stage that refuses such an input with an error naming the layout (`TORCH_CHECK(x.is_contiguous())`,
an alignment check) has not computed anything wrong: `declined` says so, and the case is listed as
refused rather than failed.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import torch

from ..base.errors import is_device_fault
from ..op.contract import Tensors
from ..verdict.faults import cpu_fault
from .trial import Case

# The labels strided_cases gives its cases, and the words a stage's refusal of such an input uses.
_LAYOUT_CASE = re.compile(r"^(non-contiguous|misaligned|permuted), ")
_LAYOUT_WORDS = re.compile(r"contiguous|align|strided|stride", re.I)
# At most this many subsets of the non-contiguous inputs are tried (each is one run of the stage).
_MOST_TRIES = 15

# Whether the stage, run again on these (contiguous) inputs, returns what it returned (outputs, or
# gradients), by the row's own rule.
Agrees = Callable[[tuple[torch.Tensor, ...], Tensors], bool]


def is_layout_case(case: Case) -> bool:
    return bool(_LAYOUT_CASE.match(case.label))


def declined(case: Case, error: Exception) -> str | None:
    """The stage's own message where it refused a layout case's input by its layout (None otherwise).
    A kernel's fault is never a refusal, whatever it says ("misaligned access" of a 16-byte load)."""
    text = str(error).strip()
    if not is_layout_case(case) or not _LAYOUT_WORDS.search(text):
        return None
    if is_device_fault(error) or cpu_fault(error) is not None:
        return None
    first = next((line.strip() for line in text.splitlines() if _LAYOUT_WORDS.search(line)), text)
    return first[:200]


def dense(t: torch.Tensor) -> torch.Tensor:
    """`t`'s memory from its first element read as a contiguous tensor of its shape: what a kernel that
    ignores the strides sees (a stride-2 view's neighbours, a transpose's rows)."""
    if not isinstance(t, torch.Tensor) or t.is_contiguous() or t.dim() == 0:
        return t
    strides, step = [], 1
    for n in reversed(t.shape):
        strides.append(step)
        step *= n
    return torch.as_strided(t.detach(), tuple(t.shape), tuple(reversed(strides)), t.storage_offset())


def _names(indices: tuple[int, ...], input_names: tuple[str, ...]) -> str:
    return " and ".join(input_names[i] for i in indices)


def cause(case: Case, got: Tensors, agrees: Agrees, names: tuple[tuple[str, ...], tuple[str, ...]]) -> str | None:
    """Why a layout case's `got` is wrong, where one likely way of being wrong reproduces it.

    `names` are the spec's input names and the names of what `got` holds (outputs, or grad_NAME).
    Tried in order: inputs read densely (each one alone, then together), outputs written densely, both."""
    input_names, compared = names
    if not is_layout_case(case):
        return None
    strided = tuple(i for i, x in enumerate(case.inputs) if isinstance(x, torch.Tensor) and not x.is_contiguous())
    written = tuple(i for i, g in enumerate(got) if isinstance(g, torch.Tensor) and not g.is_contiguous())
    if not strided and not written:
        return None

    def reproduces(subset: tuple[int, ...], out: bool) -> bool:
        read = tuple((dense(x) if i in subset else x).contiguous() if isinstance(x, torch.Tensor) else x
                     for i, x in enumerate(case.inputs))
        seen = tuple(dense(g) if out and i in written else g for i, g in enumerate(got))
        try:
            return agrees(read, seen)
        except Exception:
            return False  # the stage cannot take those values: no evidence either way

    if reproduces((), False):
        return None  # the same for contiguous inputs: not the layout
    subsets = [s for k in range(1, len(strided) + 1) for s in itertools.combinations(strided, k)][:_MOST_TRIES]
    tries = [(s, False) for s in subsets] + ([((), True)] + [(s, True) for s in subsets] if written else [])
    for subset, out in tries:
        if reproduces(subset, out):
            return " ".join(filter(None, (_read_densely(subset, input_names),
                                          _written_densely(written, got, compared) if out else "")))
    return None


def _read_densely(subset: tuple[int, ...], input_names: tuple[str, ...]) -> str:
    if not subset:
        return ""
    one = len(subset) == 1
    them = "its" if one else "their"
    return (f"{_names(subset, input_names)} read as if contiguous: the stage returns the same for a contiguous "
            f"copy of {them} memory taken densely from {them} first element, so the kernel or its wrapper "
            f"ignores {them} strides. Make {'it' if one else 'them'} contiguous in the wrapper (x = x.contiguous()) "
            "or refuse such inputs (TORCH_CHECK(x.is_contiguous(), ...)), which brrr lists as refused.")


def _written_densely(written: tuple[int, ...], got: Tensors, compared: tuple[str, ...]) -> str:
    outs = " and ".join(compared[i] for i in written)
    strides = tuple(got[written[0]].stride())
    return (f"{outs} written as if contiguous: read densely, {'its' if len(written) == 1 else 'their'} memory "
            f"holds what the stage returns for contiguous inputs, but the tensor has strides {strides} (allocated "
            "like a permuted input: empty_like(x) keeps x's layout). Allocate with torch::empty(x.sizes(), "
            "x.options()), or make x contiguous first.")
