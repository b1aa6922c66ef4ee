"""Shared pieces of `brrr translate`: numba's scalar types and their C spellings, errors at a line of
numba_kernel.py, where a translated function declares its variables, and the source's comments."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from ..base.errors import UsageError

# numba's scalar types, as far as translation needs them. ACC is the arithmetic type of the op's
# element type T: T itself for float and double, float for the 16-bit types (brrr::acc_t<T>).
BOOL, I64, F32, F64, ACC = "bool", "int64", "float32", "float64", "acc"
INTS = (BOOL, I64)
FLOATS = (F32, F64, ACC)
T = "T"  # an array's element type when it is the op's dtype (the dispatched one)

C_SCALAR = {BOOL: "bool", I64: "int64_t", F32: "float", F64: "double"}
TORCH_KIND = {torch.float32: F32, torch.float64: F64, torch.int64: I64, torch.int32: I64, torch.bool: BOOL}
C_DTYPE = {torch.float32: "float", torch.float64: "double", torch.float16: "__half", torch.bfloat16: "__nv_bfloat16"}
AT_DTYPE = {torch.float32: "at::kFloat", torch.float64: "at::kDouble", torch.float16: "at::kHalf",
            torch.bfloat16: "at::kBFloat16", torch.int64: "at::kLong", torch.int32: "at::kInt", torch.bool: "at::kBool"}


class TranslateError(UsageError):
    """numba_kernel.py uses something outside the subset translate understands (exit 2)."""


def fail(path: Path, node: ast.AST | int, message: str, hint: str | None = None) -> TranslateError:
    line = node if isinstance(node, int) else getattr(node, "lineno", 0)
    return TranslateError(f"{path}:{line}: {message}", hint=hint)


def unify(a: str, b: str) -> str:
    """numba's type for a variable assigned both, and for the result of + - * on them."""
    if a == b:
        return I64 if a == BOOL else a
    if a in INTS and b in INTS:
        return I64
    if a in INTS or b in INTS:  # float32 op int64 is float64 in numba (numpy's promotion)
        return F64
    if F64 in (a, b):
        return F64
    return ACC  # ACC with float32: float for float and the 16-bit types, double for double


@dataclass
class Dtypes:
    """The dtypes the CUDA C stage dispatches to, and how T and its arithmetic type are spelled."""

    dtypes: tuple[torch.dtype, ...]

    @property
    def templated(self) -> bool:
        return len(self.dtypes) > 1

    @property
    def half(self) -> bool:
        return any(d in (torch.float16, torch.bfloat16) for d in self.dtypes)

    def t(self) -> str:
        return "T" if self.templated else C_DTYPE[self.dtypes[0]]

    def scalar(self, kind: str) -> str:
        if kind == ACC:
            if self.templated:
                return "brrr::acc_t<T>" if self.half else "T"
            return "float" if self.half else C_DTYPE[self.dtypes[0]]
        return C_SCALAR[kind]

    def elem(self, elem: str) -> str:
        return self.t() if elem == T else C_SCALAR[elem]

    def read(self, code: str, elem: str) -> str:
        return f"brrr::to_acc({code})" if elem == T and self.half else code

    def write(self, code: str, elem: str) -> str:
        return f"brrr::from_acc<{self.t()}>({code})" if elem == T and self.half else code


def comments(source: str) -> dict[int, tuple[str, bool]]:
    """line -> (comment text without '#', whether the comment is the whole line)."""
    found: dict[int, tuple[str, bool]] = {}
    lines = source.splitlines()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            whole = lines[row - 1][:col].strip() == ""
            found[row] = (tok.string.lstrip("#").strip(), whole)
    return found


@dataclass
class Writer:
    """Lines of C with indentation, and the Python comments carried over at the lines they sat on."""

    notes: dict[int, tuple[str, bool]]
    lines: list[str] = field(default_factory=list)
    depth: int = 1
    done: set[int] = field(default_factory=set)

    def leading(self, upto: int, since: int) -> None:
        """Whole-line comments between `since` and `upto` (exclusive), not yet written."""
        for line in range(since, upto):
            note = self.notes.get(line)
            if note and note[1] and line not in self.done:
                self.done.add(line)
                self.emit(f"// {note[0]}")

    def trailing(self, first: int, last: int) -> str:
        found = []
        for line in range(first, last + 1):
            note = self.notes.get(line)
            if note and not note[1] and line not in self.done:
                self.done.add(line)
                found.append(note[0])
        return f"  // {'; '.join(found)}" if found else ""

    def emit(self, text: str) -> None:
        self.lines.append("    " * self.depth + text if text else "")


_C_NUMBER = re.compile(r"^(0[xX][0-9a-fA-F]+|[0-9]+|([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)$")


def number(node: ast.Constant, source: str) -> str:
    """A literal as written in numba_kernel.py where C reads it the same way (0xFFFFFFFF, 1e-5), else its repr."""
    text = ast.get_source_segment(source, node) or ""
    if isinstance(node.value, bool):
        return "true" if node.value else "false"
    if _C_NUMBER.match(text) and not (isinstance(node.value, float) and re.fullmatch(r"0[xX].*|[0-9]+", text)):
        return text if isinstance(node.value, int) or any(c in text for c in ".eE") else text + ".0"
    return float_literal(node.value) if isinstance(node.value, float) else str(node.value)


def float_literal(value: float) -> str:
    if value != value:
        return "double(NAN)"
    if value in (float("inf"), float("-inf")):
        return "double(INFINITY)" if value > 0 else "-double(INFINITY)"
    text = repr(value)
    return text if any(c in text for c in ".eE") else text + ".0"


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def declarations(body: list[ast.stmt], params: set[str]) -> tuple[set[str], set[str]]:
    """Which locals a C function declares where Python first assigns them ("in place"), and which at
    its top ("hoisted": first assigned in a branch or loop and used outside it, or read before any
    assignment). Python's locals live for the whole function; C's for their block."""
    first: dict[str, tuple[int, tuple]] = {}  # name -> (order, scope) of its first store
    seen: dict[str, list[tuple[int, tuple, bool]]] = {}
    counter = [0]
    bound: list[str] = []  # targets of the enclosing for loops
    loop_targets: set[str] = set()
    outside: set[str] = set()  # names used somewhere no loop binds them

    def visit_expr(node: ast.AST, scope: tuple) -> None:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id not in bound:
                outside.add(n.id)
            if isinstance(n, ast.Name) and n.id not in params:
                counter[0] += 1
                store = isinstance(n.ctx, ast.Store)
                seen.setdefault(n.id, []).append((counter[0], scope, store))
                if store and n.id not in first:
                    first[n.id] = (counter[0], scope)

    def visit(stmts: list[ast.stmt], scope: tuple) -> None:
        for i, s in enumerate(stmts):
            if isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                if s.value is not None:
                    visit_expr(s.value, scope)
                targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                for t in targets:
                    if isinstance(s, ast.AugAssign):
                        visit_expr(ast.Name(id=t.id, ctx=ast.Load()) if isinstance(t, ast.Name) else t, scope)
                    visit_expr(t, scope)
            elif isinstance(s, ast.For):
                visit_expr(s.iter, scope)
                target = s.target.id if isinstance(s.target, ast.Name) else None
                if target:
                    loop_targets.add(target)
                    bound.append(target)
                visit_expr(s.target, scope + ((i, 0),))
                visit(s.body, scope + ((i, 0),))
                if target:
                    bound.pop()
                visit(s.orelse, scope + ((i, 1),))
            elif isinstance(s, (ast.If, ast.While)):
                visit_expr(s.test, scope)
                visit(s.body, scope + ((i, 0),))
                visit(s.orelse, scope + ((i, 1),))
            else:
                visit_expr(s, scope)

    visit(body, ())
    in_place, hoisted = set(), set()
    for name, uses in seen.items():
        if name not in first or (name in loop_targets and name not in outside):
            continue  # never assigned, or a loop variable each loop declares for itself
        order, scope = first[name]
        ok = uses[0][0] == order and all(u[1][: len(scope)] == scope for u in uses)
        (in_place if ok else hoisted).add(name)
    return in_place, hoisted


class ExprDispatch:
    """Translating a Python expression by its node type, for the device and the host side alike: a
    subclass maps each ast type it reads to a method in EXPR_METHODS; any other is `outside` the subset."""

    EXPR_METHODS: ClassVar[dict[type[ast.expr], str]] = {}

    def expr(self, node: ast.expr) -> Any:
        method = self.EXPR_METHODS.get(type(node))
        return getattr(self, method)(node) if method else self.outside(node)

    def outside(self, node: ast.expr) -> Any:
        raise NotImplementedError
