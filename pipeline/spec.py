"""The op contract: what an op folder declares in its `spec.py`, and how brrr finds op folders.

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
(a layer norm's mean, say) that only backward sees.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from . import stages as _builtin_ops
from .errors import OpLoadError
from .tolerances import Tolerance, tolerance_for

Size = int | tuple[int, ...]
Inputs = tuple[torch.Tensor, ...]
# (block index, thread index) as 3-tuples, the way CUDA and the simulator name them.
Place = tuple[tuple[int, int, int], tuple[int, int, int]]

STAGES = ("reference", "numba", "cuda")
STAGE_FILES = {"spec": "spec.py", "reference": "reference.py", "numba": "numba_kernel.py", "cuda": "kernel.cu",
               "binding": "binding.cpp"}
BUILTIN_DIR = Path(_builtin_ops.__file__).resolve().parent


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
    tolerances: dict[torch.dtype, Tolerance] = field(default_factory=dict)
    layouts: dict[str, Layout] = field(default_factory=dict)
    # Elementwise ops only: inputs with more than 2**31 elements, made on `device` with a
    # generator there (for `brrr validate --huge`, which catches 32-bit index arithmetic).
    huge: Callable[[torch.device, torch.Generator], Inputs] | None = None
    # Sizes for `brrr bench` (default: the largest GPU validation size).
    bench_sizes: tuple[Size, ...] = ()
    doc: str = ""

    def __post_init__(self) -> None:
        known = set(self.inputs) | set(self.outputs) | set(self.stats)
        unknown = [n for n in self.saved if n not in known]
        if unknown:
            raise OpLoadError(f"op {self.name!r}: saved names {unknown} are not inputs, outputs or stats")
        for stage in self.dtypes:
            if stage not in STAGES:
                raise OpLoadError(f"op {self.name!r}: dtypes names unknown stage {stage!r} (stages: {STAGES})")

    def tolerance(self, dtype: torch.dtype) -> Tolerance:
        return tolerance_for(dtype, self.tolerances)

    def stage_dtypes(self, stage: str) -> tuple[torch.dtype, ...]:
        return self.dtypes.get(stage, ())

    @property
    def param_values(self) -> tuple[Any, ...]:
        return tuple(self.params.values())


@dataclass(frozen=True)
class Op:
    """An op folder on disk and its loaded spec."""

    spec: OpSpec
    folder: Path

    @property
    def name(self) -> str:
        return self.spec.name

    def path(self, stage: str) -> Path:
        return self.folder / STAGE_FILES[stage]


def import_file(path: Path, module_name: str) -> ModuleType:
    """Import one Python file; a syntax or import error becomes an OpLoadError naming the file."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise OpLoadError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        del sys.modules[module_name]
        raise OpLoadError(f"{e.filename}:{e.lineno}: syntax error: {e.msg}", hint=(e.text or "").rstrip()) from e
    except OpLoadError as e:  # OpSpec's own checks, while spec.py builds SPEC: point at the line
        del sys.modules[module_name]
        where = _innermost_line_in(e, path)
        if not where or str(path) in e.message:
            raise
        raise OpLoadError(f"{path}{where}: {e.message}", hint=e.hint) from e
    except Exception as e:
        del sys.modules[module_name]
        where = _innermost_line_in(e, path)
        raise OpLoadError(f"{path}{where}: importing it raised {type(e).__name__}: {e}") from e
    return module


def _innermost_line_in(error: BaseException, path: Path) -> str:
    tb = error.__traceback__
    line = ""
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path.resolve():
            line = f":{tb.tb_lineno}"
        tb = tb.tb_next
    return line


def resolve_op_folder(name_or_path: str) -> Path:
    candidate = Path(name_or_path)
    if candidate.is_dir():
        return candidate.resolve()
    builtin = BUILTIN_DIR / name_or_path
    if "/" not in name_or_path and builtin.is_dir():
        return builtin
    known = ", ".join(builtin_op_names()) or "none"
    raise OpLoadError(f"no op named {name_or_path!r}: not a folder, and not a built-in op (built-in: {known})")


def builtin_op_names() -> list[str]:
    if not BUILTIN_DIR.is_dir():
        return []
    return sorted(p.name for p in BUILTIN_DIR.iterdir() if (p / STAGE_FILES["spec"]).is_file())


def load_op(name_or_path: str) -> Op:
    folder = resolve_op_folder(name_or_path)
    missing = [f for f in STAGE_FILES.values() if not (folder / f).is_file()]
    if missing == [STAGE_FILES["binding"]]:
        raise OpLoadError(
            f"op folder {folder} is missing binding.cpp",
            hint="the CUDA C stage is two files: kernel.cu holds the kernels and a launcher on raw pointers "
                 "for each, binding.cpp holds forward/backward on at::Tensor calling them (see stages/sigmoid/)",
        )
    if missing:
        raise OpLoadError(
            f"op folder {folder} is missing {', '.join(missing)}",
            hint=f"an op folder holds {', '.join(STAGE_FILES.values())} ('brrr new NAME' writes a skeleton)",
        )
    module = import_file(folder / STAGE_FILES["spec"], f"brrr_ops.{_module_key(folder)}.spec")
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, OpSpec):
        raise OpLoadError(f"{folder / 'spec.py'} must define SPEC = OpSpec(...), found {type(spec).__name__}")
    from .spec_checks import check_spec

    check_spec(spec, folder / STAGE_FILES["spec"])
    return Op(spec=spec, folder=folder)


def _module_key(folder: Path) -> str:
    return "".join(c if c.isalnum() else "_" for c in str(folder))


def module_name(op: Op, stage: str) -> str:
    return f"brrr_ops.{_module_key(op.folder)}.{stage}"


def as_tuple(value: torch.Tensor | Sequence[torch.Tensor | None] | None) -> tuple[Any, ...]:
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,)
