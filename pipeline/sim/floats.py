"""Where numba's simulator and numba on a GPU compute in different precisions: the lines to warn about.

On a GPU, numba types a Python number in a kernel as a 64-bit value, so a float32 array element
meeting it (`x[i] * 0.5`, `total += x[i]` with `total = 0.0`) is computed in float64. The
simulator runs the same line in numpy, where NumPy 2 treats a Python number as "weak": the result
stays float32. A float32 run in the simulator then rounds where the GPU does not. `float(x[i])`
makes both compute in float64. This finds such lines in a numba_kernel.py's @cuda.jit functions:
an array element (a subscript not inside float()) in arithmetic with a number literal, or with a
local that was assigned one.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .jit_source import jit_decorator


@dataclass(frozen=True)
class MixedLine:
    line: int
    code: str

    def describe(self, path: str) -> str:
        return (f"{path}:{self.line}: `{self.code}`: a float32 element meets a Python number; the simulator "
                f"computes it in float32 (NumPy 2), a GPU in float64: write float(...) around the element")


def _number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _array_dtype(node: ast.expr) -> str | None:
    """The dtype's name of `cuda.shared.array(shape, dtype)` / `cuda.local.array(...)` (float64,
    np.int32, "float32", ...), or None if node is not such a call or its dtype is not spelled out."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "array"
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr in ("shared", "local")):
        return None
    dtype = next((k.value for k in node.keywords if k.arg == "dtype"), node.args[1] if len(node.args) > 1 else None)
    if isinstance(dtype, ast.Constant) and isinstance(dtype.value, str):
        return dtype.value
    if isinstance(dtype, ast.Attribute):
        return dtype.attr
    return dtype.id if isinstance(dtype, ast.Name) else None


class _Kernel(ast.NodeVisitor):
    def __init__(self, source: str) -> None:
        self.lines = source.splitlines()
        self.numbers: set[str] = set()  # locals assigned a number literal: Python floats and ints in the simulator
        # Shared and local arrays declared with a dtype other than float32: their elements are float64
        # or integers in the simulator too, so meeting a Python number computes as on a GPU.
        self.not_float32: set[str] = set()
        self.found: dict[int, MixedLine] = {}

    def _float32_element(self, node: ast.expr) -> bool:
        """A subscript that may read a float32 element: of a kernel argument (float32 in a float32
        run), or of a local array declared float32 (or with a dtype the source does not spell out)."""
        if not isinstance(node, ast.Subscript):
            return False
        array = node.value
        return not (isinstance(array, ast.Name) and array.id in self.not_float32)

    def _plain(self, node: ast.expr) -> bool:
        return _number(node) or (isinstance(node, ast.Name) and node.id in self.numbers)

    def _flag(self, node: ast.AST) -> None:
        self.found.setdefault(node.lineno, MixedLine(node.lineno, self.lines[node.lineno - 1].strip()))

    def visit_Assign(self, node: ast.Assign) -> None:
        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        if _number(node.value):
            self.numbers.update(names)
        dtype = _array_dtype(node.value)
        if dtype is not None and dtype != "float32":
            self.not_float32.update(names)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "float":
            return  # float(x[i]) is the fix: nothing inside counts
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        sides = (node.left, node.right)
        if any(self._float32_element(s) for s in sides) and any(self._plain(s) for s in sides):
            self._flag(node)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name) and node.target.id in self.numbers and self._float32_element(node.value):
            self._flag(node)
        self.generic_visit(node)


def mixed_lines(path: Path) -> list[MixedLine]:
    """The lines of path's @cuda.jit functions where the simulator's precision differs from a GPU's."""
    source = path.read_text()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []  # loading the stage reports it
    found: dict[int, MixedLine] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and jit_decorator(node) is not None:
            kernel = _Kernel(source)
            kernel.visit(node)
            found.update(kernel.found)
    return [found[k] for k in sorted(found)]
