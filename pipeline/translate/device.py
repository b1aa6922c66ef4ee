"""`brrr translate`, device side: numba_kernel.py's @cuda.jit kernels and device functions as CUDA C.

Each function is translated once per argument types it is called with (as numba compiles it), in
the same order and with the same names and comments, so a reader can diff the two. Types follow
numba's rules on a GPU, not the simulator's: a float literal is a double, float32 meeting an int64
is float64, threadIdx.x and friends are promoted to 64 bits. Where C++ would type an expression
differently, the translation casts explicitly.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from ..sim.jit_source import is_jit
from .common import (
    ACC,
    BOOL,
    F32,
    F64,
    FLOATS,
    I64,
    INTS,
    Dtypes,
    ExprDispatch,
    T,
    Writer,
    declarations,
    fail,
    float_literal,
    number,
    unify,
)


@dataclass(frozen=True)
class Arr:
    elem: str  # T or a scalar kind
    ndim: int
    space: str  # global | shared | local
    extents: tuple[str, ...] = ()  # C extents of a shared or local array


@dataclass(frozen=True)
class Tup:
    items: tuple[Any, ...]


Type = str | Arr | Tup


@dataclass(frozen=True)
class Ex:
    """A translated expression: C code, numba type, C precedence (16 primary ... 3 conditional)."""

    code: str
    type: Type
    prec: int = 16


@dataclass
class JitFunction:
    node: ast.FunctionDef
    kernel: bool
    type_param: str | None = None  # a kernel factory's dtype parameter, which names T inside
    launch_bounds: ast.expr | None = None  # @cuda.jit(launch_bounds=N): __launch_bounds__(N) in CUDA C


@dataclass
class Usage:
    """What a function does with its parameters, read from the source alone."""

    ndim: dict[str, int] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)
    shape: dict[str, set[int]] = field(default_factory=dict)
    calls: list[tuple[str, int, str]] = field(default_factory=list)  # (param, position, device function)


@dataclass
class Instance:
    cname: str
    params: dict[str, Type]
    returns: Type | None
    templated: bool
    lines: list[str]
    struct: str | None = None


ATOMIC = {"add": "atomicAdd", "sub": "atomicSub", "max": "atomicMax", "min": "atomicMin", "exch": "atomicExch",
          "and_": "atomicAnd", "or_": "atomicOr", "xor": "atomicXor"}
MATH = {"exp", "log", "sqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
        "acosh", "atanh", "expm1", "log1p", "log2", "log10", "erf", "erfc", "fabs", "lgamma"}
MATH2 = {"pow", "atan2", "hypot", "copysign", "fmod"}
SYNC = {"syncthreads": "__syncthreads()", "threadfence": "__threadfence()",
        "threadfence_block": "__threadfence_block()", "threadfence_system": "__threadfence_system()"}
SHUFFLE = {"shfl_sync": "__shfl_sync", "shfl_up_sync": "__shfl_up_sync", "shfl_down_sync": "__shfl_down_sync",
           "shfl_xor_sync": "__shfl_xor_sync"}
VOTE = {"all_sync": "__all_sync", "any_sync": "__any_sync"}
DIMS = {"threadIdx", "blockIdx", "blockDim", "gridDim"}
BINOP = {ast.Add: ("+", 12), ast.Sub: ("-", 12), ast.Mult: ("*", 13), ast.Div: ("/", 13),
         ast.BitAnd: ("&", 8), ast.BitOr: ("|", 6), ast.BitXor: ("^", 7), ast.LShift: ("<<", 11),
         ast.RShift: (">>", 11)}
CMPOP = {ast.Lt: ("<", 10), ast.LtE: ("<=", 10), ast.Gt: (">", 10), ast.GtE: (">=", 10), ast.Eq: ("==", 9),
         ast.NotEq: ("!=", 9)}
UNSUPPORTED = {ast.List: "a Python list", ast.ListComp: "a list comprehension", ast.Dict: "a dict",
               ast.Set: "a set", ast.Lambda: "a lambda", ast.JoinedStr: "an f-string", ast.GeneratorExp: "a generator",
               ast.DictComp: "a dict comprehension", ast.SetComp: "a set comprehension", ast.Starred: "a starred argument",
               ast.Slice: "a slice", ast.Await: "await", ast.Yield: "yield", ast.NamedExpr: "an assignment expression"}

# Python's floor division, modulo, max and min (C's / and % truncate; max and min keep the first
# argument unless the second is strictly beyond it, NaN included, as Python's do).
HELPERS = {
    "py_floordiv": "__host__ __device__ inline int64_t py_floordiv(int64_t a, int64_t b) {\n"
                   "    const int64_t q = a / b;\n    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n}",
    "py_mod": "__host__ __device__ inline int64_t py_mod(int64_t a, int64_t b) {\n"
              "    const int64_t r = a % b;\n    return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n}",
    "py_max": "template <typename V>\n__host__ __device__ inline V py_max(V a, V b) { return b > a ? b : a; }",
    "py_min": "template <typename V>\n__host__ __device__ inline V py_min(V a, V b) { return b < a ? b : a; }",
}


def find_functions(tree: ast.Module, path: Path) -> dict[str, JitFunction]:
    found: dict[str, JitFunction] = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        jit = [is_jit(d) for d in node.decorator_list]
        if any(j for j, _ in jit):
            call = next(d for d in node.decorator_list if is_jit(d)[0])
            if isinstance(call, ast.Call) and (call.args or any(k.arg not in ("device", "launch_bounds")
                                                                for k in call.keywords)):
                raise fail(path, call, "cuda.jit with a signature or options other than device=True and "
                                       "launch_bounds=N is outside the subset translate reads")
            bounds = next((k.value for k in call.keywords if k.arg == "launch_bounds"), None) \
                if isinstance(call, ast.Call) else None
            found[node.name] = JitFunction(node, kernel=not any(d for _, d in jit), launch_bounds=bounds)
            continue
        inner = [s for s in node.body if isinstance(s, ast.FunctionDef) and any(is_jit(d)[0] for d in s.decorator_list)]
        if inner:  # a kernel factory: one parameter, the dtype, and a kernel it returns
            rest = [s for s in node.body if s is not inner[0] and not docstring(s)]
            ok = (len(inner) == 1 and len(node.args.args) == 1 and len(rest) == 1 and isinstance(rest[0], ast.Return)
                  and isinstance(rest[0].value, ast.Name) and rest[0].value.id == inner[0].name)
            if not ok:
                raise fail(path, node, f"{node.name}() defines a kernel but is not a factory translate reads: one "
                                       "parameter (the dtype), one @cuda.jit kernel, returned")
            if any(is_jit(d)[1] for d in inner[0].decorator_list):
                raise fail(path, inner[0], "a device function defined inside a function is outside the subset")
            found[node.name] = JitFunction(inner[0], kernel=True, type_param=node.args.args[0].arg)
    return found


def docstring(s: ast.stmt) -> bool:
    return isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)


def usage(fns: dict[str, JitFunction]) -> dict[str, Usage]:
    """Each parameter's rank (from how it is indexed), whether it is written, and which sizes it asks for,
    followed through calls into device functions."""
    found: dict[str, Usage] = {}
    for name, fn in fns.items():
        u = found[name] = Usage()
        params = [a.arg for a in fn.node.args.args]
        for n in ast.walk(fn.node):
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in params:
                p = n.value.id
                u.ndim[p] = len(n.slice.elts) if isinstance(n.slice, ast.Tuple) else 1
                if isinstance(n.ctx, ast.Store):
                    u.written.add(p)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript) and isinstance(n.target.value, ast.Name):
                u.written.add(n.target.value.id)
            elif isinstance(n, ast.Call):
                f = n.func
                if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "atomic"
                        and n.args and isinstance(n.args[0], ast.Name)):
                    u.written.add(n.args[0].id)
                if isinstance(f, ast.Name) and f.id in fns:
                    for i, a in enumerate(n.args):
                        if isinstance(a, ast.Name) and a.id in params:
                            u.calls.append((a.id, i, f.id))
                if isinstance(f, ast.Name) and f.id == "len" and n.args and isinstance(n.args[0], ast.Name):
                    u.shape.setdefault(n.args[0].id, set()).add(0)
            elif (isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) and n.value.attr == "shape"
                  and isinstance(n.value.value, ast.Name) and isinstance(n.slice, ast.Constant)):
                u.shape.setdefault(n.value.value.id, set()).add(n.slice.value)
    for _ in range(len(fns) + 1):  # follow arrays into device functions
        for u in found.values():
            for p, i, callee in u.calls:
                cparams = [a.arg for a in fns[callee].node.args.args]
                if i < len(cparams):
                    q = cparams[i]
                    if q in found[callee].ndim:
                        u.ndim.setdefault(p, found[callee].ndim[q])
                    if q in found[callee].written:
                        u.written.add(p)
    return found


class Device:
    """The device side of one numba_kernel.py: translates kernels on demand, per signature."""

    def __init__(self, path: Path, source: str, tree: ast.Module, module: ModuleType, dtypes: Dtypes) -> None:
        self.path, self.source, self.module, self.dtypes = path, source, module, dtypes
        self.functions = find_functions(tree, path)
        self.usage = usage(self.functions)
        self.notes = _comments(source)
        self.instances: dict[tuple[str, tuple[Any, ...]], Instance] = {}
        self.order: list[tuple[str, tuple[Any, ...]]] = []
        self.active: list[str] = []
        self.constants: dict[str, str] = {}  # name -> C declaration
        self.helpers: set[str] = set()
        self.todos: list[str] = []

    def instance(self, name: str, params: dict[str, Type], node: ast.AST) -> Instance:
        key = (name, tuple(params.values()))
        if key in self.instances:
            return self.instances[key]
        if name in self.active:
            raise fail(self.path, node, f"{name}() calls itself (recursion): CUDA C device code translated from numba "
                                        "cannot recurse; write it as a loop")
        self.active.append(name)
        try:
            inst = Emitter(self, name, params).run()
        finally:
            self.active.pop()
        self.instances[key] = inst
        self.order.append(key)
        return inst

    def global_value(self, node: ast.AST) -> Any:
        """The value of a dotted name in numba_kernel.py's module (math.pi, float64, np.float32, BLOCK)."""
        if isinstance(node, ast.Name):
            if node.id not in vars(self.module):
                raise KeyError(node.id)
            return vars(self.module)[node.id]
        if isinstance(node, ast.Attribute):
            return getattr(self.global_value(node.value), node.attr)
        raise KeyError(ast.dump(node))

    def constant(self, name: str, node: ast.AST) -> Ex:
        value = vars(self.module)[name]
        if isinstance(value, bool):
            self.constants[name] = f"constexpr bool {name} = {'true' if value else 'false'};"
            return Ex(name, BOOL)
        if isinstance(value, int):
            self.constants[name] = f"constexpr int64_t {name} = {value};"
            return Ex(name, I64)
        if isinstance(value, float):
            self.constants[name] = f"constexpr double {name} = {float_literal(value)};"
            return Ex(name, F64)
        raise fail(self.path, node, f"{name} is a module-level {type(value).__name__}; kernels can use module-level "
                                    "ints, floats, bools and tuples of ints (indexed with a constant)")


def _comments(source: str) -> dict[int, tuple[str, bool]]:
    from .common import comments

    return comments(source)


def scalar_kind(value: Any) -> str | None:
    """numba or numpy scalar type -> kind (float64, np.float32, ...)."""
    text = str(getattr(value, "__name__", value))
    return {"float64": F64, "float32": F32, "int64": I64, "int32": I64, "bool_": BOOL, "boolean": BOOL,
            "bool": BOOL, "uint32": I64, "int16": I64, "int8": I64}.get(text)


class Emitter(ExprDispatch):
    """One function, for one set of parameter types."""

    def __init__(self, dev: Device, name: str, params: dict[str, Type]) -> None:
        self.dev, self.name, self.params = dev, name, params
        self.fn = dev.functions[name]
        self.node = self.fn.node
        self.d = dev.dtypes
        self.path = dev.path

    def launch_bounds(self) -> str:
        """` __launch_bounds__(N)` for a kernel declared with launch_bounds=N (a module constant's value)."""
        bounds = self.fn.launch_bounds
        if bounds is None:
            return ""
        try:
            value = eval(compile(ast.Expression(bounds), str(self.path), "eval"), dict(vars(self.dev.module)))
        except Exception as e:
            raise fail(self.path, bounds, f"launch_bounds={ast.unparse(bounds)} is not a constant of the module ({e})") from e
        if isinstance(value, tuple):
            value = value[0]
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise fail(self.path, bounds, f"launch_bounds={ast.unparse(bounds)} is {value!r}, not a positive int")
        return f" __launch_bounds__({value})"

    # -- driver -----------------------------------------------------------------------------

    def run(self) -> Instance:
        body = [s for s in self.node.body if not docstring(s)]
        self.in_place, self.hoisted = declarations(body, set(self.params))
        self.locals: dict[str, Type] = {}
        for _ in range(6):  # until every local's type is stable (numba unifies a variable's assignments)
            before = dict(self.locals)
            self.returns: Type | None = None
            self.uses_t = any(_has_t(t) for t in self.params.values())
            self.declared: set[str] = set()
            self.w = Writer(self.dev.notes)
            for name in sorted(self.hoisted):
                if name in self.locals:
                    self.w.emit(f"{self.spell(self.locals[name])} {name};")
                    self.declared.add(name)
            self.block(body, self.node.lineno + 1)
            if self.locals == before:
                break
        return self.finish()

    def finish(self) -> Instance:
        templated = self.d.templated and (self.uses_t or _has_t(self.returns))
        fn, node = self.fn, self.node
        cname = self.name
        struct = None
        ret = "void"
        if not fn.kernel and self.returns is not None:
            if isinstance(self.returns, Tup):
                struct = f"{cname}_result"
                ret = struct + ("<T>" if templated else "")
            else:
                ret = self.spell(self.returns)
        params = ", ".join(self.param_decl(p, t, kernel=fn.kernel) for p, t in self.params.items())
        head = ("template <typename T>\n" if templated else "") + \
            f"{'__global__' if fn.kernel else '__device__'} {ret}{self.launch_bounds()} {cname}({params}) {{"
        lines = [f"// numba_kernel.py:{node.lineno}"]
        if struct:
            assert isinstance(self.returns, Tup)
            fields = " ".join(f"{self.spell(t)} v{i};" for i, t in enumerate(self.returns.items))
            lines += (["template <typename T>"] if templated else []) + [f"struct {struct} {{ {fields} }};"]
        lines += head.split("\n") + self.w.lines + ["}"]
        return Instance(cname, self.params, self.returns, templated, lines, struct)

    def param_decl(self, name: str, t: Type, kernel: bool) -> str:
        if isinstance(t, Arr):
            if t.space != "global" and t.ndim != 1:
                raise fail(self.path, self.node, f"{name}: passing a {t.ndim}-D {t.space} array to a device function "
                                                 "is outside the subset (1-D only)")
            const = "" if name in self.dev.usage[self.name].written else "const "
            restrict = " __restrict__" if kernel else ""
            parts = [f"{const}{self.d.elem(t.elem)}*{restrict} {name}"]
            if t.space == "global" and t.ndim > 1:
                parts += [f"int64_t {name}_stride{k}" for k in range(t.ndim)]
            parts += [f"int64_t {name}_shape{k}" for k in sorted(self.dev.usage[self.name].shape.get(name, ()))]
            return ", ".join(parts)
        return f"{self.spell(t)} {name}"

    def spell(self, t: Type | None) -> str:
        if t is None:
            return "void"
        if isinstance(t, Arr):
            return self.d.elem(t.elem) + "*"
        if isinstance(t, Tup):
            raise TypeError("a tuple has no single C spelling")
        if t == ACC:
            self.uses_t = True
        return self.d.scalar(t)

    def cast(self, e: Ex, to: str) -> Ex:
        if not isinstance(e.type, str) or e.type == to or self.spell(e.type) == self.spell(to):
            return e
        if isinstance(e.type, str) and e.type in INTS and to in FLOATS and _is_int_literal(e.code):
            return Ex(e.code + ".0", to)
        return Ex(f"{self.spell(to)}({e.code})", to)

    # -- statements ---------------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt], since: int) -> None:
        for s in stmts:
            self.w.leading(s.lineno, since)
            since = (s.end_lineno or s.lineno) + 1
            self.statement(s)

    def line(self, s: ast.stmt, text: str) -> None:
        # A compound statement's own comments are those on its header, not on its body's lines.
        last = max(s.lineno, s.body[0].lineno - 1) if getattr(s, "body", None) else (s.end_lineno or s.lineno)
        self.w.emit(text + self.w.trailing(s.lineno, last))

    def nested(self, stmts: list[ast.stmt], since: int) -> None:
        self.w.depth += 1
        self.block(stmts, since)
        self.w.depth -= 1

    def statement(self, s: ast.stmt) -> None:
        if docstring(s) or isinstance(s, ast.Pass):
            return
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise fail(self.path, s, "chained assignment (a = b = ...) is outside the subset")
            self.assign(s, s.targets[0], s.value)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s, s.target, s.value)
        elif isinstance(s, ast.AugAssign):
            self.augassign(s)
        elif isinstance(s, ast.If):
            self.if_(s)
        elif isinstance(s, ast.For):
            self.for_(s)
        elif isinstance(s, ast.While):
            if s.orelse:
                raise fail(self.path, s, "while ... else is outside the subset")
            self.line(s, f"while ({self.cond(s.test).code}) {{")
            self.nested(s.body, s.lineno + 1)
            self.w.emit("}")
        elif isinstance(s, ast.Break):
            self.line(s, "break;")
        elif isinstance(s, ast.Continue):
            self.line(s, "continue;")
        elif isinstance(s, ast.Return):
            self.return_(s)
        elif isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Call):
                e = self.call(s.value, statement=True)
                self.line(s, f"{e.code};")
            else:
                raise fail(self.path, s, "an expression statement that is not a call does nothing in a kernel")
        else:
            raise fail(self.path, s, f"{type(s).__name__.lower()} statements are outside the subset translate reads "
                                     "(assignments, if, for ... in range, while, break, continue, return, calls)")

    def declare(self, name: str, e: Ex, s: ast.stmt) -> None:
        if name in self.params:
            if isinstance(self.params[name], Arr):
                raise fail(self.path, s, f"{name} is an array parameter; assigning to it is outside the subset")
            t = self.params[name]
        else:
            old = self.locals.get(name)
            t = e.type if old is None or not isinstance(old, str) or not isinstance(e.type, str) else unify(old, e.type)
            self.locals[name] = t
        if isinstance(e.type, Arr):
            raise fail(self.path, s, f"{name}: assigning an array to a name is outside the subset "
                                     "(only cuda.shared.array and cuda.local.array make one)")
        if isinstance(t, Tup):
            raise fail(self.path, s, f"{name}: a tuple in one variable is outside the subset; unpack it (a, b = ...)")
        if name in self.in_place and name not in self.declared:
            self.declared.add(name)
            self.line(s, f"{self.spell(t)} {name} = {e.code};")
        else:
            self.line(s, f"{name} = {e.code};")

    def assign(self, s: ast.stmt, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, ast.Call) and _array_constructor(value):
                self.array_decl(s, target.id, value)
                return
            self.declare(target.id, self.expr(value), s)
        elif isinstance(target, ast.Subscript):
            self.store(s, target, self.expr(value))
        elif isinstance(target, ast.Tuple):
            self.unpack(s, target, value)
        else:
            raise fail(self.path, s, "assignment to this target is outside the subset")

    def unpack(self, s: ast.stmt, target: ast.Tuple, value: ast.expr) -> None:
        names = []
        for t in target.elts:
            if not isinstance(t, ast.Name):
                raise fail(self.path, s, "unpacking into anything but names is outside the subset")
            names.append(t.id)
        parts = self.parts(value)
        if parts is not None:
            if len(parts) != len(names):
                raise fail(self.path, s, f"unpacking {len(parts)} values into {len(names)} names")
            clash = any(n in names for e in parts for n in _names(e.code))
            if clash:
                tmp = [f"{n}_next" for n in names]
                for n, e in zip(tmp, parts):
                    self.w.emit(f"const {self.spell(e.type)} {n} = {e.code};")
                parts = [Ex(n, e.type) for n, e in zip(tmp, parts)]
            for n, e in zip(names, parts):
                self.declare(n, e, s)
            return
        e = self.expr(value)
        if not isinstance(e.type, Tup) or len(e.type.items) != len(names):
            raise fail(self.path, s, f"cannot unpack {ast.unparse(value)} into {len(names)} names")
        for n, t in zip(names, e.type.items):
            if n not in self.params:
                self.locals[n] = t if n not in self.locals else unify(self.locals[n], t)
        fresh = all(n in self.in_place and n not in self.declared for n in names)
        if fresh and all(self.locals.get(n) == t for n, t in zip(names, e.type.items)):
            self.declared.update(names)
            self.line(s, f"auto [{', '.join(names)}] = {e.code};")
        else:
            tmp = f"{'_'.join(names)}_r"
            self.line(s, f"const auto {tmp} = {e.code};")
            for i, n in enumerate(names):
                self.declare(n, Ex(f"{tmp}.v{i}", e.type.items[i]), s)

    def parts(self, value: ast.expr) -> list[Ex] | None:
        """The elements of a tuple known element by element: a tuple display, cuda.grid(k), cuda.gridsize(k)."""
        if isinstance(value, ast.Tuple):
            return [self.expr(v) for v in value.elts]
        if isinstance(value, ast.Call) and _cuda_attr(value.func) in ("grid", "gridsize") and value.args:
            k = self.constant_int(value.args[0])
            axes = "xyz"[:k]
            if _cuda_attr(value.func) == "grid":
                return [Ex(f"int64_t(blockIdx.{a}) * blockDim.{a} + threadIdx.{a}", I64, 12) for a in axes]
            return [Ex(f"int64_t(gridDim.{a}) * blockDim.{a}", I64, 13) for a in axes]
        return None

    def array_decl(self, s: ast.stmt, name: str, call: ast.Call) -> None:
        space = "shared" if _cuda_attr(call.func.value) == "shared" else "local"  # type: ignore[attr-defined]
        shape = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "shape"), None)
        dtype = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "dtype"), None)
        if shape is None or dtype is None:
            raise fail(self.path, s, f"cuda.{space}.array needs a shape and a dtype")
        dims = shape.elts if isinstance(shape, ast.Tuple) else [shape]
        extents = []
        for d in dims:
            n = self.constant_int(d)
            if n <= 0:
                raise fail(self.path, s, f"cuda.{space}.array of extent {n}: dynamic shared memory is outside the subset")
            extents.append(self.expr(d).code if isinstance(d, ast.Name) else str(n))
        elem = self.dtype_of(dtype)
        if name in self.declared:
            raise fail(self.path, s, f"{name} is made an array twice; outside the subset")
        arr = Arr(elem, len(extents), space, tuple(extents))
        self.locals[name] = arr
        self.declared.add(name)
        if elem == T:
            self.uses_t = True
        qual = "__shared__ " if space == "shared" else ""
        self.line(s, f"{qual}{self.d.elem(elem)} {name}{''.join(f'[{x}]' for x in extents)};")

    def dtype_of(self, node: ast.expr) -> str:
        if isinstance(node, ast.Name) and node.id == self.fn.type_param:
            return T
        try:
            kind = scalar_kind(self.dev.global_value(node))
        except (KeyError, AttributeError):
            kind = None
        if kind is None:
            raise fail(self.path, node, f"dtype {ast.unparse(node)} is not one translate knows (float32, float64, "
                                        "int32, int64, or a kernel factory's dtype parameter)")
        return kind

    def constant_int(self, node: ast.expr) -> int:
        try:
            value = eval(compile(ast.Expression(node), str(self.path), "eval"), vars(self.dev.module))  # noqa: S307
        except Exception as e:
            raise fail(self.path, node, f"{ast.unparse(node)} must be a constant here (a literal or a module-level "
                                        "int)") from e
        if not isinstance(value, int):
            raise fail(self.path, node, f"{ast.unparse(node)} must be an int, got {type(value).__name__}")
        return value

    def store(self, s: ast.stmt, target: ast.Subscript, value: Ex, op: str = "=") -> None:
        ref, elem = self.element(target)
        if isinstance(value.type, Arr) or isinstance(value.type, Tup):
            raise fail(self.path, s, "storing an array or tuple into an array element is outside the subset")
        if op == "=":
            self.line(s, f"{ref} = {self.d.write(value.code, elem)};")
        elif elem == T and self.d.half:
            self.line(s, f"{ref} = {self.d.write(f'{self.d.read(ref, elem)} {op} {value.code}', elem)};")
        else:
            self.line(s, f"{ref} {op}= {value.code};")

    def augassign(self, s: ast.AugAssign) -> None:
        op = type(s.op)
        if op in (ast.FloorDiv, ast.Mod, ast.Pow):
            rebuilt = ast.BinOp(left=_load(s.target), op=s.op, right=s.value)
            ast.copy_location(rebuilt, s)
            self.assign(s, s.target, rebuilt)
            return
        if op not in BINOP:
            raise fail(self.path, s, f"{type(s.op).__name__} assignment is outside the subset")
        sym = BINOP[op][0]
        if isinstance(s.target, ast.Subscript):
            current = self.expr(_load(s.target))
            self.store(s, s.target, self.coerce_rhs(current, self.expr(s.value), s), sym)
            return
        if not isinstance(s.target, ast.Name):
            raise fail(self.path, s, "augmented assignment to this target is outside the subset")
        current = self.expr(_load(s.target))
        result = self.arith(s.op, current, self.expr(s.value), s)
        name = s.target.id
        if name not in self.params:
            self.locals[name] = unify(self.locals.get(name, result.type), result.type) \
                if isinstance(result.type, str) else result.type
        self.line(s, f"{name} {sym}= {self.coerce_rhs(current, self.expr(s.value), s).code};")

    def coerce_rhs(self, current: Ex, value: Ex, node: ast.AST) -> Ex:
        """x op= v computes x op v in numba's type: where C would compute it in float, cast v up."""
        if isinstance(current.type, str) and isinstance(value.type, str):
            if current.type in FLOATS and value.type in INTS and current.type != F64:
                return self.cast(value, F64)
            if current.type in INTS and value.type in FLOATS:
                return value
        return value

    def if_(self, s: ast.If) -> None:
        self.line(s, f"if ({self.cond(s.test).code}) {{")
        self.nested(s.body, s.lineno + 1)
        if s.orelse:
            self._else(s, s.orelse)
        else:
            self.w.emit("}")

    def _else(self, s: ast.If, orelse: list[ast.stmt]) -> None:
        if len(orelse) == 1 and isinstance(orelse[0], ast.If):
            inner = orelse[0]
            self.line(inner, f"}} else if ({self.cond(inner.test).code}) {{")
            self.nested(inner.body, inner.lineno + 1)
            if inner.orelse:
                self._else(inner, inner.orelse)
            else:
                self.w.emit("}")
            return
        self.w.emit("} else {")
        self.nested(orelse, s.body[-1].end_lineno + 1 if s.body else s.lineno + 1)
        self.w.emit("}")

    def for_(self, s: ast.For) -> None:
        if s.orelse:
            raise fail(self.path, s, "for ... else is outside the subset")
        it = s.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
                and 1 <= len(it.args) <= 3 and not it.keywords):
            raise fail(self.path, s, f"for ... in {ast.unparse(it)}: only for ... in range(...) is in the subset")
        if not isinstance(s.target, ast.Name):
            raise fail(self.path, s, "a for loop over range() needs one name as its target")
        var = s.target.id
        if var in self.hoisted or var in self.in_place:
            raise fail(self.path, s, f"{var} is used after its loop; in C the loop variable ends with the loop. "
                                     "Copy it to another variable inside the loop")
        if any(isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Store)
               for b in s.body for n in ast.walk(b)):
            raise fail(self.path, s, f"{var} is assigned inside its own range loop; outside the subset")
        args = [self.expr(a) for a in it.args]
        for a, node in zip(args, it.args):
            if a.type not in INTS:
                raise fail(self.path, node, f"range() takes ints, got {ast.unparse(node)} ({a.type})")
        start, stop, step = (Ex("0", I64), args[0], Ex("1", I64)) if len(args) == 1 else \
            (args[0], args[1], args[2] if len(args) == 3 else Ex("1", I64))
        assigned = {n.id for b in s.body for n in ast.walk(b) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        # range() evaluates its arguments once; C re-reads the condition each time round.
        if assigned & (_names(stop.code) | _names(step.code)):
            for label, e in (("stop", stop), ("step", step)):
                if not _is_int_literal(e.code):
                    self.w.emit(f"const int64_t {var}_{label} = {e.code};")
            stop = stop if _is_int_literal(stop.code) else Ex(f"{var}_stop", I64)
            step = step if _is_int_literal(step.code) else Ex(f"{var}_step", I64)
        self.locals[var] = I64
        self.declared.add(var)
        sign = self.sign(it.args[2]) if len(it.args) == 3 else 1
        if sign > 0:
            test = f"{var} < {stop.code}"
        elif sign < 0:
            test = f"{var} > {stop.code}"
        else:
            test = f"({step.code} > 0 ? {var} < {stop.code} : {var} > {stop.code})"
        inc = f"++{var}" if step.code == "1" else f"{var} += {step.code}"
        self.line(s, f"for (int64_t {var} = {start.code}; {test}; {inc}) {{")
        self.nested(s.body, s.lineno + 1)
        self.w.emit("}")

    def sign(self, node: ast.expr) -> int:
        """+1 / -1 where a range step's sign is known from the source (constants, block and grid sizes), else 0."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -self.sign(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            return self.sign(node.left) * self.sign(node.right)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                and node.value.attr in ("blockDim", "gridDim"):
            return 1
        try:
            value = eval(compile(ast.Expression(node), str(self.path), "eval"), vars(self.dev.module))  # noqa: S307
        except Exception:
            return 0
        return (value > 0) - (value < 0) if isinstance(value, int) else 0

    def return_(self, s: ast.Return) -> None:
        if self.fn.kernel:
            if s.value is not None:
                raise fail(self.path, s, "a kernel cannot return a value")
            self.line(s, "return;")
            return
        if s.value is None:
            raise fail(self.path, s, "a device function that returns nothing is outside the subset here; return a value")
        parts = self.parts(s.value)
        if parts is not None:
            t: Type = Tup(tuple(p.type for p in parts))
            code = "{" + ", ".join(p.code for p in parts) + "}"
        else:
            e = self.expr(s.value)
            t, code = e.type, e.code
        if self.returns is None:
            self.returns = t
        elif isinstance(t, str) and isinstance(self.returns, str):
            self.returns = unify(self.returns, t)
        elif isinstance(t, Tup) and isinstance(self.returns, Tup) and len(t.items) == len(self.returns.items):
            self.returns = Tup(tuple(unify(a, b) for a, b in zip(self.returns.items, t.items)))
        else:
            raise fail(self.path, s, "this function returns values of different kinds")
        self.line(s, f"return {code};")

    # -- expressions --------------------------------------------------------------------------

    def cond(self, node: ast.expr) -> Ex:
        e = self.expr(node)
        if not isinstance(e.type, str):
            raise fail(self.path, node, f"{ast.unparse(node)} is not a scalar condition")
        return e

    EXPR_METHODS: ClassVar[dict[type[ast.expr], str]] = {
        ast.Constant: "literal", ast.Name: "name_", ast.Attribute: "attribute", ast.Subscript: "subscript",
        ast.BinOp: "binop", ast.UnaryOp: "unary", ast.BoolOp: "boolop", ast.Compare: "compare", ast.IfExp: "ifexp",
        ast.Call: "call"}

    def outside(self, node: ast.expr) -> Ex:
        kind = UNSUPPORTED.get(type(node))
        if kind:
            raise fail(self.path, node, f"{kind} is outside the subset translate reads (CUDA C kernels have "
                                        "scalars, arrays from cuda.shared/local.array and tuples that are unpacked)")
        if isinstance(node, ast.Tuple):
            raise fail(self.path, node, "a tuple is only translated where it is unpacked or returned")
        raise fail(self.path, node, f"{type(node).__name__} expressions are outside the subset")

    def literal(self, node: ast.Constant) -> Ex:
        if isinstance(node.value, bool):
            return Ex(number(node, self.dev.source), BOOL)
        if isinstance(node.value, int):
            return Ex(number(node, self.dev.source), I64)
        if isinstance(node.value, float):
            code = number(node, self.dev.source)
            return Ex(code, F64, 16 if not code.startswith("-") else 15)
        raise fail(self.path, node, f"the constant {node.value!r} has no meaning in a kernel")

    def binop(self, node: ast.BinOp) -> Ex:
        return self.arith(node.op, self.expr(node.left), self.expr(node.right), node)

    def boolop(self, node: ast.BoolOp) -> Ex:
        op, prec = ("&&", 5) if isinstance(node.op, ast.And) else ("||", 4)
        vals = [self.paren(self.cond(v), prec) for v in node.values]
        return Ex(f" {op} ".join(vals), BOOL, prec)

    def ifexp(self, node: ast.IfExp) -> Ex:
        test, a, b = self.cond(node.test), self.expr(node.body), self.expr(node.orelse)
        t = unify(a.type, b.type) if isinstance(a.type, str) and isinstance(b.type, str) else a.type
        a, b = self.cast(a, t), self.cast(b, t)
        return Ex(f"{self.paren(test, 4)} ? {self.paren(a, 4)} : {self.paren(b, 3)}", t, 3)

    def paren(self, e: Ex, prec: int) -> str:
        return f"({e.code})" if e.prec < prec else e.code

    def name_(self, node: ast.Name) -> Ex:
        n = node.id
        if n in self.params:
            return Ex(n, self.params[n])
        if n in self.locals:
            return Ex(n, self.locals[n])
        if n in self.in_place or n in self.hoisted:
            raise fail(self.path, node, f"{n} is read before it is assigned")
        if n in vars(self.dev.module):
            value = vars(self.dev.module)[n]
            if isinstance(value, (bool, int, float)):
                return self.dev.constant(n, node)
            raise fail(self.path, node, f"{n} is a module-level {type(value).__name__}; outside the subset here")
        raise fail(self.path, node, f"{n} is not a parameter, a local or a module-level constant")

    def attribute(self, node: ast.Attribute) -> Ex:
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr in DIMS and _cuda_attr(base) in DIMS and node.attr in "xyz":
            return Ex(f"int64_t({base.attr}.{node.attr})", I64)
        if _cuda_attr(node) == "warpsize":
            return Ex("int64_t(warpSize)", I64)
        if isinstance(base, ast.Name) and base.id == "math":
            consts = {"pi": float.__repr__(3.141592653589793), "e": float.__repr__(2.718281828459045),
                      "inf": "double(INFINITY)", "nan": "double(NAN)", "tau": float.__repr__(6.283185307179586)}
            if node.attr in consts:
                return Ex(consts[node.attr], F64)
        if isinstance(base, ast.Name) and base.id in self.params and isinstance(self.params[base.id], Arr):
            raise fail(self.path, node, f"{ast.unparse(node)}: of an array's attributes only .shape[k] is in the subset")
        raise fail(self.path, node, f"{ast.unparse(node)} is outside the subset translate reads")

    def subscript(self, node: ast.Subscript) -> Ex:
        v = node.value
        if isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(v.value, ast.Name):
            arr = v.value.id
            if arr in self.params and isinstance(self.params[arr], Arr) and self.params[arr].space == "global":
                k = self.constant_int(node.slice)
                if not self.fn.kernel:
                    raise fail(self.path, node, "an array's shape inside a device function is outside the subset; "
                                                "pass the size as an argument")
                return Ex(f"{arr}_shape{k}", I64)
            raise fail(self.path, node, f"{ast.unparse(node)}: only a kernel's array parameters have .shape here")
        if isinstance(v, ast.Name) and v.id not in self.params and v.id not in self.locals \
                and isinstance(vars(self.dev.module).get(v.id), tuple):
            value = vars(self.dev.module)[v.id][self.constant_int(node.slice)]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise fail(self.path, node, f"{ast.unparse(node)} is not a number")
            return Ex(str(value) if isinstance(value, int) else float_literal(value), I64 if isinstance(value, int) else F64)
        ref, elem = self.element(node)
        return Ex(self.d.read(ref, elem), ACC if elem == T else elem)

    def element(self, node: ast.Subscript) -> tuple[str, str]:
        """The C lvalue of an array element, and the array's element type."""
        if not isinstance(node.value, ast.Name):
            self.expr(node.value)  # a list or another construct outside the subset is named as such
            raise fail(self.path, node, f"{ast.unparse(node)}: only named arrays can be indexed")
        arr = self.name_(node.value)
        if not isinstance(arr.type, Arr):
            raise fail(self.path, node, f"{ast.unparse(node.value)} is not an array")
        t = arr.type
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(index) != t.ndim:
            raise fail(self.path, node, f"{ast.unparse(node)}: {len(index)} indices into a {t.ndim}-D array "
                                        "(a view of part of an array is outside the subset)")
        codes = []
        for i in index:
            if isinstance(i, ast.UnaryOp) and isinstance(i.op, ast.USub) and isinstance(i.operand, ast.Constant):
                raise fail(self.path, i, "a negative index counts from the end in numba; outside the subset "
                                         "(write the index from the start)")
            e = self.expr(i)
            if e.type not in INTS:
                raise fail(self.path, i, f"index {ast.unparse(i)} is a {e.type}, not an int")
            codes.append(e)
        if t.space == "global":
            if t.ndim == 1:
                return f"{arr.code}[{codes[0].code}]", t.elem
            terms = [f"{self.paren(c, 13)} * {arr.code}_stride{k}" for k, c in enumerate(codes)]
            return f"{arr.code}[{' + '.join(terms)}]", t.elem
        return arr.code + "".join(f"[{c.code}]" for c in codes), t.elem

    def arith(self, op: ast.operator, a: Ex, b: Ex, node: ast.AST) -> Ex:
        for e, side in ((a, "left"), (b, "right")):
            if not isinstance(e.type, str):
                raise fail(self.path, node, f"arithmetic on an array or tuple ({side} of {ast.unparse(node)}) "
                                            "is outside the subset")
        if isinstance(op, ast.FloorDiv):
            if a.type in INTS and b.type in INTS:
                self.dev.helpers.add("py_floordiv")
                return Ex(f"py_floordiv({a.code}, {b.code})", I64)
            t = unify(a.type, b.type)
            return Ex(f"floor({self.cast(a, t).code} / {self.paren(self.cast(b, t), 14)})", t)
        if isinstance(op, ast.Mod):
            if a.type in INTS and b.type in INTS:
                self.dev.helpers.add("py_mod")
                return Ex(f"py_mod({a.code}, {b.code})", I64)
            raise fail(self.path, node, "% on floats is outside the subset (Python's sign rule differs from fmod)")
        if isinstance(op, ast.Pow):
            if a.type in INTS and b.type in INTS:
                raise fail(self.path, node, "** on two ints is outside the subset; multiply, or use a float")
            base = a if a.type in FLOATS else self.cast(a, F64)
            if b.type in INTS and _is_int_literal(b.code):
                return Ex(f"pow({base.code}, {b.code})", base.type)
            t = unify(base.type, b.type)
            return Ex(f"pow({self.cast(base, t).code}, {self.cast(b, t).code})", t)
        if type(op) not in BINOP:
            raise fail(self.path, node, f"the operator {type(op).__name__} is outside the subset")
        sym, prec = BINOP[type(op)]
        if sym in ("&", "|", "^", "<<", ">>"):
            if a.type not in INTS or b.type not in INTS:
                raise fail(self.path, node, f"{sym} needs ints")
            return Ex(f"{self.paren(a, prec)} {sym} {self.paren(b, prec + 1)}", I64, prec)
        if sym == "/":
            if a.type in INTS and b.type in INTS:
                return Ex(f"double({a.code}) / {self.paren(b, prec + 1)}", F64, prec)
            t = unify(a.type, b.type)
        else:
            t = unify(a.type, b.type)
        if t in FLOATS:
            # C would compute float op int64 in float; numba computes it in double.
            a = self.cast(a, F64) if a.type in INTS and t == F64 else a
            b = self.cast(b, F64) if b.type in INTS and t == F64 else b
        return Ex(f"{self.paren(a, prec)} {sym} {self.paren(b, prec + 1)}", t, prec)

    def unary(self, node: ast.UnaryOp) -> Ex:
        e = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return Ex(f"!{self.paren(self.cond(node.operand), 15)}", BOOL, 15)
        if not isinstance(e.type, str):
            raise fail(self.path, node, "a unary operator on an array or tuple")
        if isinstance(node.op, ast.USub):
            return Ex(f"-{self.paren(e, 15)}", I64 if e.type == BOOL else e.type, 15)
        if isinstance(node.op, ast.UAdd):
            return e
        return Ex(f"~{self.paren(e, 15)}", I64, 15)

    def compare(self, node: ast.Compare) -> Ex:
        terms = []
        left = self.expr(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if type(op) not in CMPOP:
                raise fail(self.path, node, f"the comparison {type(op).__name__} is outside the subset")
            sym, prec = CMPOP[type(op)]
            a, b = left, right
            if isinstance(a.type, str) and isinstance(b.type, str):
                # numba compares float32 with int64 as doubles; small int literals compare exactly as they are.
                if a.type in FLOATS and b.type in INTS and not _small_literal(b.code):
                    b = self.cast(b, F64)
                if b.type in FLOATS and a.type in INTS and not _small_literal(a.code):
                    a = self.cast(a, F64)
            terms.append(f"{self.paren(a, prec)} {sym} {self.paren(b, prec + 1)}")
            left = right
        if len(terms) == 1:
            return Ex(terms[0], BOOL, CMPOP[type(node.ops[0])][1])
        return Ex(" && ".join(f"({t})" for t in terms), BOOL, 5)

    # -- calls ------------------------------------------------------------------------------

    def call(self, node: ast.Call, statement: bool = False) -> Ex:
        f = node.func
        if node.keywords and _cuda_attr(f) not in ("syncwarp",):
            raise fail(self.path, node, f"keyword arguments in {ast.unparse(f)}() are outside the subset")
        attr = _cuda_attr(f)
        if attr in SYNC:
            return Ex(SYNC[attr], BOOL)
        if attr == "syncwarp":
            mask = self.expr(node.args[0]).code if node.args else "0xffffffffu"
            return Ex(f"__syncwarp({mask})", BOOL)
        if attr in ("grid", "gridsize"):
            parts = self.parts(node)
            assert parts is not None
            if len(parts) != 1:
                raise fail(self.path, node, f"cuda.{attr}({len(parts)}) is a tuple: unpack it (x, y = cuda.{attr}(2))")
            return parts[0]
        if attr in SHUFFLE:
            args = [self.expr(a) for a in node.args]
            if len(args) != 3:
                raise fail(self.path, node, f"cuda.{attr} takes (mask, value, lane or delta)")
            return Ex(f"{SHUFFLE[attr]}({args[0].code}, {args[1].code}, {args[2].code})", args[1].type)
        if attr in VOTE:
            args = [self.expr(a) for a in node.args]
            return Ex(f"({VOTE[attr]}({args[0].code}, {args[1].code}) != 0)", BOOL, 16)
        if attr == "ballot_sync":
            args = [self.expr(a) for a in node.args]
            return Ex(f"int64_t(__ballot_sync({args[0].code}, {args[1].code}))", I64)
        if attr == "activemask":
            return Ex("int64_t(__activemask())", I64)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and f.value.attr == "atomic" \
                and _cuda_attr(f.value) == "atomic":
            return self.atomic(node, f.attr)
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "math":
            return self.math(node, f.attr)
        if isinstance(f, ast.Name):
            if f.id in self.dev.functions:
                return self.device_call(node, f.id)
            if f.id in ("min", "max"):
                return self.minmax(node, f.id)
            if f.id == "abs":
                e = self.expr(node.args[0])
                return Ex(f"llabs({e.code})", I64) if e.type in INTS else Ex(f"fabs({e.code})", e.type)
            if f.id in ("float", "int", "bool"):
                e = self.expr(node.args[0])
                to = {"float": F64, "int": I64, "bool": BOOL}[f.id]
                return Ex(f"{self.spell(to)}({e.code})", to)
            if f.id == "range":
                raise fail(self.path, node, "range() is only in the subset as for ... in range(...)")
            if f.id == self.fn.type_param:
                return Ex(f"{self.spell(ACC)}({self.expr(node.args[0]).code})", ACC)
        kind = None
        try:
            kind = scalar_kind(self.dev.global_value(f))
        except (KeyError, AttributeError):
            pass
        if kind is not None and len(node.args) == 1:
            e = self.expr(node.args[0])
            return Ex(f"{self.spell(kind)}({e.code})", kind)
        raise fail(self.path, node, f"{ast.unparse(f)}() is outside the subset translate reads (math.*, min, max, abs, "
                                    "float, int, cuda.* intrinsics, and this file's @cuda.jit(device=True) functions)")

    def math(self, node: ast.Call, name: str) -> Ex:
        args = [self.expr(a) for a in node.args]
        if any(not isinstance(a.type, str) for a in args):
            raise fail(self.path, node, f"math.{name} of an array")
        floats = [a if a.type in FLOATS else self.cast(a, F64) for a in args]
        if name in MATH and len(args) == 1:
            return Ex(f"{name}({floats[0].code})", floats[0].type)
        if name == "gamma":
            return Ex(f"tgamma({floats[0].code})", floats[0].type)
        if name in ("floor", "ceil", "trunc"):
            if args[0].type in INTS:
                return args[0]
            return Ex(f"int64_t({name}({args[0].code}))", I64)
        if name in ("isnan", "isinf", "isfinite"):
            if args[0].type in INTS:
                return Ex("true" if name == "isfinite" else "false", BOOL)
            return Ex(f"{name}({args[0].code})", BOOL)
        if name in MATH2 and len(args) == 2:
            t = unify(floats[0].type, floats[1].type)
            return Ex(f"{name}({self.cast(floats[0], t).code}, {self.cast(floats[1], t).code})", t)
        raise fail(self.path, node, f"math.{name} is outside the subset translate reads")

    def minmax(self, node: ast.Call, name: str) -> Ex:
        args = [self.expr(a) for a in node.args]
        if len(args) < 2 or any(not isinstance(a.type, str) for a in args):
            raise fail(self.path, node, f"{name}() of scalars (two or more) is in the subset; not of an array")
        t = args[0].type
        for a in args[1:]:
            t = unify(t, a.type)
        self.dev.helpers.add(f"py_{name}")
        code = self.cast(args[0], t).code
        for a in args[1:]:
            code = f"py_{name}({code}, {self.cast(a, t).code})"
        return Ex(code, t)

    def atomic(self, node: ast.Call, op: str) -> Ex:
        if op not in ATOMIC or len(node.args) != 3:
            raise fail(self.path, node, f"cuda.atomic.{op} is outside the subset (add, sub, max, min, exch, and_, or_, "
                                        "xor with (array, index, value))")
        arr_node, idx, val_node = node.args
        target = ast.Subscript(value=arr_node, slice=idx, ctx=ast.Load())
        ast.copy_location(target, node)
        ref, elem = self.element(target)
        value = self.expr(val_node)
        if elem == T and self.d.half and op in ("add", "sub"):
            v = self.d.write(value.code if op == "add" else f"-{self.paren(value, 15)}", elem)
            return Ex(self.d.read(f"atomicAdd(&{ref}, {v})", elem), ACC)
        if elem in (F32, F64, T, ACC) and op in ("add", "sub"):
            v = value.code if op == "add" else f"-{self.paren(value, 15)}"
            return Ex(f"atomicAdd(&{ref}, {self.d.elem(elem)}({v}))", ACC if elem == T else elem)
        if elem == I64:
            if op == "add" or op == "sub":
                v = value.code if op == "add" else f"-{self.paren(value, 15)}"
                return Ex(f"int64_t(atomicAdd(reinterpret_cast<unsigned long long*>(&{ref}), "
                          f"static_cast<unsigned long long>({v})))", I64)
            if op in ("max", "min"):
                return Ex(f"int64_t({ATOMIC[op]}(reinterpret_cast<long long*>(&{ref}), static_cast<long long>("
                          f"{value.code})))", I64)
            if op in ("exch", "and_", "or_", "xor"):
                return Ex(f"int64_t({ATOMIC[op]}(reinterpret_cast<unsigned long long*>(&{ref}), "
                          f"static_cast<unsigned long long>({value.code})))", I64)
        if op == "exch" and elem in (F32, T) and not (elem == T and self.d.templated):
            return Ex(f"atomicExch(&{ref}, {value.code})", ACC if elem == T else elem)
        # CUDA C has no atomicMax/Min on floating point; numba builds it from compare-and-swap.
        self.dev.todos.append(f"numba_kernel.py:{node.lineno}: cuda.atomic.{op} on a {elem} array")
        self.w.emit(f"// TODO(brrr translate): numba_kernel.py:{node.lineno} cuda.atomic.{op} on floating point has no "
                    "CUDA C intrinsic; write a compare-and-swap loop (atomicCAS)")
        return Ex(f"atomic_{op}_todo(&{ref}, {value.code})", ACC if elem == T else elem)

    def device_call(self, node: ast.Call, name: str) -> Ex:
        fn = self.dev.functions[name]
        if fn.kernel:
            raise fail(self.path, node, f"{name} is a kernel; calling a kernel from a kernel is outside the subset")
        params = [a.arg for a in fn.node.args.args]
        if len(node.args) != len(params):
            raise fail(self.path, node, f"{name}() takes {len(params)} arguments, got {len(node.args)}")
        args = [self.expr(a) for a in node.args]
        types: dict[str, Type] = {}
        for p, a in zip(params, args):
            t = a.type
            if isinstance(t, Arr) and t.space == "global":
                t = Arr(t.elem, t.ndim, "global")
            types[p] = t
        inst = self.dev.instance(name, types, node)
        if inst.templated:
            self.uses_t = True
        codes = []
        for a in args:
            codes.append(a.code)
            if isinstance(a.type, Arr) and a.type.space == "global" and a.type.ndim > 1:
                codes += [f"{a.code}_stride{k}" for k in range(a.type.ndim)]
        targs = "<T>" if inst.templated and self.d.templated else ""
        return Ex(f"{name}{targs}({', '.join(codes)})", inst.returns if inst.returns is not None else BOOL)


def _has_t(t: Type | None) -> bool:
    if isinstance(t, Arr):
        return t.elem == T
    if isinstance(t, Tup):
        return any(_has_t(x) for x in t.items)
    return t == ACC


def _cuda_attr(node: ast.AST) -> str | None:
    """'grid' for cuda.grid, 'atomic' for cuda.atomic, 'shared' for cuda.shared, ..."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "cuda":
        return node.attr
    return None


def _array_constructor(call: ast.Call) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr == "array" and _cuda_attr(f.value) in ("shared", "local")


def _load(target: ast.expr) -> ast.expr:
    copy = ast.parse(ast.unparse(target), mode="eval").body
    for n in ast.walk(copy):
        if hasattr(n, "lineno"):
            ast.copy_location(n, target)
    return copy


def _is_int_literal(code: str) -> bool:
    return code.lstrip("-").isdigit() or code.lower().startswith("0x")


def _small_literal(code: str) -> bool:
    return code.lstrip("-").isdigit() and abs(int(code)) <= 2**24


def _names(code: str) -> set[str]:
    import re

    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", code))


__all__ = ["Arr", "Device", "Ex", "HELPERS", "Instance", "JitFunction", "Tup", "Type", "F32", "F64"]
