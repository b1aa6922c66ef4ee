"""What an op folder declares in its `spec.py`: OpSpec, and the names it is written with.

An op folder holds five files side by side:

    spec.py          SPEC = OpSpec(...): inputs, sizes, edge cases, tolerances, oracle, dtypes
    reference.py     forward / backward in plain PyTorch (the autograd contract)
    numba_kernel.py  @cuda.jit kernels plus forward / backward launch wrappers on torch tensors
    kernel.cu        CUDA C kernels and their launchers on raw pointers (CUDA headers only)
    binding.cpp      forward / backward on at::Tensor: checks, allocation, dtype dispatch,
                     calls into kernel.cu (compiled once, apart, because torch's headers are slow)

Every stage exposes the same two functions:

    forward(*inputs, *params)            -> outputs + stats   (a tensor or a tuple of tensors)
    backward(*grad_outputs, *saved, *params) -> one gradient per input (a tensor or a tuple)

`saved` names tensors among the inputs, outputs and stats; `stats` are extra forward results
(a layer norm's mean, say) that only backward sees. contract.py calls stages this way; loaders.py
finds op folders and imports their files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch

from ..base.errors import OpLoadError
from .extension import TorchModule
from .names import STAGE_FILES, STAGES, StageName  # noqa: F401  (re-exported: spec.STAGES)
from .tolerances import Rule, Widen, rule_for

Size = int | tuple[int, ...]
Inputs = tuple[torch.Tensor, ...]
# (block index, thread index) as 3-tuples, the way CUDA and the simulator name them.
Place = tuple[tuple[int, int, int], tuple[int, int, int]]

Phase = Literal["forward", "backward"]  # which call of a stage: forward, or backward after it



@dataclass(frozen=True)
class Layout:
    """How a kernel maps output elements to threads: which thread wrote element `index`.

    The runner asks `place`; `locate` maps a thread's unit (an element, or a pack of `pack_bytes`)
    and is what `brrr debug --index` uses for the numba stage. A kernel whose mapping depends on
    more than that (the element size, or a launcher choosing between kernels by shape) subclasses
    Layout and overrides `place`: stages/square, softmax and matmul do.
    """

    locate: Callable[[int, tuple[int, ...]], Place]
    description: str
    pack_bytes: int = 0  # each thread owns one pack of this many bytes, not one element

    def place(self, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        per_thread = max(1, self.pack_bytes // itemsize) if self.pack_bytes else 1
        return self.locate(index // per_thread, shape)

    def place_in(self, output: str, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        """`place` for element `index` of the output named `output`: a layout whose kernels map
        their outputs differently (a forward and a backward of one shape) overrides this one."""
        return self.place(index, shape, itemsize)

    def place_for(self, check: str, output: str, index: int, shape: tuple[int, ...], itemsize: int) -> Place:
        """`place_in` for the check that wrote the output (forward, backward, forward_v2, ...): a
        layout whose first versions (binding.cpp's forward_vN) map threads differently overrides this one."""
        return self.place_in(output, index, shape, itemsize)


def one_per_thread(block: int, pack_bytes: int = 0) -> Layout:
    """1-D grid, one thread per element (or per `pack_bytes` pack) of the flattened output."""

    def locate(index: int, shape: tuple[int, ...]) -> Place:
        return (index // block, 0, 0), (index % block, 0, 0)

    unit = f"{pack_bytes}-byte pack" if pack_bytes else "element"
    return Layout(locate, f"one thread per {unit}, {block} threads a block", pack_bytes)


@dataclass(frozen=True)
class OpSpec:
    name: str
    inputs: tuple[str, ...]
    make_inputs: Callable[[Size, torch.dtype, torch.device, torch.Generator], Inputs]
    sim_sizes: tuple[Size, ...]
    gpu_sizes: tuple[Size, ...]
    gradcheck_size: Size
    outputs: tuple[str, ...] = ("y",)
    stats: tuple[str, ...] = ()
    saved: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    edge_cases: dict[str, Callable[[torch.dtype, torch.device], Inputs]] = field(default_factory=dict)
    oracle: Callable[..., Any] | None = None
    dtypes: dict[str, tuple[torch.dtype, ...]] = field(
        default_factory=lambda: {s: (torch.float32, torch.float64) for s in STAGES}
    )
    # Wider bounds for outputs whose computation cancels, each with its reason (see tolerances.py).
    tolerances: tuple[Widen, ...] = ()
    layouts: dict[str, Layout] = field(default_factory=dict)
    # Elementwise ops only: inputs with more than 2**31 elements, made on `device` with a
    # generator there (for `brrr validate --huge`, which catches 32-bit index arithmetic).
    huge: Callable[[torch.device, torch.Generator], Inputs] | None = None
    # Sizes for `brrr bench` (default: the largest GPU validation size).
    bench_sizes: tuple[Size, ...] = ()
    # Sizes run in float16 and bfloat16 only, wherever the cuda stage runs (the CPU execution too, past
    # its size budget): rows long enough that a thread's own running sum covers 4096 terms or more,
    # where a 16-bit accumulator stops growing (a term under half its unit is lost) far past the bound.
    # The random sizes' rows are too short for one: a tree of short 16-bit sums stays inside it.
    accumulator_sizes: tuple[Size, ...] = ()
    doc: str = ""
    # Why a mutant `brrr mutate` plants survives validation, by its key ("numba_kernel.py:19:8: v >= 0 -> v > 0").
    mutants: dict[str, str] = field(default_factory=dict)
    # Why the op has no backward ("": it has one). Its backward rows then read "n/a" with this reason,
    # and no stage needs a backward().
    forward_only: str = ""
    # Inputs that take no gradient besides the integer and bool ones, which never do (targets,
    # indices, masks): backward's entry for each is ignored, and may be None.
    no_grad: tuple[str, ...] = ()
    # The cuda stage as an extension the author already has (see extension.py): which functions of
    # the one .cu holding kernels and torch wrapper are forward and backward. None: kernel.cu and binding.cpp.
    torch_module: TorchModule | None = None
    # Preprocessor macros every compile of the op's CUDA C and C++ gets, as -DNAME=VALUE (VALUE ""
    # gives -DNAME): what a setup.py's extra_compile_args or a load()'s extra_cuda_cflags define, such
    # as a kernel's compile-time bound (RWKV's -DTmax=1024). `brrr adopt` copies them from there.
    defines: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        known = set(self.inputs) | set(self.outputs) | set(self.stats)
        unknown = [n for n in self.saved if n not in known]
        if unknown:
            raise OpLoadError(f"op {self.name!r}: saved names {unknown} are not inputs, outputs or stats")
        for stage in self.dtypes:
            if stage not in STAGES:
                raise OpLoadError(f"op {self.name!r}: dtypes names unknown stage {stage!r} (stages: {STAGES})")

    def rule(self, output: str, dtype: torch.dtype, stage: str) -> Rule:
        """The comparison rule for one output ("y", "grad_x", ...) of `stage` in `dtype`."""
        return rule_for(output, dtype, stage, self.tolerances)

    def stage_dtypes(self, stage: StageName) -> tuple[torch.dtype, ...]:
        return self.dtypes.get(stage, ())

    @property
    def param_values(self) -> tuple[Any, ...]:
        return tuple(self.params.values())

    def takes_grad(self, name: str, value: Any = None) -> bool:
        """Whether input `name` (made as `value`, where given) has a gradient: floating point, not in no_grad,
        and the op has a backward."""
        floating = value is None or not isinstance(value, torch.Tensor) or value.is_floating_point()
        return floating and name not in self.no_grad and not self.forward_only

    def grad_inputs(self, values: tuple[Any, ...] | None = None) -> tuple[str, ...]:
        """The inputs that take a gradient, in order (judged on `values`, one per input, where given)."""
        made = values if values is not None else (None,) * len(self.inputs)
        return tuple(n for n, v in zip(self.inputs, made) if self.takes_grad(n, v))


@dataclass(frozen=True)
class Op:
    """An op folder on disk and its loaded spec."""

    spec: OpSpec
    folder: Path
    # Files named otherwise than STAGE_FILES, by role: the folder's only .cu when it is not kernel.cu.
    files: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name

    def path(self, stage: str) -> Path:
        return self.folder / self.files.get(stage, STAGE_FILES[stage])

    def has(self, stage: str) -> bool:
        """Whether the folder holds the file of `stage` (an op brought with its own kernel may have no numba stage)."""
        return self.path(stage).is_file()
