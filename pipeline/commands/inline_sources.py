"""The extensions a Python script builds with `torch.utils.cpp_extension.load_inline(...)`, read for
`brrr adopt`.

load_inline takes the sources as strings (GPU MODE's lectures, KernelBench's solutions, notebooks):
C++ in `cpp_sources`, CUDA in `cuda_sources`, and `functions=[...]` to have pybind11 bindings written
for it. torch joins each list with newlines into `main.cpp` and `cuda.cu`, with a few includes first
and the PYBIND11_MODULE last; this module writes the same two files, so what brrr compiles and
reports lines against is what torch compiled. The script is read, never run: a source is a string
literal, a module-level (or function-level) name bound to one, `+` of those, an f-string of the
script's constants, `textwrap.dedent`/`.strip()` of one, or a file the script reads with
`open(NAME).read()` / `Path(NAME).read_text()`. Anything else is named by line.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import UsageError
from ..base.files import shown
from .script_flags import literal_text, module_constants, run_from

# load_inline(name, cpp_sources, cuda_sources=None, sycl_sources=None, functions=None, ...)
_POSITIONAL = ("name", "cpp_sources", "cuda_sources", "sycl_sources", "functions")
# What torch puts before the author's strings (torch/utils/cpp_extension.py, load_inline).
_CPP_HEAD = ("#include <torch/extension.h>",)
_CUDA_HEAD = ("#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>")


@dataclass(frozen=True)
class InlineModule:
    """One load_inline call: its module name, where it is, and the two files torch would write."""

    name: str
    line: int
    cpp: str
    cuda: str | None

    def write(self, folder: Path) -> list[Path]:
        """The .cu (kernels, and the wrappers torch's examples keep beside them) first, then the .cpp."""
        stem = self.name if self.name.isidentifier() else "inline"
        files = []
        if self.cuda is not None:
            files.append(folder / f"{stem}.cu")
            files[-1].write_text(self.cuda + "\n")
        files.append(folder / f"{stem}_main.cpp")
        files[-1].write_text(self.cpp + "\n")
        return files


class _Reader:
    """Evaluates the few expression forms a source string is written in, from the script's text alone."""

    def __init__(self, py: Path, tree: ast.Module) -> None:
        self.py = py
        self.constants = module_constants(tree)
        # The last binding of each name anywhere in the script: module level wins, since a function's
        # local of the same name is more likely a different thing.
        self.names: dict[str, ast.AST] = {}
        for scope in (ast.walk(tree), tree.body):
            for node in scope:
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    self.names[node.targets[0].id] = node.value
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
                    self.names[node.target.id] = node.value

    def fail(self, node: ast.AST, what: str) -> UsageError:
        return UsageError(f"{shown(self.py)}:{getattr(node, 'lineno', '?')}: load_inline's {what} is "
                          f"`{ast.unparse(node)[:80]}`, which brrr cannot read without running the script",
                          hint="keep the source in a string (a module-level name is fine) or a file the script "
                               "reads with open('NAME').read(); or adopt the .cu torch wrote into its build folder")

    def strings(self, node: ast.AST, what: str, depth: int = 0) -> list[str]:
        """A str or list-of-str argument as the list torch makes of it."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return [s for e in node.elts for s in self.strings(e, what, depth + 1)]
        if isinstance(node, ast.Name) and node.id in self.names and depth < 20:
            return self.strings(self.names[node.id], what, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = self.strings(node.left, what, depth + 1), self.strings(node.right, what, depth + 1)
            if len(left) == 1 and len(right) == 1 and not isinstance(node.left, (ast.List, ast.Tuple)):
                return [left[0] + right[0]]
            return left + right
        return [self.text(node, what, depth)]

    def text(self, node: ast.AST, what: str, depth: int = 0) -> str:
        if (found := literal_text(node, self.constants)) is not None:
            return found
        if isinstance(node, ast.Name) and node.id in self.names and depth < 20:
            return self.text(self.names[node.id], what, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.text(node.left, what, depth + 1) + self.text(node.right, what, depth + 1)
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee in ("dedent", "cleandoc") and len(node.args) == 1:
                inner = self.text(node.args[0], what, depth + 1)
                return textwrap.dedent(inner) if callee == "dedent" else inspect.cleandoc(inner)
            if callee in ("strip", "lstrip", "rstrip") and isinstance(node.func, ast.Attribute) and not node.args:
                return getattr(self.text(node.func.value, what, depth + 1), callee)()
            if callee in ("read", "read_text") and isinstance(node.func, ast.Attribute):
                return self.read_file(node.func.value, what)
        raise self.fail(node, what)

    def read_file(self, opener: ast.AST, what: str) -> str:
        """open(NAME) or Path(NAME) (NAME a literal, or Path(__file__).parent / NAME): the file's text."""
        target = opener.args[0] if isinstance(opener, ast.Call) and opener.args else opener
        if isinstance(target, ast.BinOp) and isinstance(target.op, ast.Div):
            target = target.right  # Path(__file__).parent / "kernel.cu": the name beside the script
        name = literal_text(target, self.constants)
        if name is None:
            raise self.fail(opener, what)
        for base in run_from(self.py):
            if (base / name).is_file():
                return (base / name).read_text(errors="replace")
        raise UsageError(f"{shown(self.py)}:{opener.lineno}: load_inline's {what} reads {name}, which is not there",
                         hint="looked beside the script, in each folder above it and in the current folder")

    def functions(self, node: ast.AST) -> dict[str, str]:
        if isinstance(node, ast.Name) and node.id in self.names:
            return self.functions(self.names[node.id])
        if isinstance(node, ast.Dict):
            return {self.text(k, "functions"): self.text(v, "functions") for k, v in zip(node.keys, node.values)
                    if k is not None}
        return {f: f for f in self.strings(node, "functions")}


def _arguments(call: ast.Call) -> dict[str, ast.AST]:
    found = dict(zip(_POSITIONAL, call.args))
    found.update({kw.arg: kw.value for kw in call.keywords if kw.arg})
    return found


def _is_none(node: ast.AST | None) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def inline_modules(py: Path) -> list[InlineModule]:
    """Every load_inline call of the script `py`, in order of lines, as the files torch would write."""
    try:
        tree = ast.parse(py.read_text(errors="replace"), str(py))
    except SyntaxError as e:
        raise UsageError(f"{shown(py)}:{e.lineno}: not valid Python ({e.msg})") from e
    reader = _Reader(py, tree)
    modules = []
    for call in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: n.lineno):
        callee = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        if callee != "load_inline":
            continue
        args = _arguments(call)
        if "cpp_sources" not in args:
            raise UsageError(f"{shown(py)}:{call.lineno}: load_inline without cpp_sources")
        name = reader.text(args["name"], "name") if "name" in args else "inline"
        bare = isinstance(flag := args.get("no_implicit_headers"), ast.Constant) and flag.value is True
        cpp = [*(() if bare else _CPP_HEAD), *reader.strings(args["cpp_sources"], "cpp_sources")]
        if not _is_none(args.get("functions")):
            bind = not (isinstance(flag := args.get("with_pytorch_error_handling"), ast.Constant) and flag.value is False)
            cpp.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
            for function, doc in reader.functions(args["functions"]).items():
                wrapped = f"torch::wrap_pybind_function({function})" if bind else function
                cpp.append(f'm.def("{function}", {wrapped}, "{doc}");')
            cpp.append("}")
        cuda = None
        if not _is_none(args.get("cuda_sources")) and (parts := reader.strings(args["cuda_sources"], "cuda_sources")):
            cuda = "\n".join([*(() if bare else _CUDA_HEAD), *parts])
        modules.append(InlineModule(name, call.lineno, "\n".join(cpp), cuda))
    return modules
