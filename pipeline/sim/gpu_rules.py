"""What numba's GPU compiler refuses and its simulator runs: found in the numba stage's source.

The simulator runs a kernel as Python, so `cuda.shared.array(MAX_THREADS // 32, float64)` works
there; on a GPU numba types the shape `MAX_THREADS // 32` as int64, not as a constant, and the
launch fails with a TypingError. A stage that passes on the CPU and cannot compile on the GPU is
found here, before anyone borrows a GPU to learn it.

The rule, numba-cuda's: the shape of cuda.shared.array / cuda.local.array / cuda.const.array_like
is an int literal, a name the kernel does not assign (a module global or a closure variable: both
frozen as constants at compile time), or a tuple of those; the dtype is a name or attribute the
kernel does not assign. Arithmetic, calls, subscripts and the kernel's own variables are refused.
"""

from __future__ import annotations

import ast
from pathlib import Path

ARRAYS = ("shared", "local")


def problems(path: Path) -> list[str]:
    """Each array in the file whose shape or dtype the GPU compiler cannot see as a constant, as
    'file:line: what, and how to fix it'. A file that does not parse has no problems here (its import
    reports it)."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (SyntaxError, OSError, UnicodeDecodeError):
        return []
    found: list[tuple[int, str]] = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            own = _assigned_in(fn)
            for call in _array_calls(fn):
                found += [(call.lineno, text) for text in _check(path, call, own)]
    return [text for _, text in sorted(found)]


def _own_nodes(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """Every node of fn's body, not descending into nested functions, lambdas or classes."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        found.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return found


def _array_calls(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Call]:
    """Calls `<x>.shared.array(...)` / `<x>.local.array(...)` directly in fn's body (not nested functions)."""
    return [node for node in _own_nodes(fn)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "array"
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr in ARRAYS]


def _assigned_in(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The kernel's own names: its parameters and every name it assigns (not those of nested functions)."""
    args = fn.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    return names | {node.id for node in _own_nodes(fn) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}


def _check(path: Path, call: ast.Call, own: set[str]) -> list[str]:
    kind = f"cuda.{call.func.value.attr}.array"  # type: ignore[attr-defined]
    shape = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "shape"), None)
    dtype = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "dtype"), None)
    where = f"{path}:{call.lineno}"
    out = []
    if shape is not None and not _constant_shape(shape, own):
        text = ast.unparse(shape)
        hint = (f"name it at module level (e.g. SIZE = {text}) and pass that name"
                if not _uses_own(shape, own) else "the size must be fixed when the kernel compiles: use a "
                "module-level constant (the largest size the kernel supports) and index only what this launch needs")
        out.append(f"{where}: {kind} shape `{text}` is not a constant numba's GPU compiler can see "
                   f"(the simulator runs it; a GPU launch fails with TypingError): {hint}")
    if dtype is not None and not _constant_name(dtype, own):
        out.append(f"{where}: {kind} dtype `{ast.unparse(dtype)}` is a value the kernel computes, not a "
                   "constant: use numba's float32 / float64, or build the kernel per dtype in a factory")
    return out


def _constant_shape(node: ast.expr, own: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Tuple):
        return all(_constant_shape(e, own) for e in node.elts)
    return _constant_name(node, own)


def _constant_name(node: ast.expr, own: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id not in own
    if isinstance(node, ast.Attribute):
        return _constant_name(node.value, own) if isinstance(node.value, (ast.Name, ast.Attribute)) else False
    return False


def _uses_own(node: ast.expr, own: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in own for n in ast.walk(node))
