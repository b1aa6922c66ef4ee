"""`brrr translate OP [--out DIR]`: numba_kernel.py, mechanically, as a first CUDA C stage.

kernel.cu gets each @cuda.jit kernel and device function (translate_device.py) and a launcher per
kernel; binding.cpp gets forward and backward on at::Tensor (translate_host.py), with the checks,
allocations and dtype dispatch the spec implies. The result is version 1 of the CUDA C stage: the
readable one every faster version is checked against. Anything outside the subset stops with a
message at numba_kernel.py:line; a construct translated only in part leaves a TODO there and the
files carry the unfinished mark, so validation reports the stage as unfinished.
"""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..base.assets import TEMPLATES
from ..base.errors import EXIT_OK, RefusedError
from ..base.files import write_atomic
from ..op.contract import saved_tensors
from ..op.names import STAGE_FILES, UNFINISHED_MARK
from ..op.spec import Op
from .blocks import BlockChoice, choose_block
from .common import C_DTYPE, TranslateError, fail
from .device import HELPERS, Device
from .host import Host, HostEmitter, HTuple, HType, Tensor

# The line `brrr new` writes into both CUDA C templates: a file that still has it was never edited.
TEMPLATE_LINE = f"{UNFINISHED_MARK} (delete this line once kernel.cu and binding.cpp are written)"
HALF = (torch.float16, torch.bfloat16)

HOST_HELPERS = {
    "launch_dims": """\
// numba's launch geometry (an int or a tuple of up to three) as a dim3, checked rather than truncated.
static dim3 launch_dims(int64_t x, int64_t y = 1, int64_t z = 1) {
    TORCH_CHECK(x >= 1 && y >= 1 && z >= 1 && x <= INT32_MAX && y <= 65535 && z <= 65535, "launch dimensions (", x,
                ", ", y, ", ", z, ") are outside CUDA's limits");
    return dim3(static_cast<unsigned int>(x), static_cast<unsigned int>(y), static_cast<unsigned int>(z));
}

template <size_t N>
static dim3 launch_dims(const std::array<int64_t, N>& d) {
    static_assert(N >= 1 && N <= 3, "a launch geometry has one to three dimensions");
    if constexpr (N == 1) return launch_dims(d[0]);
    else if constexpr (N == 2) return launch_dims(d[0], d[1]);
    else return launch_dims(d[0], d[1], d[2]);
}""",
    "array_arg": """\
// A tensor passed where a kernel takes an n-D array. numba indexes any strides; the translation
// passes the strides of 2-D and higher arrays and indexes 1-D ones directly, so a 1-D one must be dense.
// ndim -1: the kernel never indexes it (a parameter it does not use), so any shape will do.
template <typename scalar_t>
static typename brrr::Device<scalar_t>::type* array_arg(const at::Tensor& t, int64_t ndim, const char* what) {
    TORCH_CHECK(ndim < 0 || t.dim() == ndim, what, " must have ", ndim, " dimension(s) for the kernel, got shape ",
                t.sizes());
    TORCH_CHECK(ndim != 1 || t.stride(0) == 1 || t.numel() <= 1, what, " must be dense for the kernel, got stride ",
                t.stride(0));
    return brrr::data<scalar_t>(t);
}""",
    "cdiv": "static int64_t cdiv(int64_t a, int64_t b) { return py_floordiv(a + b - 1, b); }",
}


@dataclass(frozen=True)
class Translation:
    kernel_cu: str
    binding_cpp: str
    todos: tuple[str, ...]
    block: BlockChoice = BlockChoice()  # spec.py's CUDA block taken, or where it must agree


def dispatch_dtypes(op: Op) -> tuple[torch.dtype, ...]:
    """What binding.cpp dispatches to: the spec's cuda dtypes, widened to float and double (AT_DISPATCH's
    floating types) when there are several; kernel.cu instantiates exactly these."""
    wanted = op.spec.stage_dtypes("cuda")
    if not wanted:
        raise TranslateError(f"op {op.name!r} lists no cuda dtypes in its spec")
    unknown = [d for d in wanted if d not in C_DTYPE]
    if unknown:
        raise TranslateError(f"op {op.name!r}: translate handles float32, float64, float16 and bfloat16, not {unknown}")
    if len(wanted) == 1:
        return wanted
    return (torch.float32, torch.float64) + tuple(d for d in HALF if d in wanted)


def translate(op: Op) -> Translation:
    from ..op.loaders import load_numba

    path = op.path("numba")
    source = path.read_text()
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise TranslateError(f"{path}:{e.lineno}: syntax error: {e.msg}") from e
    if (todo := _not_written(tree)) is not None:
        name, line = todo
        raise TranslateError(f"{path}:{line}: {name}() still raises NotImplementedError, as brrr new's template does: "
                             "there is no numba stage to translate yet; write it and validate it (brrr validate "
                             "OP --stage numba), then translate (kernel.cu and binding.cpp are left as they are)")
    module = load_numba(op, gpu=False).module
    from .common import Dtypes

    dtypes = Dtypes(dispatch_dtypes(op))
    dev = Device(path, source, tree, module, dtypes)
    host = Host(path, source, module, op.spec, dev, dtypes)
    spec = op.spec
    for name in ("forward", "backward"):
        if name not in host.defs:
            raise fail(path, 1, f"numba_kernel.py defines no {name}(); translate reads forward and backward")
    forward = host.defs["forward"]
    fwd_types: list[HType] = [*_input_types(spec), *(_param_type(v) for v in spec.params.values())]
    fwd = _entry(host, forward, fwd_types, len(spec.outputs) + len(spec.stats))
    returned = _returned(fwd[1], len(spec.outputs) + len(spec.stats))
    saved = saved_tensors(spec, fwd_types, returned)  # the types backward's saved arguments have
    bwd_types: list[HType] = [Tensor("T") for _ in spec.outputs] + list(saved) + \
                             [_param_type(v) for v in spec.params.values()]
    bwd = _entry(host, host.defs["backward"], bwd_types, len(spec.inputs), stats=set(spec.stats))
    todos = tuple(dev.todos)
    block = choose_block(op, dev, host)
    kernel_cu = _kernel_cu(op, dev, host, todos + block.comment)
    return Translation(kernel_cu, _binding_cpp(op, host, [fwd[0], bwd[0]], todos + block.comment), todos, block)


def _input_types(spec: Any) -> list[HType]:
    """Each input's type as the spec makes it: the dispatched T for a floating-point input, and its own
    dtype for an integer or bool one (class targets, indices), which stays so through binding.cpp's checks."""
    made = spec.make_inputs(spec.sim_sizes[0], torch.float32, torch.device("cpu"), torch.Generator().manual_seed(0))
    return [Tensor("T") if x.is_floating_point() else Tensor(x.dtype) for x in made]


def _param_type(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    raise TranslateError(f"a spec param of type {type(value).__name__}: translate passes ints, floats and bools")


def _returned(t: HType | None, count: int) -> tuple[HType, ...]:
    if count == 1:
        return (t,) if t is not None else (Tensor("T"),)
    if isinstance(t, HTuple):
        return t.items
    return tuple(Tensor("T") for _ in range(count))


def _entry(host: Host, node: ast.FunctionDef, types: list[HType], results: int,
           stats: set[str] | None = None) -> tuple[list[str], HType | None]:
    """forward or backward: the spec's signature, its checks, then the translated body."""
    path = host.path
    names = [a.arg for a in node.args.args]
    if len(names) != len(types) or node.args.vararg or node.args.kwonlyargs:
        raise fail(path, node, f"{node.name}() takes {len(names)} arguments; the spec's contract gives it {len(types)}")
    params = dict(zip(names, types))
    tensors = [n for n, t in params.items() if isinstance(t, Tensor)]
    stat_names = set()
    if stats:  # backward's saved stats sit after the grads and saved tensors, in the spec's order
        stat_names = {n for n, t in params.items() if isinstance(t, Tensor) and t.dtype != "T"}
    prologue = []
    if tensors:
        first = tensors[0]
        prologue.append(f'brrr::check_input({first}, "{first}");')
        for n in tensors[1:]:
            dtype = getattr(params[n], "dtype", "T")
            if dtype != "T" and not dtype.is_floating_point:  # an integer or bool input: its own dtype, no float check
                prologue.append(f'TORCH_CHECK({n}.scalar_type() == at::{AT_SCALAR[dtype]}, "{n} must be {dtype}, got ", '
                                f'{n}.scalar_type());')
                prologue.append(f'TORCH_CHECK({n}.device() == {first}.device(), "{n} and {first} must be on one '
                                f'device: ", {n}.device(), " vs ", {first}.device());')
            elif n in stat_names or params[n] != params[first]:
                prologue.append(f'brrr::check_input({n}, "{n}");')
                prologue.append(f'TORCH_CHECK({n}.device() == {first}.device(), "{n} and {first} must be on one '
                                f'device: ", {n}.device(), " vs ", {first}.device());')
            else:
                prologue.append(f'brrr::check_compatible({first}, {n}, "{first}", "{n}");')
        prologue.append(f"BRRR_DEVICE_GUARD({first});")
    emitter = HostEmitter(host, node, params)
    ret = emitter.run(prologue)
    c_ret = "at::Tensor" if results == 1 else f"std::tuple<{', '.join(['at::Tensor'] * results)}>"
    c_params = ", ".join(f"{host.spell(t)} {n}" for n, t in params.items())
    lines = [f"// numba_kernel.py:{node.lineno}", f"{c_ret} {node.name}({c_params}) {{"] + emitter.w.lines + ["}"]
    return lines, ret


# The at::ScalarType of each fixed non-floating dtype an input may have.
AT_SCALAR = {torch.int64: "kLong", torch.int32: "kInt", torch.int16: "kShort", torch.int8: "kChar",
             torch.uint8: "kByte", torch.bool: "kBool"}


def _header(op: Op, what: str) -> list[str]:
    return [f"// {op.name}, CUDA C stage, {what}: translated from numba_kernel.py by `brrr translate`, line by line",
            "// (same names and order; 64-bit indices). A first version to validate and then tune; `brrr validate`",
            "// checks it against the numba stage and the reference."]


def _not_written(tree: ast.Module) -> tuple[str, int] | None:
    """forward or backward still a stub (its body raises NotImplementedError), with the raise's line."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in ("forward", "backward"):
            for statement in node.body:
                raised = statement.exc if isinstance(statement, ast.Raise) else None
                called = raised.func if isinstance(raised, ast.Call) else raised
                if isinstance(called, ast.Name) and called.id == "NotImplementedError":
                    return node.name, statement.lineno
    return None


def _unfinished(todos: tuple[str, ...]) -> list[str]:
    """The unfinished mark for the TODOs; a line that is already a comment (where the block must agree) as it is."""
    notes = [t for t in todos if t.startswith("//")]
    todos = tuple(t for t in todos if not t.startswith("//"))
    out = ([""] + notes) if notes else []
    if not todos:
        return out
    return out + ["", f"// {UNFINISHED_MARK}: the translation left {len(todos)} TODO(s) ({'; '.join(todos)}); "
                      "finish them,", "// then delete this line."]


def _kernel_cu(op: Op, dev: Device, host: Host, todos: tuple[str, ...]) -> str:
    out = _header(op, "device side") + ['#include "brrr_kernel.cuh"', "", "#include <cmath>"] + _unfinished(todos)
    if dev.constants:
        out += [""] + list(dev.constants.values())
    for name in ("py_floordiv", "py_mod", "py_max", "py_min"):
        if name in dev.helpers:
            out += ["", HELPERS[name]]
    order = sorted(dev.order, key=lambda k: dev.functions[k[0]].node.lineno)
    for key in order:
        out += [""] + dev.instances[key].lines
    launchers = list(host.launchers.values())
    if launchers:
        out += ["", "// The launchers binding.cpp calls, one per kernel: numba's kernel[grid, block](...)."]
    for ln in launchers:
        params = ", ".join(ln.params + ["cudaStream_t stream"])
        names = [p.rsplit(" ", 1)[1] for p in ln.params[2:]]
        targs = "<T>" if ln.templated and dev.dtypes.templated else ""
        out += (["template <typename T>"] if ln.templated and dev.dtypes.templated else []) + [
            f"void {ln.name}({params}) {{",
            f"    {ln.kernel}{targs}<<<grid, block, 0, stream>>>({', '.join(names)});", "}"]
    templated = [ln for ln in launchers if ln.templated and dev.dtypes.templated]
    if templated:
        out += ["", "// The dtypes binding.cpp dispatches to."]
        for ln in templated:
            for d in dev.dtypes.dtypes:
                params = re.sub(r"\bT\b", C_DTYPE[d], ", ".join(ln.params + ["cudaStream_t stream"]))
                out.append(f"template void {ln.name}<{C_DTYPE[d]}>({params});")
    return "\n".join(out) + "\n"


def _binding_cpp(op: Op, host: Host, entries: list[list[str]], todos: tuple[str, ...]) -> str:
    includes = sorted({"<array>", "<cstdint>", "<tuple>", "<climits>"} | {i for i in host.includes if not i.startswith("<ATen")})
    out = _header(op, "host side") + [f"#include {i}" for i in includes] + ["", '#include "brrr.cuh"']
    out += [f"#include {i}" for i in sorted(i for i in host.includes if i.startswith("<ATen"))]
    out += _unfinished(todos)
    if host.launchers:
        out += ["", "// Defined in kernel.cu."]
        for ln in host.launchers.values():
            params = ", ".join(ln.params + ["cudaStream_t stream"])
            prefix = "template <typename T> " if ln.templated and host.dtypes.templated else ""
            out.append(f"{prefix}void {ln.name}({params});")
    if host.constants:
        out += [""] + list(host.constants.values())
    for name in ("py_floordiv", "py_mod"):
        if name in host.helpers:
            out += ["", HELPERS[name].replace("__host__ __device__ inline", "static")]
    for name in ("cdiv", "launch_dims", "array_arg"):
        if name in host.helpers:
            out += ["", HOST_HELPERS[name]]
    for fn in sorted(host.functions.values(), key=lambda f: f.lineno):
        out += [""] + fn.lines
    for lines in entries:
        out += [""] + lines
    out += ["", "BRRR_BIND(m) {", '    m.def("forward", &forward);', '    m.def("backward", &backward);', "}"]
    return "\n".join(out) + "\n"


def template_marks() -> set[str]:
    """The `brrr: unfinished` lines `brrr new`'s CUDA C templates (every --kind) carry."""
    marks = set()
    for template in TEMPLATES.rglob("*.tmpl"):
        if template.name in ("kernel.cu.tmpl", "binding.cpp.tmpl"):
            marks |= {line.strip() for line in template.read_text().splitlines() if UNFINISHED_MARK in line}
    return marks


def is_template(path: Path, op: Op) -> bool:
    """True for a file `brrr new` wrote and nobody has finished since: it still has a template's
    unfinished line, or it is exactly a template that has none (--kind rowwise's binding.cpp)."""
    text = path.read_text()
    if any(mark in text for mark in template_marks()):
        return True
    for template in TEMPLATES.rglob(f"{path.name}.tmpl"):
        body = template.read_text()
        if "${" in body.replace("${name}", "") or "${" not in body:
            continue  # only templates that depend on the op's name alone can be rendered here
        if text == body.replace("${name}", op.name):
            return True
    return False


def write(op: Op, result: Translation, out: Path | None) -> list[Path]:
    """Write kernel.cu and binding.cpp into `out`, or into the op's folder while both are still templates.
    Never overwrites anything else: refuses (exit 1) and says why."""
    folder = out if out is not None else op.folder
    targets = [folder / STAGE_FILES["cuda"], folder / STAGE_FILES["binding"]]
    for target in targets:
        if not target.exists():
            continue
        if out is not None:
            raise RefusedError(f"{target} exists; brrr translate never overwrites: choose an --out folder without "
                               "kernel.cu and binding.cpp")
        if not is_template(target, op):
            raise RefusedError(f"{target} is not a `brrr new` template any more (someone wrote it); brrr translate "
                               f"never overwrites: write the translation elsewhere with --out DIR and compare")
    folder.mkdir(parents=True, exist_ok=True)
    for target, text in zip(targets, (result.kernel_cu, result.binding_cpp)):
        write_atomic(target, text)
    return targets


def main(args: argparse.Namespace) -> int:
    """brrr translate: write the two files and say what to run next."""
    from ..op.loaders import load_op
    from ..sim.numba_env import use_simulator

    use_simulator(True)
    op = load_op(args.op)
    result = translate(op)
    written = write(op, result, args.out)
    print(f"wrote {' and '.join(str(p) for p in written)}")
    if result.todos:
        print(f"{len(result.todos)} TODO(s) left, so validation reports the cuda stage unfinished: " + "; ".join(result.todos))
    if result.block.message is not None:
        print(result.block.message)
    print(f"next: {next_command(op, written[0].parent)}")
    return EXIT_OK


def next_command(op: Op, folder: Path) -> str:
    """The command that validates the translation where it was written: a folder of --out that lacks the
    op's other files gets them copied first, or `brrr validate` there would find no op."""
    shown = shlex.quote(str(folder) if folder.is_absolute() or str(folder).startswith(".") else f"./{folder}")
    validate = f"brrr validate {shown} --stage cuda"
    missing = [op.folder / name for name in ("spec.py", "reference.py", "numba_kernel.py")
               if (op.folder / name).is_file() and not (folder / name).exists()]
    if not missing:
        return validate
    return f"cp {' '.join(shlex.quote(str(p)) for p in missing)} {shown}/ && {validate}"
