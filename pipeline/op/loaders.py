"""Finding op folders and loading them: the spec, and each stage where it runs, as a `Stage`.

A stage runs in one of a few places (`Where`): the reference on the CPU, the numba stage in
numba's CUDA simulator or on a GPU, the cuda stage on a GPU. `load_stage` knows which loader
serves which (stage, place); a new place for a stage is a `Where` value and one loader.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from .. import stages as _builtin_ops
from ..base.errors import OpLoadError, innermost_line_in
from .extension import module_function_names, torch_wrapper_line
from .spec import STAGE_FILES, Op, OpSpec, Size, StageName

BUILTIN_DIR = Path(_builtin_ops.__file__).resolve().parent


class Where(Enum):
    """Where a stage runs; the value completes "numba stage ..." in progress lines."""

    CPU = "on the CPU"
    SIMULATOR = "in the CUDA simulator"
    GPU = "on the GPU"
    CPU_EXECUTION = "executed on the CPU (cpu_build: fibers for threads, not a GPU)"

    @property
    def device(self) -> str:
        """Where the stage's tensors live."""
        return "cuda" if self is Where.GPU else "cpu"

    @property
    def place(self) -> str:
        """The label of rows from a stage run away from its usual place ("cpu": the cuda stage on the CPU)."""
        return "cpu" if self is Where.CPU_EXECUTION else ""

    def sizes(self, spec: OpSpec, dtype: torch.dtype | None = None, budget: int | None = None) -> tuple[Size, ...]:
        """The random sizes a stage is checked at here: large on a GPU, small where every thread is costly.
        Executed on the CPU, the simulator sizes and the GPU sizes up to `budget` (CPU_SIZE_BUDGET) input
        elements: several blocks ending in a partial one, widths that leave a scalar tail, at a CPU's
        pace. In a 16-bit `dtype`, the cuda stage also runs the spec's accumulator_sizes, on either."""
        long_rows = spec.accumulator_sizes if dtype in (torch.float16, torch.bfloat16) else ()
        if self is Where.GPU:
            return tuple(dict.fromkeys([*spec.gpu_sizes, *long_rows]))
        if self is Where.CPU_EXECUTION:
            limit = CPU_SIZE_BUDGET if budget is None else budget
            affordable = (s for s in spec.gpu_sizes if _input_elements(spec, s) <= limit)
            return tuple(dict.fromkeys([*spec.sim_sizes, *affordable, *long_rows]))
        return spec.sim_sizes

    def version_sizes(self, spec: OpSpec, dtype: torch.dtype | None = None) -> tuple[Size, ...]:
        """The sizes an op's earlier versions (binding.cpp's forward_v1, ...) are checked at: sizes(), but
        executed on the CPU only up to CPU_SECONDARY_BUDGET input elements. Three versions at matmul's two
        largest CPU sizes took 8 of its 22 s; the rest still cross every tile and block edge."""
        return self.sizes(spec, dtype, CPU_SECONDARY_BUDGET)

    def strided_sizes(self, spec: OpSpec) -> tuple[Size, ...]:
        """The sizes the strided layouts (non-contiguous, misaligned, permuted) run at: the last two of
        sizes(). Executed on the CPU, the last two up to CPU_SECONDARY_BUDGET input elements: the five
        strided cases at the two largest affordable sizes cost more than all the random sizes together
        (matmul: 22 of its 42 s), and a stride taken wrongly shows wherever it crosses a block or a
        tile, at mid sizes as at large ones. A GPU runs them at its largest sizes."""
        return self.sizes(spec, budget=CPU_SECONDARY_BUDGET)[-2:]

    def left_out(self, spec: OpSpec, budget: int | None = None) -> tuple[Size, ...]:
        """The GPU sizes that run nowhere here: over the CPU execution's budget (a report names them
        under the row, so no case drops out unsaid)."""
        if self is not Where.CPU_EXECUTION:
            return ()
        limit = CPU_SIZE_BUDGET if budget is None else budget
        return tuple(s for s in spec.gpu_sizes if _input_elements(spec, s) > limit and s not in spec.sim_sizes)


# Input elements up to which a GPU size is also run by the CPU execution of the cuda stage: at this
# size each of the seven built-in ops' kernels takes well under a second a call on one core.
CPU_SIZE_BUDGET = 1 << 18
# ... and up to which the checks beyond a stage's own forward and backward run there (its strided
# layouts, its earlier versions): the five strided cases then cost about one case at the full budget.
CPU_SECONDARY_BUDGET = CPU_SIZE_BUDGET // 4


_elements: dict[tuple[int, Size], int] = {}


def _input_elements(spec: OpSpec, size: Size) -> int:
    """How many elements the inputs at `size` have (made once, on the CPU, to count them)."""
    import torch

    if (id(spec), size) not in _elements:
        inputs = spec.make_inputs(size, torch.float32, torch.device("cpu"), torch.Generator().manual_seed(0))
        _elements[(id(spec), size)] = sum(x.numel() for x in inputs)
    return _elements[(id(spec), size)]


@dataclass(frozen=True)
class Stage:
    op: Op
    name: StageName
    forward: Callable[..., Any]
    backward: Callable[..., Any]
    source: Path
    where: Where
    module: Any = None  # the imported stage file, where there is one
    # First versions binding.cpp registers beside forward (forward_v1, ...), by name; forward only.
    variants: dict[str, Callable[..., Any]] = field(default_factory=dict)
    library: Any = None  # the cuda stage's build it calls into (an Extension, or cuda.isolated's child process)

    @property
    def device(self) -> str:
        return self.where.device


def _functions(op: Op, stage: str, module: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
    found = []
    for fn in ("forward", "backward"):
        f = getattr(module, fn, None)
        if fn == "backward" and not callable(f) and op.spec.forward_only:
            f = no_backward(op)
        if not callable(f):
            raise OpLoadError(
                f"{op.path(stage)} does not define {fn}()",
                hint="every stage defines forward(...) and backward(...) with the same signatures",
            )
        found.append(f)
    return found[0], found[1]


def no_backward(op: Op) -> Callable[..., Any]:
    """The backward of an op the spec says has none: calling it says so."""

    def backward(*_: Any) -> Any:
        raise OpLoadError(f"{op.name} has no backward (spec.py: forward_only={op.spec.forward_only!r})")

    return backward


def load_reference(op: Op) -> Stage:
    module = import_file(op.path("reference"), module_name(op, "reference"))
    fwd, bwd = _functions(op, "reference", module)
    return Stage(op, "reference", fwd, bwd, op.path("reference"), Where.CPU, module)


def load_numba(op: Op, gpu: bool = False) -> Stage:
    """Import the numba stage in the simulator (CPU tensors) or, with gpu=True, on the GPU."""
    from ..sim.numba_env import use_simulator

    use_simulator(not gpu)
    module = import_file(op.path("numba"), module_name(op, "numba" if not gpu else "numba_gpu"))
    fwd, bwd = _functions(op, "numba", module)
    return Stage(op, "numba", fwd, bwd, op.path("numba"), Where.GPU if gpu else Where.SIMULATOR, module)


def load_cuda(op: Op, build: Any, where: Where = Where.GPU) -> Stage:
    """Wrap a built extension (see builder.build_extension) as a stage."""
    return Stage(op, "cuda", build.forward, build.backward, op.path("cuda"), where, variants=build.variants(),
                 library=build)


def load_stage(op: Op, name: StageName, where: Where, build: Any = None) -> Stage:
    """The stage `name` of `op`, loaded to run at `where` (the cuda stage from its `build`)."""
    loaders: dict[tuple[str, Where], Callable[[], Stage]] = {
        ("reference", Where.CPU): lambda: load_reference(op),
        ("numba", Where.SIMULATOR): lambda: load_numba(op, gpu=False),
        ("numba", Where.GPU): lambda: load_numba(op, gpu=True),
        ("cuda", Where.GPU): lambda: load_cuda(op, build, Where.GPU),
        ("cuda", Where.CPU_EXECUTION): lambda: load_cuda(op, build, Where.CPU_EXECUTION),
    }
    if (name, where) not in loaders:
        raise OpLoadError(f"the {name} stage cannot run {where.value} (yet)")
    return loaders[(name, where)]()


# --- op folders -------------------------------------------------------------------------------


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
        where = innermost_line_in(e, path)
        if not where or str(path) in e.message:
            raise
        raise OpLoadError(f"{path}{where}: {e.message}", hint=e.hint) from e
    except Exception as e:
        del sys.modules[module_name]
        where = innermost_line_in(e, path)
        raise OpLoadError(f"{path}{where}: importing it raised {type(e).__name__}: {e}") from e
    return module


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
    missing = [f for role, f in STAGE_FILES.items() if role in REQUIRED and not (folder / f).is_file()]
    if missing:
        raise OpLoadError(
            f"op folder {folder} is missing {', '.join(missing)}",
            hint=f"an op folder holds {', '.join(STAGE_FILES.values())} ('brrr new NAME' writes a skeleton; "
                 "'brrr adopt PATH' makes one around a kernel you have)",
        )
    module = import_file(folder / STAGE_FILES["spec"], f"brrr_ops.{_module_key(folder)}.spec")
    spec = getattr(module, "SPEC", None)
    if not isinstance(spec, OpSpec):
        raise OpLoadError(f"{folder / 'spec.py'} must define SPEC = OpSpec(...), found {type(spec).__name__}")
    from .spec_checks import check_spec

    check_spec(spec, folder / STAGE_FILES["spec"])
    op = Op(spec=spec, folder=folder, files=_kernel_file(folder, spec))
    _check_cuda_layout(op)
    return op


# The files an op folder cannot do without; a missing numba or cuda stage is a row saying so.
REQUIRED = ("spec", "reference")


def _kernel_file(folder: Path, spec: OpSpec) -> dict[str, str]:
    """kernel.cu, or else the folder's only .cu file (an extension brought as its author wrote it), or
    the only one a torch module's spec does not list among its other sources (a module of several)."""
    if (folder / STAGE_FILES["cuda"]).is_file():
        return {}
    others = set(spec.torch_module.sources) if spec.torch_module is not None else set()
    found = sorted(p.name for p in folder.glob("*.cu") if p.is_file() and p.name not in others)
    return {"cuda": found[0]} if len(found) == 1 else {}


def _check_cuda_layout(op: Op) -> None:
    """A .cu holding its own torch wrapper needs the spec to name its functions; one without needs binding.cpp."""
    if not op.has("cuda"):
        return
    text = op.path("cuda").read_text(errors="replace")
    wrapper = torch_wrapper_line(text)
    if wrapper and op.spec.torch_module is None and not op.has("binding"):
        names = module_function_names(text)
        raise OpLoadError(
            f"{op.path('cuda')}:{wrapper}: this file holds its own torch wrapper; spec.py does not say which of "
            f"its functions are the op's forward and backward",
            hint="add to SPEC: torch_module=TorchModule(forward=\"NAME\", backward=\"NAME\") (from brrr_kernels "
                 "import TorchModule)" + (f"; its PYBIND11_MODULE defines {', '.join(names)}" if names else ""),
        )
    if not wrapper and op.spec.torch_module is None and not op.has("binding"):
        raise OpLoadError(
            f"op folder {op.folder} is missing binding.cpp",
            hint="the CUDA C stage is kernel.cu (the kernels and a launcher on raw pointers for each) and binding.cpp "
                 "(forward/backward on at::Tensor calling them, see stages/sigmoid/); or one .cu holding kernels "
                 "and its torch wrapper, named in spec.py by torch_module=TorchModule(...)",
        )


def _module_key(folder: Path) -> str:
    return "".join(c if c.isalnum() else "_" for c in str(folder))


def module_name(op: Op, stage: str) -> str:
    return f"brrr_ops.{_module_key(op.folder)}.{stage}"
