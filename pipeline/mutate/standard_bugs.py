"""The standard bugs `brrr mutate` plants: each one small edit of an op's numba_kernel.py.

Mutants come from the file's syntax tree, not from matching strings: each is an edit of the
source text at the line and column of the node it changes, so its diff reads like a person's
edit and formatting does not matter. Only kernels (functions under `@cuda.jit`) and the launches
of them are mutated, plus the module's float constants.
"""

from __future__ import annotations

import ast
import difflib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from ..cuda.tokens import Token, tokens
from ..sim.jit_source import is_device_function, jit_decorator


class Kind(str, Enum):
    COMPARISON = "comparison"  # flipped (< to >) or off by one (< to <=)
    INDEX = "index"  # an array index shifted by one
    LAST_BLOCK = "last block"  # the launch's grid one block short
    NAIVE = "naive form"  # log1p(a) as log(1 + a), expm1(a) as exp(a) - 1
    CONSTANT = "constant"  # a float constant perturbed in its 4th significant digit
    ACCUMULATOR = "accumulator"  # an accumulator's first value wrong
    BARRIER = "barrier"  # a barrier removed
    INPUT_WRITE = "input write"  # a kernel writes into an array it only reads
    KNOWN = "known bug"  # one of the op's own bugs/*.bug files that changes only this stage's file


@dataclass(frozen=True)
class Edit:
    """Replace the text from (line, col) to (end_line, end_col) (1-based lines, 0-based columns)."""

    line: int
    col: int
    end_line: int
    end_col: int
    text: str


@dataclass(frozen=True)
class Mutant:
    kind: Kind
    file: str
    line: int
    what: str  # "i >= n -> i > n"
    edit: Edit

    @property
    def key(self) -> str:
        """How a spec names this mutant to explain why it survives: file, line, column and the change."""
        return f"{self.file}:{self.line}:{self.edit.col}: {self.what}"

    def apply(self, source: str) -> str:
        return apply_edit(source, self.edit)

    def diff(self, source: str) -> str:
        before, after = source.splitlines(keepends=True), self.apply(source).splitlines(keepends=True)
        return "".join(difflib.unified_diff(before, after, f"a/{self.file}", f"b/{self.file}", n=1))


@dataclass(frozen=True)
class KnownBug(Mutant):
    """A bug file of the op's (mutants.py) run as a mutant: its changes, all to this one file."""

    changes: tuple[Any, ...] = ()

    @property
    def key(self) -> str:
        return self.what

    def apply(self, source: str) -> str:
        from .bug_files import apply_change

        for change in self.changes:
            source = apply_change(change, source, f"{self.what}: {change.file}")
        return source


def known_bugs(folder: Path, file: str) -> list[Mutant]:
    """The op's bugs/*.bug files that change `file` alone, as mutants."""
    from .bug_files import bugs_of

    found: list[Mutant] = []
    for name, bug in bugs_of(folder).items():
        if bug.changes and all(c.file == file for c in bug.changes):
            found.append(KnownBug(Kind.KNOWN, file, 0, f"bugs/{name}.bug", Edit(1, 0, 1, 0, ""), bug.changes))
    return found



def apply_edit(source: str, edit: Edit) -> str:
    lines = source.splitlines(keepends=True)
    # ast's columns count UTF-8 bytes: slice the encoded lines.
    start = sum(len(ln.encode()) for ln in lines[: edit.line - 1]) + edit.col
    end = sum(len(ln.encode()) for ln in lines[: edit.end_line - 1]) + edit.end_col
    data = source.encode()
    return (data[:start] + edit.text.encode() + data[end:]).decode()


FLIPPED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
OFF_BY_ONE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
SYMBOL = {ast.Lt: "<", ast.Gt: ">", ast.LtE: "<=", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
BARRIERS = {"syncthreads", "syncwarp"}
NAIVE = {"log1p": ("log", "1 + {}"), "expm1": ("exp", None)}


class _Source:
    def __init__(self, text: str, file: str) -> None:
        self.text, self.file = text, file
        self.tree = ast.parse(text)

    def segment(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.text, node) or ""

    def replace(self, kind: Kind, node: ast.AST, text: str, what: str) -> Mutant:
        edit = Edit(node.lineno, node.col_offset, node.end_lineno or node.lineno, node.end_col_offset or 0, text)
        return Mutant(kind, self.file, node.lineno, what, edit)


def _simple(node: ast.AST) -> bool:
    return isinstance(node, (ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Call))


def python_mutants(text: str, file: str = "numba_kernel.py") -> list[Mutant]:
    """Every standard bug this file admits, in line order, one per distinct mutated source."""
    src = _Source(text, file)
    kernels = [n for n in ast.walk(src.tree) if isinstance(n, ast.FunctionDef) and jit_decorator(n)]
    kernel_names = {k.name for k in kernels}
    found: list[Mutant] = []
    for fn in kernels:
        found += _comparisons(src, fn) + _loop_bounds(src, fn) + _indices(src, fn) + _accumulators(src, fn)
        found += _barriers(src, fn)
        if not is_device_function(fn):
            found += _input_writes(src, fn)
    found += _launches(src, kernel_names) + _naive_calls(src, kernels) + _constants(src)
    unique: dict[str, Mutant] = {}
    for m in sorted(found, key=lambda m: (m.line, m.edit.col, m.kind.value, m.what)):
        unique.setdefault(m.apply(text), m)
    return list(unique.values())


def _comparisons(src: _Source, fn: ast.FunctionDef) -> list[Mutant]:
    out = []
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in FLIPPED):
            continue
        op, left, right = type(node.ops[0]), node.left, node.comparators[0]
        for table in (FLIPPED, OFF_BY_ONE):
            if op not in table:
                continue
            new = SYMBOL[table[op]]
            between = Edit(left.end_lineno or 0, left.end_col_offset or 0, right.lineno, right.col_offset, f" {new} ")
            what = f"{src.segment(node)} -> {src.segment(left)} {new} {src.segment(right)}"
            out.append(Mutant(Kind.COMPARISON, src.file, node.lineno, what, between))
    return out


def _indices(src: _Source, fn: ast.FunctionDef) -> list[Mutant]:
    out = []
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)):
            continue
        index = node.slice.elts[-1] if isinstance(node.slice, ast.Tuple) and node.slice.elts else node.slice
        text = src.segment(index)
        if isinstance(index, ast.Constant) and type(index.value) is int:
            shifted = str(index.value + 1)
        else:
            shifted = f"{text} + 1" if _simple(index) or isinstance(index, ast.BinOp) else f"({text}) + 1"
        whole = src.segment(node)
        if node.lineno == node.end_lineno:
            start, end = index.col_offset - node.col_offset, (index.end_col_offset or 0) - node.col_offset
            out.append(src.replace(Kind.INDEX, index, shifted, f"{whole} -> {whole[:start]}{shifted}{whole[end:]}"))
        else:
            out.append(src.replace(Kind.INDEX, index, shifted, f"{whole} -> index {shifted}"))
    return out


def _loop_bounds(src: _Source, fn: ast.FunctionDef) -> list[Mutant]:
    """range(start, stop[, step]) in a kernel: the loop stops one iteration early (a bound off by one)."""
    out = []
    for node in ast.walk(fn):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"
                and len(node.args) >= 2):
            stop = node.args[1]
            text = src.segment(stop)
            short = f"{text} - 1" if _simple(stop) or isinstance(stop, ast.BinOp) else f"({text}) - 1"
            out.append(src.replace(Kind.COMPARISON, stop, short, f"{src.segment(node)}: stop {text} -> {short}"))
    return out


def _launches(src: _Source, kernel_names: set[str]) -> list[Mutant]:
    """launch(kernel, grid, block, ...) and kernel[grid, block](...): the grid's first dimension one short."""
    out = []
    for node in ast.walk(src.tree):
        grid = None
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "launch"
                and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in kernel_names):
            grid = node.args[1]
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in kernel_names
              and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2):
            grid = node.slice.elts[0]
        if grid is None:
            continue
        first = grid.elts[0] if isinstance(grid, ast.Tuple) and grid.elts else grid
        text = src.segment(first)
        short = f"max(1, {text} - 1)" if _simple(first) or isinstance(first, ast.BinOp) else f"max(1, ({text}) - 1)"
        out.append(src.replace(Kind.LAST_BLOCK, first, short, f"grid {text} -> {short}"))
    return out


def _naive_calls(src: _Source, kernels: list[ast.FunctionDef]) -> list[Mutant]:
    out = []
    for fn in kernels:
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NAIVE
                    and len(node.args) == 1):
                continue
            prefix, arg = src.segment(node.func.value), src.segment(node.args[0])
            if node.func.attr == "log1p":
                naive = f"{prefix}.log(1 + {arg})"
            else:
                naive = f"({prefix}.exp({arg}) - 1)"
            out.append(src.replace(Kind.NAIVE, node, naive, f"{src.segment(node)} -> {naive}"))
    return out


def perturbed(value: float) -> float:
    """`value` with its 4th significant digit one higher: 0.044715 -> 0.044725, 1.0 -> 1.001."""
    step = 10.0 ** (math.floor(math.log10(abs(value))) - 3)
    return float(f"{value + step:.12g}")


def _constants(src: _Source) -> list[Mutant]:
    docstrings = {id(n.body[0].value) for n in ast.walk(src.tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef)) and n.body and isinstance(n.body[0], ast.Expr)}
    out = []
    for node in ast.walk(src.tree):
        if (isinstance(node, ast.Constant) and type(node.value) is float and id(node) not in docstrings
                and node.value != 0 and math.isfinite(node.value)):
            new = repr(perturbed(node.value))
            out.append(src.replace(Kind.CONSTANT, node, new, f"{src.segment(node)} -> {new}"))
    return out


def _seed(src: _Source, value: ast.AST) -> tuple[ast.AST, str] | None:
    """The node holding an accumulator's first value, and the wrong one to put there."""
    if isinstance(value, ast.Call) and len(value.args) == 1 and not value.keywords:  # np.float64(0.0)
        return _seed(src, value.args[0])
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool):
        return value, repr(type(value.value)(value.value + 1))
    text = src.segment(value)
    if "inf" in text:  # -math.inf, math.inf, float("-inf"): the identity of max or min
        return value, "0.0"
    return None


def _accumulators(src: _Source, fn: ast.FunctionDef) -> list[Mutant]:
    """name = <seed> followed, in a loop, by name += ... or name = max(name, ...)/name op ... ."""
    updated: set[str] = set()
    for loop in (n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While))):
        for node in ast.walk(loop):
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                updated.add(node.target.id)
            elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and any(isinstance(n, ast.Name) and n.id == node.targets[0].id for n in ast.walk(node.value))):
                updated.add(node.targets[0].id)
    out = []
    for node in ast.walk(fn):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in updated):
            seed = _seed(src, node.value)
            if seed is not None:
                target, wrong = seed
                what = f"{src.segment(node)} -> {node.targets[0].id} = {wrong}"
                out.append(src.replace(Kind.ACCUMULATOR, target, wrong, what))
    return out


def _barriers(src: _Source, fn: ast.FunctionDef) -> list[Mutant]:
    out = []
    for node in ast.walk(fn):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr in BARRIERS):
            out.append(src.replace(Kind.BARRIER, node, "pass", f"{src.segment(node)} removed"))
    return out


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in body:
        yield stmt
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, field, []) or [])


def _input_writes(src: _Source, fn: ast.FunctionDef) -> list[Mutant]:
    """After the first statement that reads a parameter the kernel never writes, write that element."""
    params = [a.arg for a in fn.args.args]
    written = {n.value.id for n in ast.walk(fn)
               if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and isinstance(n.value, ast.Name)}
    out, done = [], set()
    for stmt in _statements(fn.body):
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.Expr)):
            continue
        for node in ast.walk(stmt):
            if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name)
                    and node.value.id in params and node.value.id not in written and node.value.id not in done):
                done.add(node.value.id)
                element = src.segment(node)
                line = src.text.splitlines()[stmt.lineno - 1]
                indent = line[: len(line) - len(line.lstrip())]
                end_line = stmt.end_lineno or stmt.lineno
                end_col = len(src.text.splitlines()[end_line - 1].encode())
                write = f"{element} = 2 * {element} + 1"
                edit = Edit(end_line, end_col, end_line, end_col, f"\n{indent}{write}")
                out.append(Mutant(Kind.INPUT_WRITE, src.file, end_line + 1, f"{write} added", edit))
    return out


# --- kernel.cu: the same bugs from a token stream ---------------------------------------------------

_TEMPLATE_INSIDE = {"::", ",", "*", "&", "const", "<", ">"}


def _template_brackets(toks: list[Token]) -> set[int]:
    """Indices of the < and > that bracket template arguments (static_cast<int64_t>, Pack<T, W>), not comparisons."""
    brackets: set[int] = set()
    for i, t in enumerate(toks):
        if t.text != "<" or i == 0 or toks[i - 1].kind != "ident":
            continue
        depth, j = 0, i
        while j < len(toks) and j < i + 16:
            u = toks[j]
            if u.text == "<":
                depth += 1
            elif u.text in (">", ">>"):
                depth -= 1 if u.text == ">" else 2
                if depth <= 0:
                    brackets.update((i, j))
                    break
            elif u.kind == "op" and u.text not in _TEMPLATE_INSIDE:
                break
            j += 1
    return brackets


def _matching(toks: list[Token], i: int, open_: str, close: str) -> int:
    depth = 0
    for j in range(i, len(toks)):
        depth += (toks[j].text == open_) - (toks[j].text == close)
        if depth == 0:
            return j
    return len(toks) - 1


def _bodies(toks: list[Token]) -> list[tuple[int, int, int]]:
    """(first token of the signature, the body's {, its }) of every __global__ and __device__ function."""
    found = []
    for i, t in enumerate(toks):
        if t.text not in ("__global__", "__device__"):
            continue
        j = i
        while j < len(toks) and toks[j].text not in ("(", ";"):
            j += 1
        if j >= len(toks) or toks[j].text != "(":
            continue
        k = _matching(toks, j, "(", ")") + 1
        while k < len(toks) and toks[k].text not in ("{", ";"):
            k += 1
        if k < len(toks) and toks[k].text == "{":
            found.append((i, k, _matching(toks, k, "{", "}")))
    return found


class _CudaSource:
    def __init__(self, text: str, file: str) -> None:
        self.text, self.file = text, file
        self.toks = tokens(text)

    def line(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1

    def mutant(self, kind: Kind, start: int, end: int, new: str, what: str) -> Mutant:
        line = self.line(start)
        line_start = self.text.rfind("\n", 0, start) + 1
        end_line = self.line(end)
        end_line_start = self.text.rfind("\n", 0, end) + 1
        edit = Edit(line, len(self.text[line_start:start].encode()), end_line, len(self.text[end_line_start:end].encode()),
                    new)
        return Mutant(kind, self.file, line, what, edit)

    def span(self, i: int, j: int) -> str:
        return self.text[self.toks[i].start:self.toks[j].end]


def cuda_mutants(text: str, file: str = "kernel.cu") -> list[Mutant]:
    """The standard bugs in a CUDA C file, from its tokens: inside __global__ and __device__ functions, and at launches."""
    src = _CudaSource(text, file)
    toks = src.toks
    templates = _template_brackets(toks)
    found: list[Mutant] = []
    for head, open_, close in _bodies(toks):
        inside = range(open_ + 1, close)
        found += _cu_comparisons(src, inside, templates) + _cu_indices(src, inside)
        found += _cu_calls(src, inside) + _cu_accumulators(src, inside)
        if toks[head].text == "__global__":
            found += _cu_input_writes(src, head, open_)
    found += _cu_launches(src) + _cu_constants(src)
    unique: dict[str, Mutant] = {}
    for m in sorted(found, key=lambda m: (m.line, m.edit.col, m.kind.value, m.what)):
        unique.setdefault(m.apply(text), m)
    return list(unique.values())


_CU_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "!=", "!=": "=="}
_CU_OFF = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}


def _cu_comparisons(src: _CudaSource, inside: range, templates: set[int]) -> list[Mutant]:
    out = []
    for i in inside:
        t = src.toks[i]
        if t.text not in _CU_FLIP or i in templates:
            continue
        context = f"{src.toks[i - 1].text} {t.text} {src.toks[i + 1].text}"
        for table in (_CU_FLIP, _CU_OFF):
            if t.text in table:
                new = table[t.text]
                what = f"{context} -> {src.toks[i - 1].text} {new} {src.toks[i + 1].text}"
                out.append(src.mutant(Kind.COMPARISON, t.start, t.end, new, what))
    return out


def _cu_indices(src: _CudaSource, inside: range) -> list[Mutant]:
    out = []
    toks = src.toks
    for i in inside:
        if toks[i].text != "[" or toks[i - 1].kind != "ident" or toks[i - 1].text in ("__shared__",):
            continue
        if i >= 2 and toks[i - 2].kind == "ident" and toks[i - 2].text not in ("return",):
            continue  # `T name[N]`: a declaration, not an access
        j = _matching(toks, i, "[", "]")
        if j <= i + 1:
            continue
        inner = src.span(i + 1, j - 1)
        what = f"{toks[i - 1].text}[{inner}] -> {toks[i - 1].text}[{inner} + 1]"
        out.append(src.mutant(Kind.INDEX, toks[j - 1].end, toks[j - 1].end, " + 1", what))
    return out


_CU_NAIVE = {"log1p": "log({})", "log1pf": "logf({})", "expm1": "(exp({}) - 1)", "expm1f": "(expf({}) - 1.0f)"}


def _cu_calls(src: _CudaSource, inside: range) -> list[Mutant]:
    """log1p/expm1 in the naive form, and barriers removed."""
    out = []
    toks = src.toks
    for i in inside:
        t = toks[i]
        if i + 1 >= len(toks) or toks[i + 1].text != "(":
            continue
        j = _matching(toks, i + 1, "(", ")")
        call = src.span(i, j)
        if t.text in _CU_NAIVE and j > i + 2:
            arg = src.span(i + 2, j - 1)
            one = "1.0f + " if t.text.endswith("f") else "1.0 + "
            naive = _CU_NAIVE[t.text].format(one + arg if t.text.startswith("log") else arg)
            out.append(src.mutant(Kind.NAIVE, t.start, toks[j].end, naive, f"{call} -> {naive}"))
        elif t.text in ("__syncthreads", "__syncwarp") and j + 1 < len(toks) and toks[j + 1].text == ";":
            out.append(src.mutant(Kind.BARRIER, t.start, toks[j].end, "(void)0", f"{call} removed"))
    return out


def _cu_accumulators(src: _CudaSource, inside: range) -> list[Mutant]:
    """`acc = <seed>;` whose name is later updated with += or from itself (max(acc, ...)); and a loop's
    start, `offset = 16` halved or doubled from there (/=, >>=, <<=), as a shuffle butterfly's is."""
    out = []
    toks = src.toks
    for i in inside:
        if not (toks[i].kind == "ident" and i + 1 < len(toks) and toks[i + 1].text == "="):
            continue
        name, k = toks[i].text, i + 2
        end = k
        while end < len(toks) and toks[end].text != ";":
            end += 1
        if end - k > 4 or end >= len(toks):
            continue
        later = [u for u in range(end, inside.stop) if toks[u].text == name]
        updated = any(toks[u + 1].text in ("+=", "*=", "-=", "/=", ">>=", "<<=") or
                      toks[u + 1].text == "=" and name in [v.text for v in toks[u + 2:u + 8]] for u in later)
        if not updated:
            continue
        seed = src.span(k, end - 1)
        numbers = [u for u in range(k, end) if toks[u].kind == "number"]
        if "inf" in seed.lower():
            out.append(src.mutant(Kind.ACCUMULATOR, toks[k].start, toks[end - 1].end, "0",
                                  f"{name} = {seed} -> {name} = 0"))
        elif len(numbers) == 1:
            n = toks[numbers[0]]
            digits = n.text.rstrip("fFlLuU")
            suffix = n.text[len(digits):]
            try:
                new = (repr(float(digits) + 1) if any(c in digits for c in ".eE") else str(int(digits) + 1)) + suffix
            except ValueError:
                continue
            out.append(src.mutant(Kind.ACCUMULATOR, n.start, n.end, new,
                                  f"{name} = {seed} -> {name} = {seed.replace(n.text, new)}"))
    return out


def _cu_launches(src: _CudaSource) -> list[Mutant]:
    """kernel<<<grid, ...>>>: the grid one block short (an integer grid; a dim3 one in x)."""
    out = []
    toks = src.toks
    for i, t in enumerate(toks):
        if t.text != "<<<":
            continue
        depth, j = 0, i + 1
        while j < len(toks) and not (depth == 0 and toks[j].text in (",", ">>>")):
            depth += (toks[j].text in ("(", "[", "{")) - (toks[j].text in (")", "]", "}"))
            j += 1
        grid = src.span(i + 1, j - 1)
        if "dim3" in grid or "grid" in grid:
            short = f"dim3(({grid}).x > 1 ? ({grid}).x - 1 : 1, ({grid}).y, ({grid}).z)"
        else:
            short = f"(({grid}) > 1 ? ({grid}) - 1 : 1)"
        out.append(src.mutant(Kind.LAST_BLOCK, toks[i + 1].start, toks[j - 1].end, short,
                              f"grid {grid} -> one block short"))
    return out


def _cu_constants(src: _CudaSource) -> list[Mutant]:
    out = []
    for t in src.toks:
        digits = t.text.rstrip("fFlL")
        if t.kind != "number" or not any(c in digits for c in ".eE") or digits.lower().startswith("0x"):
            continue
        try:
            value = float(digits)
        except ValueError:
            continue
        if value == 0 or not math.isfinite(value):
            continue
        new = repr(perturbed(value)) + t.text[len(digits):]
        out.append(src.mutant(Kind.CONSTANT, t.start, t.end, new, f"{t.text} -> {new}"))
    return out


def _cu_input_writes(src: _CudaSource, head: int, open_: int) -> list[Mutant]:
    """A __global__ kernel's const pointers: thread 0 of block 0 overwrites the first byte of each."""
    out = []
    toks = src.toks
    params = [i for i in range(head, open_) if toks[i].text == "("]
    if not params:
        return out
    start, end = params[0], _matching(toks, params[0], "(", ")")
    groups, current = [], []
    for i in range(start + 1, end):
        if toks[i].text == "," and not current[-1:] == ["<"]:
            groups.append(current)
            current = []
        else:
            current.append(toks[i].text)
    groups.append(current)
    for g in groups:
        if "const" in g and "*" in g and g and g[-1] not in ("*", "const"):
            name = g[-1]
            write = f" if (blockIdx.x == 0 && threadIdx.x == 0) {{ ((unsigned char*)({name}))[0] = 0x5a; }}"
            out.append(src.mutant(Kind.INPUT_WRITE, toks[open_].end, toks[open_].end, write,
                                  f"the kernel writes into {name}"))
    return out
