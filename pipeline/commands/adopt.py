"""`brrr adopt PATH`: an extension its author already has, made into an op folder brrr validates.

PATH is one `.cu` (kernels, and perhaps the torch wrapper and PYBIND11_MODULE), a `setup.py`, a
Python file calling `torch.utils.cpp_extension.load(...)` or `load_inline(...)` (its strings written
out as the main.cpp and cuda.cu torch would build), or a folder holding one of those. The
sources it names are copied into the op folder as they are (never edited, never overwriting a
different file), with the headers they include by quotes; spec.py and reference.py are written
as stubs that name what is left to write. The kernel code stays the author's: what brrr then finds
in it is said against its own lines.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..base.errors import EXIT_OK, UsageError
from ..base.files import shown, write_atomic
from ..cuda.tokens import kernel_names, masked
from ..op.extension import torch_wrapper_line
from .adopt_forward import ADAPTER, NO_INPUT, Forward, Function
from .bindings import BOUND, DEFINED, macro_bindings, module_blocks
from .conditionals import selecting_macros
from .inline_sources import inline_modules
from .script_flags import ScriptFlags, literal_text, module_constants, run_from, script_flags

SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")
_QUOTED_INCLUDE = re.compile(r'#[ \t]*include[ \t]*"([^"]+)"')


@dataclass(frozen=True)
class Project:
    """What adopt found: the sources (the one .cu first), the Python names the module binds (name ->
    C++ function), the kernels, and the host functions of a .cu with no wrapper."""

    sources: tuple[Path, ...]
    bound: dict[str, Function | None]
    kernels: tuple[str, ...]
    wrapper: bool
    found_by: str
    # Macro calls in a module block that bind nothing brrr could read, even through the preprocessor
    # ("FILE:LINE: NAME(...)": a macro from a header outside the project).
    unread: tuple[str, ...] = ()
    # The macros the setup.py or load() script defines for the extension, and its flags not carried.
    flags: ScriptFlags = field(default_factory=ScriptFlags)
    # False: the sources bind nothing themselves, and `bound` holds the functions that take tensors.
    bound_here: bool = True
    # Macros the torch wrappers' #ifdef branches need ("NAME": "#ifndef NAME (file.cu:LINE)").
    selecting: dict[str, str] = field(default_factory=dict)


# --- finding the sources -------------------------------------------------------------------------


def _strings(node: ast.AST, constants: dict[str, object]) -> list[str]:
    """The names a list of sources holds: strings, and f-strings of the script's constants (f"cuda/wkv7.cu")."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return [t for e in node.elts if (t := literal_text(e, constants)) is not None]
    return []


def python_sources(py: Path) -> list[Path]:
    """The files a setup.py (CUDAExtension(name, [sources])) or a load(name, sources=[...]) names."""
    try:
        tree = ast.parse(py.read_text(errors="replace"), str(py))
    except SyntaxError as e:
        raise UsageError(f"{shown(py)}:{e.lineno}: not valid Python ({e.msg})") from e
    names: list[str] = []
    constants = module_constants(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        for kw in node.keywords:
            if kw.arg == "sources":
                names += _strings(kw.value, constants)
        if callee in ("CUDAExtension", "CppExtension", "load") and len(node.args) >= 2:
            names += _strings(node.args[1], constants)
    names = list(dict.fromkeys(names))
    if not names:
        return []
    # load() resolves a relative name against the working directory: the first folder holding all of them.
    for base in run_from(py):
        found = [base / n for n in names]
        if all(f.is_file() for f in found):
            return found
    missing = [shown(py.parent / n) for n in names if not (py.parent / n).is_file()]
    raise UsageError(f"{shown(py)} names sources that are not there: {', '.join(missing)}",
                     hint="looked beside it, in each folder above it and in the current folder; "
                          "run brrr adopt on the .cu itself, or on the folder holding the sources")


# Folders of a project that hold no sources of its extension: builds, environments, tests, VCS.
_NOT_SOURCES = {"build", "dist", "tests", "test", "venv", ".venv", "env", "__pycache__", "node_modules",
                "site-packages", "third_party", "3rdparty", "external", "examples", "benchmarks"}


def tree_sources(root: Path) -> list[Path]:
    """The C++/CUDA sources in and below `root`, outside build, test and environment folders: what a
    setup.py collects with glob() (PyTorch's extension-cpp template does), which brrr does not evaluate."""
    found = []
    for p in sorted(root.rglob("*")):
        parts = p.relative_to(root).parts[:-1]
        if p.suffix in SOURCE_SUFFIXES and p.is_file() and not any(
                d in _NOT_SOURCES or d.startswith(".") or d.endswith(".egg-info") for d in parts):
            found.append(p)
    return found


def _inline(py: Path, name: str | None, staging: Path) -> tuple[list[Path], str] | None:
    """A load_inline script's sources, written into `staging` as torch writes them (None: it has no
    load_inline call). Of several calls, --name picks one by its module name."""
    modules = inline_modules(py)
    if not modules:
        return None
    picked = [m for m in modules if m.name == name] if len(modules) > 1 else modules
    if len(picked) != 1:
        listed = ", ".join(f"{m.name} (line {m.line})" for m in modules)
        raise UsageError(f"{shown(py)} builds {len(modules)} extensions with load_inline: {listed}",
                         hint="pick one with --name NAME, NAME its load_inline name")
    if picked[0].cuda is None:
        raise UsageError(f"{shown(py)}:{picked[0].line}: load_inline(name={picked[0].name!r}) has no cuda_sources: "
                         "a C++-only extension", hint="brrr's cuda stage is CUDA C: kernels in cuda_sources")
    return picked[0].write(staging), f"load_inline(name={picked[0].name!r}) at {shown(py)}:{picked[0].line}"


def find_sources(path: Path, name: str | None, staging: Path) -> tuple[list[Path], str, Path | None]:
    """The extension's source files, how they were found (for the summary), and the setup.py or
    load() script that named them, if one did. A load_inline script's sources are written into
    `staging` first."""
    if not path.exists():
        raise UsageError(f"{path}: no such file or folder")
    if path.is_file() and path.suffix in SOURCE_SUFFIXES:
        return [path], f"{shown(path)}", None
    if path.is_file() and path.suffix == ".py":
        if listed := python_sources(path):
            return listed, f"the sources {shown(path)} names", path
        if inline := _inline(path, name, staging):
            return inline[0], inline[1], path
        if path.name == "setup.py" and (found := tree_sources(path.parent)):
            return found, f"the sources under {shown(path.parent)} ({shown(path)} names none literally)", path
        raise UsageError(f"{shown(path)}: names no source file brrr can read (no CUDAExtension/CppExtension/load() "
                         "with a list of file names, no load_inline)",
                         hint="give the .cu itself, or the folder holding the extension's sources")
    if path.is_dir():
        scripts = [path / "setup.py", *sorted(p for p in path.glob("*.py") if p.name != "setup.py")]
        for py in scripts:
            if py.is_file() and (listed := python_sources(py)):
                return listed, f"the sources {shown(py)} names", py
        files = sorted(p for p in path.iterdir() if p.suffix in SOURCE_SUFFIXES and p.is_file())
        if files:
            return files, f"the sources in {shown(path)}", None
        if found := tree_sources(path):
            return found, f"the sources under {shown(path)}", None
        for py in scripts:
            if py.is_file() and (inline := _inline(py, name, staging)):
                return inline[0], inline[1], py
    raise UsageError(f"{path}: no extension found",
                     hint="give a .cu file, a setup.py, a Python file calling torch.utils.cpp_extension.load() "
                          "or load_inline(), or a folder holding one of those")


# --- reading them ----------------------------------------------------------------------------------


def function_signature(text: str, name: str) -> Function | None:
    """The parameters of the first definition of C++ function `name` in `text` (None: not defined there)."""
    mask = masked(text)
    bare = name.split("::")[-1]
    for m in re.finditer(rf"(?<![\w.]){re.escape(bare)}\s*\(", mask):
        before = mask[max(0, m.start() - 120):m.start()].rstrip()
        if not before or not (before[-1].isalnum() or before[-1] in "_*&>") or before.endswith(("return", "<<<")):
            continue
        depth, k = 0, m.end() - 1
        for k in range(m.end() - 1, len(mask)):
            depth += (mask[k] in "(<") - (mask[k] in ")>")
            if depth == 0:
                break
        if not mask[k + 1:k + 200].lstrip().startswith(("{", "const", "noexcept")):
            continue  # a declaration or a call, not the definition
        params = []
        # The masked text: a comment beside a parameter (`torch::Tensor& out,  // [tokens, hidden]`) is
        # not part of the next one's type.
        for part in _split_params(mask[m.end():k]):
            pm = re.match(r"^(?P<type>.*?)\b(?P<name>[A-Za-z_]\w*)\s*(=.*)?$", part.strip(), re.S)
            if pm and pm.group("type").strip():
                params.append((" ".join(pm.group("type").split()), pm.group("name")))
        returned = re.search(r"([\w:]+(?:\s*<[^;{}()]*>)?)[\s*&]*$", before)
        return Function(name, tuple(params), returned.group(1) if returned else "")
    return None


def _split_params(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for c in text:
        depth += (c in "(<[") - (c in ")>]")
        if c == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += c
    return [p for p in [*parts, current] if p.strip() and p.strip() != "void"]


def analyse(sources: list[Path], found_by: str) -> Project:
    cus = [s for s in sources if s.suffix == ".cu"]
    if not cus:
        raise UsageError(f"{found_by}: no .cu file among {', '.join(map(shown, sources))}",
                         hint="brrr's cuda stage is CUDA C: a .cu holding the kernels")
    wrapped = [s for s in sources if torch_wrapper_line(s.read_text(errors="replace"))]
    if len(cus) > 1 and not wrapped:
        raise UsageError(f"{found_by}: {len(cus)} .cu files ({', '.join(map(shown, cus))}) and no torch wrapper; "
                         "an op folder in brrr's layout holds one kernel.cu",
                         hint="adopt each .cu (one op each), or join the kernels of one op into one .cu")
    # A module of several: the .cu holding a torch wrapper is the op's cuda stage, the others its sources.
    main = next((s for s in cus if s in wrapped), cus[0])
    ordered = (main, *(s for s in sources if s != main))
    texts = {s: s.read_text(errors="replace") for s in ordered}
    bound: dict[str, Function | None] = {}
    unread: list[str] = []
    for source, text in texts.items():
        through_macros = macro_bindings(source, local_headers(source))
        unread += through_macros.unread
        written = [(m.group(1), m.group(2), m.group(3)) for m in in_code(BOUND, text)]
        for kind, python_name, cxx in written + through_macros.bound:
            # A registered impl is no module function: the spec names the C++ function, which brrr binds.
            python_name = python_name if kind == "def" else cxx.split("::")[-1]
            bound[python_name] = next((f for t in texts.values() if (f := function_signature(t, cxx))), None)
        # m.def("name", [](...) {...}): bound, its signature unknown
        for python_name in [m.group(1) for m in in_code(DEFINED, text)] + through_macros.lambdas:
            bound.setdefault(python_name, None)
    wrapper = any(torch_wrapper_line(t) for t in texts.values())
    unbound = not bound and not unread and not any(module_blocks(t) for t in texts.values())
    if wrapper and unbound:
        # Wrappers bound elsewhere (vLLM binds its csrc/*.cu in torch_bindings.cpp): the functions that
        # take tensors, which brrr binds by name itself.
        bound = {f.name: f for t in texts.values() for f in tensor_functions(t)}
    return Project(ordered, bound, tuple(sorted({k for cu in cus for k in kernel_names(texts[cu])})),
                   wrapper, found_by, tuple(unread), bound_here=not (wrapper and unbound),
                   selecting=_selecting(texts, set(bound)))


def _selecting(texts: dict[Path, str], bound: set[str]) -> dict[str, str]:
    """The macros to define so that the torch wrappers compile: those their #ifdef / #ifndef branches
    need (a .cu that is a test program unless its build passes -DNO_..._BIN)."""
    found: dict[str, str] = {}
    for source, text in texts.items():
        lines = [torch_wrapper_line(text)] + [text.count("\n", 0, m.start()) + 1 for m in _DEFINITION.finditer(masked(text))
                                              if m.group(1) in bound]
        for line in filter(None, lines):
            for s in selecting_macros(text, line):
                found.setdefault(s.macro, f"{s.directive} ({source.name}:{s.line})")
    return found


def in_code(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """Matches of `pattern` (which starts with code: `.def(`, `#include`) outside comments; the
    string literals they hold are read from `text` itself."""
    mask = masked(text)
    return [m for m in pattern.finditer(text) if mask[m.start():m.end()].strip()[:1] in (".", "#")]


# A function definition's start: its return type (qualified, templated, a pointer or reference) and name.
_DEFINITION = re.compile(r"^[ \t]*(?:template\s*<[^>]*>\s*)?(?:(?:static|inline|extern)\s+)*"
                         r"[\w:]+(?:\s*<[^;{}()]*>)?[\s*&]+(\w+)\s*\(", re.M)


def _on_device(mask: str, definition: re.Match[str]) -> bool:
    """Whether the function defined at `definition` is a kernel or device function: its qualifiers, on
    its line or the lines before it, back to the previous statement (a kernel just above, `__global__
    void k() {}`, is not this function's)."""
    before = re.split(r"[;{}]", mask[max(0, definition.start() - 60):definition.start()])[-1]
    return re.search(r"__global__|__device__", before + mask[definition.start():definition.end()]) is not None


def tensor_functions(text: str) -> list[Function]:
    """The host functions `text` defines that take a tensor: a wrapper's candidates for forward."""
    mask = masked(text)
    found: dict[str, Function] = {}
    for m in _DEFINITION.finditer(mask):
        if _on_device(mask, m) or m.group(1) in found:
            continue
        if (f := function_signature(text, m.group(1))) is not None and f.tensors():
            found[f.name] = f
    return list(found.values())


def host_functions(text: str) -> list[Function]:
    """The functions a kernels-only .cu defines for the host (its launchers), by their signatures."""
    mask = masked(text)
    out = []
    for m in re.finditer(r"^[ \t]*(?:template\s*<[^>]*>\s*)?(?:static\s+|inline\s+)*void\s+(\w+)\s*\(", mask, re.M):
        if _on_device(mask, m) or m.group(1) == "main":
            continue
        if (f := function_signature(text, m.group(1))) is not None:
            out.append(f)
    return out


# --- writing the op folder --------------------------------------------------------------------------


def _copy(source: Path, target: Path, written: list[str]) -> None:
    """Copy `source` to `target` unless the same file is there; a different one there is refused."""
    if target.exists():
        if target.read_bytes() == source.read_bytes():
            return
        raise UsageError(f"{shown(target)} exists and differs from {shown(source)}; brrr adopt never overwrites",
                         hint="adopt into another folder (--into DIR), or move the file away")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)
    written.append(shown(target))


def local_headers(source: Path, seen: set[Path] | None = None, at: Path | None = None) -> list[Path]:
    """The headers `source` includes by quotes that lie in or below its folder (or `at`, where a source
    written from a script's strings finds them), and theirs, recursively."""
    seen = seen if seen is not None else set()
    found = []
    for match in in_code(_QUOTED_INCLUDE, source.read_text(errors="replace")):
        name = match.group(1)
        header = ((at or source.parent) / name).resolve()
        if header in seen or not header.is_file():
            continue
        seen.add(header)
        found += [header, *local_headers(header, seen)]
    return found


def _roles(project: Project) -> tuple[str | None, str | None]:
    names = list(project.bound)
    forward = next((n for n in names if re.search(r"forward|fwd", n, re.I)), names[0] if names else None)
    backward = next((n for n in names if re.search(r"backward|bwd|grad", n, re.I) and n != forward), None)
    return forward, backward


def _forward(project: Project, forward: str | None) -> Forward | None:
    """The forward's parameters as the contract sees them (None: no forward, or its signature not found)."""
    fn = project.bound.get(forward) if forward else None
    return Forward.of(forward, fn) if forward and fn else None


def spec_text(name: str, project: Project) -> str:
    forward, backward = _roles(project)
    fwd = _forward(project, forward)
    inputs = fwd.inputs() if fwd else ()
    # Only a module's function is called through TorchModule; a kernels-only .cu gets binding.cpp instead.
    adapted = fwd is not None and project.wrapper and fwd.adapted()
    lines = [f'"""{name}: adopted by `brrr adopt` from {project.found_by}. The kernel code is the author\'s, as',
             'copied; this spec and reference.py are stubs: each TODO says what is left to write."""', "",
             "import torch", "", "from brrr_kernels import OpSpec" + (", TorchModule" if project.wrapper else ""), "", ""]
    lines += ["def make_inputs(size, dtype, device, gen):",
              "    # TODO: inputs of the shapes and values the kernels expect (one tensor each below, at `size`).",
              f"    return tuple(torch.randn(size, dtype=dtype, generator=gen).to(device) for _ in range({len(inputs) or 1}))",
              "", ""]
    if fwd is not None:
        lines += fwd.notes()
    if adapted and fwd is not None:
        lines += [*fwd.adapter(), "", ""]
    lines += _binding_comments(project)
    outputs = fwd.outputs() if fwd else ()
    lines += ["SPEC = OpSpec(", f'    name="{name}",',
              f"    inputs={tuple(inputs) or (NO_INPUT,)!r},  # TODO: check against the forward's tensors",
              f"    outputs={outputs!r},  # TODO: check: the tensors {forward} writes" if outputs else
              '    outputs=("y",),  # TODO: name the outputs',
              "    make_inputs=make_inputs,",
              "    sim_sizes=((3, 7), (2, 300)),  # TODO: sizes the CPU execution checks (small)",
              "    gpu_sizes=((64, 1000),),  # TODO: sizes a GPU checks (real ones)",
              "    gradcheck_size=(3, 5),",
              '    dtypes={"reference": (torch.float32, torch.float64), "cuda": (torch.float32,)},  # TODO: the kernels\' dtypes']
    if project.wrapper:
        lines.append(f"    torch_module=TorchModule({_module_call(project, forward, backward, adapted)}),")
    if params := (fwd.scalars() if fwd else {}):
        lines.append(f"    params={params!r},  # TODO: the values to check {forward} with (passed after the tensors)")
    if defines := {**project.flags.defines, **{m: "" for m in project.selecting if m not in project.flags.defines}}:
        said = ["the script's -D flags"] if project.flags.defines else []
        if project.selecting:
            said.append("what the torch wrappers' branches need: " + ", ".join(project.selecting.values()))
        lines.append(f"    defines={defines!r},  # {'; '.join(said)}, for every compile")
    if not backward:
        lines.append('    forward_only="TODO: no backward found; say why the op has none, or write one and name it",')
    else:
        lines.append(f'    saved={tuple(inputs)!r},  # TODO: what {backward} takes besides the upstream gradient')
    lines.append(")")
    return "\n".join(lines) + "\n"


def _binding_comments(project: Project) -> list[str]:
    """spec.py's comments on what the module binds, and the TODO where brrr could not read it."""
    lines = []
    if project.bound and not project.bound_here:
        listed = ", ".join(f"{k} ({_signature(v)})" for k, v in project.bound.items())
        lines.append("# No binding in these sources (their module is declared elsewhere): brrr binds the functions "
                     f"named below itself. Those taking tensors: {listed}")
    elif project.bound:
        lines.append(f"# The module binds: {', '.join(f'{k} ({_signature(v)})' for k, v in project.bound.items())}")
    if project.unread:
        lines.append(f"# TODO: brrr could not read what these bind, even through the preprocessor (a macro from a header "
                     f"outside the project?): {'; '.join(project.unread)}. Name those functions in TorchModule below.")
    elif project.wrapper and not project.bound:
        lines.append("# TODO: no m.def(\"NAME\", &function) brrr can read (bound through a macro?): name the module's "
                     "functions below, or adapt them with a Python function (see brrr_kernels.op.extension)")
    return lines


def _module_call(project: Project, forward: str | None, backward: str | None, adapted: bool) -> str:
    """TorchModule's arguments: the forward by name, or the adapter with the function it calls named in
    `functions` (brrr binds it by that name unless the module's own m.def does)."""
    call = f"forward={ADAPTER}, functions={(forward,)!r}" if adapted else f'forward="{forward or "TODO"}"'
    call += f', backward="{backward}"' if backward else ""
    extra = tuple(s.name for s in project.sources[1:] if s.suffix in SOURCE_SUFFIXES)
    return call + (f", sources={extra!r}" if extra else "")


def _signature(fn: Function | None) -> str:
    return ", ".join(f"{t} {n}" for t, n in fn.params) if fn else "signature not found"


def reference_text(project: Project) -> str:
    forward, backward = _roles(project)
    fwd = _forward(project, forward)
    # The contract's arguments: the forward's inputs, then the spec's params (the adapter takes the same).
    args = ", ".join([*fwd.contract_inputs(), *fwd.scalars()]) if fwd else NO_INPUT
    out = ["import torch  # noqa: F401", "", "", f"def forward({args}):",
           f'    raise NotImplementedError("brrr adopt: write forward in PyTorch: what {forward or "the kernels"} computes")']
    if backward:
        out += ["", "", f"def backward(grad_y, {args}):",
                f'    raise NotImplementedError("brrr adopt: write backward in PyTorch: what {backward} computes")']
    return "\n".join(out) + "\n"


def adopt(path: Path, into: Path | None, name: str | None) -> tuple[Path, list[str], list[str]]:
    """Write the op folder; the files written and what is left to do."""
    with tempfile.TemporaryDirectory(prefix="brrr-adopt-") as staging:
        sources, found_by, script = find_sources(path, name, Path(staging))
        project = analyse(sources, found_by)
        if script is not None:
            project = replace(project, flags=script_flags(script))
        name = name or re.sub(r"\W", "_", project.sources[0].stem)
        if not name.isidentifier():
            raise UsageError(f"--name {name!r}: an op's name is a Python identifier")
        folder = into or Path(name)
        written: list[str] = []
        staged = script is not None and project.sources[0].is_relative_to(Path(staging))
        base = project.sources[0].parent
        # A load_inline source's quoted includes are found beside the script, where torch's build finds
        # them only through extra_include_paths: look there.
        at = script.parent if staged and script is not None else None
        for source in project.sources:
            for f in [source, *local_headers(source, at=at)]:
                home = base if f.is_relative_to(base) else (at or base)
                rel = f.relative_to(home) if f.is_relative_to(home) else Path(f.name)
                _copy(f, folder / rel, written)
        launchers = host_functions(project.sources[0].read_text(errors="replace"))
    left: list[str] = []
    for stub, text in (("spec.py", spec_text(name, project)), ("reference.py", reference_text(project))):
        target = folder / stub
        if target.exists():
            left.append(f"{shown(target)} was there already and is kept: check it against the sources")
            continue
        write_atomic(target, text)
        written.append(shown(target))
    left.append(f"{shown(folder / 'reference.py')}: forward (and backward) in PyTorch")
    left.append(f"{shown(folder / 'spec.py')}: each TODO (inputs, outputs, sizes, dtypes)")
    if project.flags.dropped:
        left.append("check the kernels need none of the script's other compile flags, which brrr does not carry "
                    "over (it builds with its own; macros go in spec.py's defines): " + "; ".join(project.flags.dropped))
    if project.unread:
        left.append("the module functions bound by macro calls brrr could not expand (their macros are defined "
                    f"outside the project's files): {'; '.join(project.unread)}; name them in spec.py")
    if script is None and path.is_file() and not any(module_blocks(s.read_text(errors="replace")) for s in project.sources):
        # A lone .cu whose module is declared beside it (csrc/NAME.cpp): the folder holds the whole extension.
        for sibling in sorted(p for p in path.parent.iterdir() if p.suffix in SOURCE_SUFFIXES and p != path):
            if module_blocks(sibling.read_text(errors="replace")):
                left.insert(0, f"{shown(sibling)} beside it declares the extension's module: to take it (and the "
                               f"sources it binds) with this .cu, adopt the folder instead: brrr adopt {shown(path.parent)}")
                break
    if not project.wrapper:
        left.append(f"{shown(folder / 'binding.cpp')}: forward on at::Tensor calling the .cu's launchers ("
                    + ("; ".join(f"{f.name}({_signature(f)})" for f in launchers) or "none found: write one per kernel")
                    + "), as stages/sigmoid/binding.cpp does")
    return folder, written, left


def main(args: argparse.Namespace) -> int:
    folder, written, left = adopt(Path(args.path), args.into, args.name)
    print(f"brrr adopt: {shown(folder)}")
    for w in written:
        print(f"  wrote {w}")
    print("left to write:")
    for item in left:
        print(f"  - {item}")
    print(f"then: brrr validate {shown(folder)}")
    return EXIT_OK
