"""`brrr translate`, host side: numba_kernel.py's forward and backward (and the helpers they call) as
binding.cpp's functions on at::Tensor, and each launch as a call of a launcher in kernel.cu.

The subset is what the built-in ops' host code does: checks that raise, .contiguous(), views,
torch.empty/empty_like/zeros/zeros_like, shapes, sizes and ints, tuples, and launches. The spec adds
what numba's Python leaves implicit: each tensor argument is checked to be a CUDA tensor, on one
device, and the launches run on torch's current stream.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch

from ..op.spec import OpSpec
from .common import AT_DTYPE, BOOL, F64, I64, INTS, TORCH_KIND, Dtypes, ExprDispatch, Writer, declarations, fail, number
from .device import Arr, Device, docstring

NONE, STR, DTYPE, DEVICE = "none", "str", "dtype", "device"


@dataclass(frozen=True)
class Tensor:
    dtype: Any  # "T" (the op's dtype, dispatched) or a fixed torch.dtype


@dataclass(frozen=True)
class Shape:
    tensor: str  # C code of the tensor whose .shape this is


@dataclass(frozen=True)
class HTuple:
    items: tuple[Any, ...]


@dataclass(frozen=True)
class Dtype:
    of: Any  # "T" or a torch.dtype


HType = str | Tensor | Shape | HTuple | Dtype


@dataclass(frozen=True)
class HEx:
    code: str
    type: HType
    prec: int = 16


@dataclass
class Launcher:
    name: str
    kernel: str
    params: list[str]  # C declarations, without the stream
    templated: bool


@dataclass
class HostFunction:
    name: str
    lineno: int
    lines: list[str]


@dataclass
class Host:
    """binding.cpp's pieces, gathered while translating."""

    path: Path
    source: str
    module: Any
    spec: OpSpec
    dev: Device
    dtypes: Dtypes
    constants: dict[str, str] = field(default_factory=dict)
    helpers: set[str] = field(default_factory=set)
    includes: set[str] = field(default_factory=set)
    launchers: dict[tuple[str, tuple[Any, ...]], Launcher] = field(default_factory=dict)
    functions: dict[tuple[str, tuple[Any, ...]], HostFunction] = field(default_factory=dict)
    returns: dict[tuple[str, tuple[Any, ...]], HType | None] = field(default_factory=dict)
    active: list[str] = field(default_factory=list)
    forward_returns: tuple[HType, ...] = ()
    launch_blocks: list[ast.expr] = field(default_factory=list)  # each launch's block, as numba_kernel.py wrote it

    def __post_init__(self) -> None:
        self.tree = ast.parse(self.source)
        self.defs = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}

    def scalar(self, dtype: Any) -> str:
        """The scalar_t spelling binding.cpp passes to brrr::data for a tensor of this dtype."""
        if dtype == "T":
            return "scalar_t" if self.dtypes.templated else {torch.float32: "float", torch.float64: "double",
                                                              torch.float16: "at::Half",
                                                              torch.bfloat16: "at::BFloat16"}[self.dtypes.dtypes[0]]
        return {torch.float32: "float", torch.float64: "double", torch.int64: "int64_t", torch.int32: "int32_t",
                torch.bool: "bool"}[dtype]

    def dispatch(self) -> str:
        """AT_DISPATCH over float and double plus the 16-bit types the spec lists."""
        extra = [AT_DTYPE[d] for d in (torch.float16, torch.bfloat16) if d in self.dtypes.dtypes]
        if not extra:
            return "AT_DISPATCH_FLOATING_TYPES"
        if len(extra) == 1:
            return "AT_DISPATCH_FLOATING_TYPES_AND"
        return "AT_DISPATCH_FLOATING_TYPES_AND2"

    def dispatch_extra(self) -> str:
        extra = [AT_DTYPE[d] for d in (torch.float16, torch.bfloat16) if d in self.dtypes.dtypes]
        return "".join(f"{e}, " for e in extra)

    def function(self, name: str, types: list[HType], node: ast.AST) -> tuple[str, HType | None]:
        key = (name, tuple(types))
        if key not in self.returns:
            if name in self.active:
                raise fail(self.path, node, f"{name}() calls itself; recursion is outside the subset")
            self.active.append(name)
            try:
                fn = HostEmitter(self, self.defs[name], dict(zip([a.arg for a in self.defs[name].args.args], types)))
                ret = fn.run()
                self.returns[key] = ret
                params = ", ".join(f"{self.spell(t)} {p}" for p, t in fn.params.items())
                head = f"static {self.spell(ret) if ret is not None else 'void'} {name}({params}) {{"
                self.functions[key] = HostFunction(name, self.defs[name].lineno,
                                                   [f"// numba_kernel.py:{self.defs[name].lineno}", head]
                                                   + fn.w.lines + ["}"])
            finally:
                self.active.pop()
        return name, self.returns[key]

    def spell(self, t: HType | None) -> str:
        if isinstance(t, Tensor):
            return "at::Tensor"
        if isinstance(t, HTuple):
            if all(i in INTS for i in t.items):
                return f"std::array<int64_t, {len(t.items)}>"
            return f"std::tuple<{', '.join(self.spell(i) for i in t.items)}>"
        if t == I64:
            return "int64_t"
        if t == F64:
            return "double"
        if t == BOOL:
            return "bool"
        if isinstance(t, Dtype):
            return "at::ScalarType"
        if isinstance(t, Shape):
            return "at::IntArrayRef"
        return "auto"


class HostEmitter(ExprDispatch):
    def __init__(self, host: Host, node: ast.FunctionDef, params: dict[str, HType]) -> None:
        self.h, self.node, self.params = host, node, params
        self.path = host.path
        self.locals: dict[str, HType] = dict(params)
        self.declared: set[str] = set(params)
        self.w = Writer(host.dev.notes)
        self.returns: HType | None = None

    def run(self, prologue: list[str] | None = None) -> HType | None:
        body = [s for s in self.node.body if not docstring(s)]
        self.in_place, self.hoisted = declarations(body, set(self.params))
        for line in prologue or []:
            self.w.emit(line)
        if self.hoisted:
            # Types of names first assigned inside a branch: a dry run over the body finds them.
            dry = HostEmitter(self.h, self.node, self.params)
            dry.in_place, dry.hoisted = self.in_place | self.hoisted, set()
            dry.block(body, self.node.lineno + 1)
            for n in sorted(self.hoisted):
                if n in dry.locals:
                    self.w.emit(f"{self.h.spell(dry.locals[n])} {n};")
                    self.locals[n] = dry.locals[n]
                    self.declared.add(n)
        self.block(body, self.node.lineno + 1)
        return self.returns

    # -- statements --------------------------------------------------------------------------

    def block(self, stmts: list[ast.stmt], since: int) -> None:
        for s in stmts:
            self.w.leading(s.lineno, since)
            since = (s.end_lineno or s.lineno) + 1
            self.statement(s)

    def nested(self, stmts: list[ast.stmt], since: int) -> None:
        self.w.depth += 1
        self.block(stmts, since)
        self.w.depth -= 1

    def line(self, s: ast.stmt, text: str) -> None:
        # A compound statement's own comments are those on its header, not on its body's lines.
        last = max(s.lineno, s.body[0].lineno - 1) if getattr(s, "body", None) else (s.end_lineno or s.lineno)
        self.w.emit(text + self.w.trailing(s.lineno, last))

    def statement(self, s: ast.stmt) -> None:
        if docstring(s) or isinstance(s, ast.Pass):
            return
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            self.assign(s, s.targets[0], s.value)
        elif isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            value = self.expr(ast.BinOp(left=ast.Name(id=s.target.id, ctx=ast.Load()), op=s.op, right=s.value,
                                        lineno=s.lineno, col_offset=s.col_offset))
            self.line(s, f"{s.target.id} = {value.code};")
        elif isinstance(s, ast.If):
            self.if_(s)
        elif isinstance(s, ast.Raise):
            self.line(s, f"TORCH_CHECK(false, {self.message(s)});")
        elif isinstance(s, ast.Return):
            self.return_(s)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            if self.is_launch(s.value):
                self.launch(s, s.value)
            else:
                self.line(s, f"{self.expr(s.value).code};")
        else:
            raise fail(self.path, s, f"{type(s).__name__.lower()} statements in forward/backward are outside the "
                                     "subset translate reads (assignments, if, raise, return, calls, launches)")

    def assign(self, s: ast.stmt, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.bind(s, target.id, self.expr(value))
        elif isinstance(target, ast.Tuple):
            self.unpack(s, target, value)
        else:
            raise fail(self.path, s, f"assignment to {ast.unparse(target)} is outside the subset on the host")

    def bind(self, s: ast.stmt, name: str, e: HEx) -> None:
        if name in self.declared:
            if name in self.params and self.locals[name] != e.type and not (
                    isinstance(e.type, Tensor) and isinstance(self.locals[name], Tensor)):
                raise fail(self.path, s, f"{name} changes type here ({self.locals[name]} to {e.type}); outside the subset")
            self.locals[name] = e.type
            self.line(s, f"{name} = {e.code};")
            return
        self.locals[name] = e.type
        self.declared.add(name)
        spelled = "auto" if isinstance(e.type, (Tensor, HTuple)) and not e.code.startswith("std::array") \
            else self.h.spell(e.type)
        if isinstance(e.type, HTuple) and e.code.startswith("std::array"):
            spelled = "const auto"
        self.line(s, f"{spelled} {name} = {e.code};")

    def unpack(self, s: ast.stmt, target: ast.Tuple, value: ast.expr) -> None:
        parts = self.parts(value, len(target.elts), s)
        if parts is not None:
            # Python evaluates every value before it assigns any name: a later value reading an earlier
            # target needs the values in temporaries first.
            earlier = [{n.id for n in ast.walk(t) if isinstance(n, ast.Name)} for t in target.elts]
            clash = any(n in earlier[i] for j, p in enumerate(parts) for i in range(j) for n in _words(p.code))
            if clash:
                tmp = []
                for t, p in zip(target.elts, parts):
                    n = f"{ast.unparse(t).replace(', ', '_').strip('()')}_next"
                    self.w.emit(f"const {self.h.spell(p.type) if not isinstance(p.type, Tensor) else 'at::Tensor'} "
                                f"{n} = {p.code};")
                    tmp.append(HEx(n, p.type))
                parts = tmp
            for t, p in zip(target.elts, parts):
                if isinstance(t, ast.Name):
                    self.bind(s, t.id, p)
                elif isinstance(t, ast.Tuple):
                    self.unpack_value(s, t, p)
                else:
                    raise fail(self.path, s, "unpacking into this target is outside the subset")
            return
        self.unpack_value(s, target, self.expr(value))

    def unpack_value(self, s: ast.stmt, target: ast.Tuple, e: HEx) -> None:
        if isinstance(e.type, Shape):
            parts = [HEx(f"{e.type.tensor}.size({k})", I64) for k in range(len(target.elts))]
            self.line(s, f"TORCH_CHECK({e.type.tensor}.dim() == {len(parts)}, \"{e.type.tensor} must have "
                         f"{len(parts)} dimensions, got shape \", {e.type.tensor}.sizes());")
            for t, p in zip(target.elts, parts):
                if not isinstance(t, ast.Name):
                    raise fail(self.path, s, "unpacking a shape into anything but names")
                self.bind(s, t.id, p)
            return
        if not isinstance(e.type, HTuple) or len(e.type.items) != len(target.elts):
            raise fail(self.path, s, f"cannot unpack {e.code} into {len(target.elts)} names")
        names = [t.id for t in target.elts if isinstance(t, ast.Name)]
        if len(names) != len(target.elts):
            raise fail(self.path, s, "nested unpacking of a call's result is outside the subset")
        if all(n not in self.declared for n in names):
            for n, t in zip(names, e.type.items):
                self.locals[n] = t
                self.declared.add(n)
            self.line(s, f"auto [{', '.join(names)}] = {e.code};")
            return
        tmp = "_".join(names) + "_r"
        self.line(s, f"const auto {tmp} = {e.code};")
        for i, (n, t) in enumerate(zip(names, e.type.items)):
            get = f"{tmp}[{i}]" if self.h.spell(e.type).startswith("std::array") else f"std::get<{i}>({tmp})"
            self.bind(s, n, HEx(get, t))

    def parts(self, value: ast.expr, count: int, s: ast.stmt) -> list[HEx] | None:
        if isinstance(value, ast.Tuple):
            if len(value.elts) != count:
                raise fail(self.path, s, f"unpacking {len(value.elts)} values into {count} names")
            return [self.expr(v) for v in value.elts]
        return None

    def if_(self, s: ast.If) -> None:
        if len(s.body) == 1 and isinstance(s.body[0], ast.Raise) and not s.orelse:
            self.line(s, f"TORCH_CHECK({_macro_arg(self.negate(s.test))}, {self.message(s.body[0])});")
            return
        self.line(s, f"if ({self.cond(s.test)}) {{")
        self.nested(s.body, s.lineno + 1)
        if s.orelse:
            if len(s.orelse) == 1 and isinstance(s.orelse[0], ast.If):
                self.w.emit("} else {")
                self.nested(s.orelse, s.body[-1].end_lineno + 1)
            else:
                self.w.emit("} else {")
                self.nested(s.orelse, s.body[-1].end_lineno + 1)
        self.w.emit("}")

    def cond(self, node: ast.expr) -> str:
        e = self.expr(node)
        if isinstance(e.type, Tensor):
            raise fail(self.path, node, f"{ast.unparse(node)} is a tensor; its truth value is outside the subset")
        return e.code

    def negate(self, node: ast.expr) -> str:
        inverse = {ast.Lt: ">=", ast.LtE: ">", ast.Gt: "<=", ast.GtE: "<", ast.Eq: "!=", ast.NotEq: "=="}
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in inverse:
            flipped = ast.Compare(left=node.left, ops=[{">=": ast.GtE(), ">": ast.Gt(), "<=": ast.LtE(), "<": ast.Lt(),
                                                        "!=": ast.NotEq(), "==": ast.Eq()}[inverse[type(node.ops[0])]]],
                                  comparators=node.comparators)
            ast.copy_location(flipped, node)
            return self.expr(flipped).code
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return self.cond(node.operand)
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            return " && ".join(_wrap(self.negate(v)) for v in node.values)
        return f"!({self.cond(node)})"

    def message(self, s: ast.Raise) -> str:
        exc = s.exc
        if not (isinstance(exc, ast.Call) and len(exc.args) == 1):
            return json.dumps(f"numba_kernel.py:{s.lineno} raised {ast.unparse(exc) if exc else 'an exception'}")
        arg = exc.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return json.dumps(arg.value)
        if isinstance(arg, ast.JoinedStr):
            pieces = []
            for v in arg.values:
                if isinstance(v, ast.Constant):
                    pieces.append(json.dumps(v.value))
                elif isinstance(v, ast.FormattedValue):
                    pieces.append(_macro_arg(self.printable(v.value)))
            return ", ".join(pieces)
        return self.printable(arg)

    def printable(self, node: ast.expr) -> str:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "tuple" and node.args:
            node = node.args[0]
        e = self.expr(node)
        if isinstance(e.type, Shape):
            return f"{e.type.tensor}.sizes()"
        return e.code

    def return_(self, s: ast.Return) -> None:
        if s.value is None:
            self.line(s, "return;")
            return
        if isinstance(s.value, ast.Tuple):
            parts = [self.expr(v) for v in s.value.elts]
            t: HType = HTuple(tuple(p.type for p in parts))
            self.line(s, f"return {{{', '.join(p.code for p in parts)}}};")
        else:
            e = self.expr(s.value)
            t = e.type
            self.line(s, f"return {e.code};")
        if self.returns is not None and self.h.spell(self.returns) != self.h.spell(t):
            raise fail(self.path, s, "returns of different types in one function are outside the subset")
        self.returns = t

    # -- launches ----------------------------------------------------------------------------

    def is_launch(self, call: ast.Call) -> bool:
        f = call.func
        return (isinstance(f, ast.Name) and f.id == "launch") or isinstance(f, ast.Subscript)

    def launch(self, s: ast.stmt, call: ast.Call) -> None:
        f = call.func
        if isinstance(f, ast.Subscript):  # kernel[grid, block](...)
            config = f.slice.elts if isinstance(f.slice, ast.Tuple) else [f.slice]
            if len(config) != 2:
                raise fail(self.path, call, "kernel[grid, block, stream, shared] launches are outside the subset; "
                                            "use kernel[grid, block](...) or launch(kernel, grid, block, ...)")
            kernel_node, grid, block, args = f.value, config[0], config[1], call.args
        else:
            if len(call.args) < 3:
                raise fail(self.path, call, "launch(kernel, grid, block, *args) needs a kernel, a grid and a block")
            kernel_node, grid, block, args = call.args[0], call.args[1], call.args[2], call.args[3:]
            for k in call.keywords:
                if not (k.arg == "shared_bytes" and isinstance(k.value, ast.Constant) and k.value.value == 0):
                    raise fail(self.path, call, "dynamic shared memory (shared_bytes=) is outside the subset")
        name = self.kernel_name(kernel_node)
        fn = self.h.dev.functions[name]
        values: list[HEx] = []
        for a in args:
            if isinstance(a, ast.Starred):
                e = self.expr(a.value)
                if not isinstance(e.type, HTuple):
                    raise fail(self.path, a, f"*{ast.unparse(a.value)} must be a tuple")
                spelled = self.h.spell(e.type)
                values += [HEx(f"{e.code}[{i}]" if spelled.startswith("std::array") else f"std::get<{i}>({e.code})", t)
                           for i, t in enumerate(e.type.items)]
            else:
                values.append(self.expr(a))
        params = [p.arg for p in fn.node.args.args]
        if len(params) != len(values):
            raise fail(self.path, call, f"{name} takes {len(params)} arguments, the launch passes {len(values)}")
        usage = self.h.dev.usage[name]
        types: dict[str, Any] = {}
        dispatch = None
        for p, v in zip(params, values):
            if isinstance(v.type, Tensor):
                elem = "T" if v.type.dtype == "T" else TORCH_KIND.get(v.type.dtype)
                if elem is None:
                    raise fail(self.path, call, f"{p}: a {v.type.dtype} tensor; translate passes float, double and "
                                                "int tensors to kernels")
                types[p] = Arr(elem, usage.ndim.get(p, 1), "global")
                if v.type.dtype == "T" and dispatch is None:
                    root = re.match(r"[A-Za-z_]\w*", v.code)
                    dispatch = root.group() if root and isinstance(self.locals.get(root.group()), Tensor) else v.code
            elif v.type in (I64, F64, BOOL):
                types[p] = v.type
            else:
                raise fail(self.path, call, f"{p}: cannot pass {v.code} ({v.type}) to a kernel")
        inst = self.h.dev.instance(name, types, call)
        launcher = self.launcher(name, inst)
        pre: list[str] = []
        codes = [self.dims(grid), self.dims(block)]
        self.h.launch_blocks.append(block)
        for p, v in zip(params, values):
            t = types[p]
            if isinstance(t, Arr):
                tensor = v.code
                shapes = sorted(usage.shape.get(p, ()))
                if not _simple(tensor) and (t.ndim > 1 or shapes):
                    pre.append(f"const at::Tensor {p}_arg = {tensor};")
                    tensor = f"{p}_arg"
                scalar = self.h.scalar(v.type.dtype)  # type: ignore[union-attr]
                self.h.helpers.add("array_arg")
                ndim = t.ndim if p in usage.ndim else -1  # a kernel that never indexes it takes any shape
                codes.append(f"array_arg<{scalar}>({tensor}, {ndim}, {json.dumps(v.code)})")
                if t.ndim > 1:
                    codes += [f"{tensor}.stride({k})" for k in range(t.ndim)]
                codes += [f"{tensor}.size({k})" for k in shapes]
            else:
                codes.append(v.code)
        codes.append("brrr::stream()")
        text = f"{launcher.name}({', '.join(codes)});"
        self.w.leading(s.lineno, s.lineno)
        self.w.emit(f"// {ast.unparse(call)}")
        for line in pre:
            self.w.emit(line)
        if launcher.templated and self.h.dtypes.templated:
            if dispatch is None:
                raise fail(self.path, call, f"{name} is templated on the dtype but no tensor of the op's dtype is passed")
            self.line(s, f"{self.h.dispatch()}({self.h.dispatch_extra()}{dispatch}.scalar_type(), \"{name}\", [&] {{")
            self.w.depth += 1
            self.w.emit(_wrap_call(text, self.w.depth))
            self.w.depth -= 1
            self.w.emit("});")
        else:
            self.line(s, _wrap_call(text, self.w.depth))
        self.w.emit("BRRR_CHECK_LAUNCH();")

    def kernel_name(self, node: ast.expr) -> str:
        functions = self.h.dev.functions
        if isinstance(node, ast.Name) and node.id in functions and functions[node.id].kernel \
                and functions[node.id].type_param is None:
            return node.id
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions \
                and functions[node.func.id].type_param is not None and len(node.args) == 1:
            arg = node.args[0]
            # SCALAR[x.dtype]: a module dict from torch dtypes to the numba types of the same name.
            if isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name) and isinstance(arg.slice, ast.Attribute) \
                    and arg.slice.attr == "dtype":
                table = vars(self.h.module).get(arg.value.id)
                ok = isinstance(table, dict) and all(isinstance(k, torch.dtype) and str(k).removeprefix("torch.") == str(v)
                                                     for k, v in table.items())
                tensor = self.expr(arg.slice.value)
                if ok and isinstance(tensor.type, Tensor) and tensor.type.dtype == "T":
                    return node.func.id
            raise fail(self.path, node, f"{ast.unparse(node)}: a kernel factory is translated when called with the "
                                        "numba type of the op's dtype, as NAME[x.dtype] (NAME a dict torch dtype -> "
                                        "numba type)")
        raise fail(self.path, node, f"{ast.unparse(node)} is not a @cuda.jit kernel of this file")

    def launcher(self, name: str, inst: Any) -> Launcher:
        key = (name, tuple(inst.params.values()))
        if key not in self.h.launchers:
            host_names = set(self.h.defs) | set(self.h.dev.functions)
            base = name.removesuffix("_kernel") if name.endswith("_kernel") else ""
            lname = base if base and base not in host_names else f"{name}_launch"
            emitter_params = []
            for p, t in inst.params.items():
                from .device import Emitter

                e = Emitter(self.h.dev, name, inst.params)
                emitter_params += e.param_decl(p, t, kernel=False).split(", ")
            self.h.launchers[key] = Launcher(lname, name, ["dim3 grid", "dim3 block"] + emitter_params, inst.templated)
        return self.h.launchers[key]

    def dims(self, node: ast.expr) -> str:
        e = self.expr(node)
        self.h.helpers.add("launch_dims")
        if e.type in INTS:
            return f"launch_dims({e.code})"
        if isinstance(e.type, HTuple) and all(i in INTS for i in e.type.items) and 1 <= len(e.type.items) <= 3:
            if e.code.startswith("std::array"):
                return f"launch_dims({e.code[e.code.index('{') + 1:-1]})"
            return f"launch_dims({e.code})"
        raise fail(self.path, node, f"{ast.unparse(node)} is not a launch geometry (an int or a tuple of up to three)")

    # -- expressions -------------------------------------------------------------------------

    EXPR_METHODS: ClassVar[dict[type[ast.expr], str]] = {
        ast.Constant: "literal", ast.Name: "name_", ast.Attribute: "attribute", ast.Subscript: "subscript",
        ast.Call: "call", ast.Tuple: "tuple_", ast.BinOp: "binop", ast.UnaryOp: "unary", ast.BoolOp: "boolop",
        ast.Compare: "compare", ast.IfExp: "ifexp"}

    def outside(self, node: ast.expr) -> HEx:
        if isinstance(node, ast.List):
            raise fail(self.path, node, "a Python list is outside the subset translate reads; use a tuple")
        raise fail(self.path, node, f"{type(node).__name__} expressions in forward/backward are outside the subset")

    def literal(self, node: ast.Constant) -> HEx:
        v = node.value
        if isinstance(v, bool):
            return HEx("true" if v else "false", BOOL)
        if isinstance(v, int):
            return HEx(number(node, self.h.source), I64)
        if isinstance(v, float):
            return HEx(number(node, self.h.source), F64)
        if isinstance(v, str):
            return HEx(json.dumps(v), STR)
        if v is None:
            return HEx("/* None */", NONE)
        return self.outside(node)

    def tuple_(self, node: ast.Tuple) -> HEx:
        items = [self.expr(v) for v in node.elts]
        if all(i.type in INTS for i in items):
            return HEx(f"std::array<int64_t, {len(items)}>{{{', '.join(i.code for i in items)}}}",
                       HTuple(tuple(I64 for _ in items)))
        return HEx(f"std::make_tuple({', '.join(i.code for i in items)})", HTuple(tuple(i.type for i in items)))

    def unary(self, node: ast.UnaryOp) -> HEx:
        e = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            return HEx(f"!{_wrap(self.cond(node.operand))}", BOOL, 15)
        if isinstance(node.op, ast.USub):
            return HEx(f"-{_wrap(e.code) if e.prec < 15 else e.code}", e.type, 15)
        return e

    def boolop(self, node: ast.BoolOp) -> HEx:
        op, prec = ("&&", 5) if isinstance(node.op, ast.And) else ("||", 4)
        return HEx(f" {op} ".join(_wrap(self.cond(v)) if self.expr(v).prec < prec else self.cond(v)
                                  for v in node.values), BOOL, prec)

    def ifexp(self, node: ast.IfExp) -> HEx:
        a, b = self.expr(node.body), self.expr(node.orelse)
        return HEx(f"{_wrap(self.cond(node.test))} ? {a.code} : {b.code}", a.type, 3)

    def name_(self, node: ast.Name) -> HEx:
        n = node.id
        if n in self.locals:
            return HEx(n, self.locals[n])
        value = vars(self.h.module).get(n)
        if isinstance(value, bool):
            self.h.constants[n] = f"constexpr bool {n} = {'true' if value else 'false'};"
            return HEx(n, BOOL)
        if isinstance(value, int):
            self.h.constants[n] = f"constexpr int64_t {n} = {value};"
            return HEx(n, I64)
        if isinstance(value, float):
            self.h.constants[n] = f"constexpr double {n} = {value!r};"
            return HEx(n, F64)
        if isinstance(value, tuple) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            self.h.constants[n] = f"constexpr std::array<int64_t, {len(value)}> {n} = {{{', '.join(map(str, value))}}};"
            return HEx(n, HTuple(tuple(I64 for _ in value)))
        raise fail(self.path, node, f"{n} is not a parameter, a local or a module-level int, float or tuple of ints")

    def attribute(self, node: ast.Attribute) -> HEx:
        if isinstance(node.value, ast.Name) and node.value.id == "torch":
            dtype = getattr(torch, node.attr, None)
            if isinstance(dtype, torch.dtype) and dtype in AT_DTYPE:
                return HEx(AT_DTYPE[dtype], Dtype(dtype))
            raise fail(self.path, node, f"torch.{node.attr} is outside the subset on the host")
        base = self.expr(node.value)
        if isinstance(base.type, Tensor):
            if node.attr == "shape":
                return HEx(f"{base.code}.sizes()", Shape(base.code))
            if node.attr == "dtype":
                return HEx(f"{base.code}.scalar_type()", Dtype(base.type.dtype))
            if node.attr == "device":
                return HEx(f"{base.code}.device()", DEVICE)
            if node.attr == "ndim":
                return HEx(f"{base.code}.dim()", I64)
        raise fail(self.path, node, f"{ast.unparse(node)} is outside the subset on the host")

    def subscript(self, node: ast.Subscript) -> HEx:
        base = self.expr(node.value)
        index = self.expr(node.slice)
        if isinstance(base.type, Shape):
            if index.type not in INTS:
                raise fail(self.path, node, f"{ast.unparse(node)}: a shape takes an int index")
            return HEx(f"{base.type.tensor}.size({index.code})", I64)
        if isinstance(base.type, HTuple) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int):
            k = node.slice.value
            if self.h.spell(base.type).startswith("std::array"):
                return HEx(f"{base.code}[{k}]", base.type.items[k])
            return HEx(f"std::get<{k}>({base.code})", base.type.items[k])
        raise fail(self.path, node, f"{ast.unparse(node)}: indexing this on the host is outside the subset")

    def binop(self, node: ast.BinOp) -> HEx:
        a, b = self.expr(node.left), self.expr(node.right)
        if a.type not in (I64, F64, BOOL) or b.type not in (I64, F64, BOOL):
            raise fail(self.path, node, f"{ast.unparse(node)}: arithmetic on the host is on ints and floats only")
        floats = F64 in (a.type, b.type)
        if isinstance(node.op, ast.FloorDiv) and not floats:
            self.h.helpers.add("py_floordiv")
            return HEx(f"py_floordiv({a.code}, {b.code})", I64)
        if isinstance(node.op, ast.Mod) and not floats:
            self.h.helpers.add("py_mod")
            return HEx(f"py_mod({a.code}, {b.code})", I64)
        table = {ast.Add: ("+", 12), ast.Sub: ("-", 12), ast.Mult: ("*", 13), ast.Div: ("/", 13)}
        if type(node.op) not in table:
            raise fail(self.path, node, f"the operator in {ast.unparse(node)} is outside the subset on the host")
        sym, prec = table[type(node.op)]
        left = _wrap(a.code) if a.prec < prec else a.code
        right = _wrap(b.code) if b.prec <= prec else b.code
        if sym == "/" and not floats:
            return HEx(f"double({a.code}) / {right}", F64, prec)
        return HEx(f"{left} {sym} {right}", F64 if floats else I64, prec)

    def compare(self, node: ast.Compare) -> HEx:
        syms = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
        terms = []
        left = self.expr(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if type(op) not in syms:
                raise fail(self.path, node, f"{ast.unparse(node)}: this comparison is outside the subset on the host")
            sym = syms[type(op)]
            a, b = left, right
            if isinstance(a.type, Shape) or isinstance(b.type, Shape):
                if sym not in ("==", "!="):
                    raise fail(self.path, node, "shapes compare with == and != only")
                a, b = self.as_sizes(a, node), self.as_sizes(b, node)
            terms.append(f"{a.code} {sym} {b.code}")
            left = right
        return HEx(" && ".join(terms) if len(terms) == 1 else " && ".join(f"({t})" for t in terms), BOOL,
                   10 if len(terms) == 1 else 5)

    def as_sizes(self, e: HEx, node: ast.AST) -> HEx:
        if isinstance(e.type, Shape):
            return e
        if isinstance(e.type, HTuple) and all(i in INTS for i in e.type.items):
            inner = e.code[e.code.index("{"):] if e.code.startswith("std::array") else f"{{{e.code}}}"
            return HEx(f"c10::IntArrayRef({inner})", Shape(""))
        raise fail(self.path, node, f"{e.code} cannot be compared with a shape")

    def call(self, node: ast.Call) -> HEx:
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch":
            return self.torch_call(node, f.attr)
        if isinstance(f, ast.Attribute):
            base = self.expr(f.value)
            if isinstance(base.type, Tensor):
                return self.method(node, base, f.attr)
        if isinstance(f, ast.Name):
            args = [self.expr(a) for a in node.args]
            if node.keywords:
                raise fail(self.path, node, f"keyword arguments to {f.id}() are outside the subset on the host")
            if f.id == "cdiv" and len(args) == 2:
                self.h.helpers.update({"py_floordiv", "cdiv"})
                return HEx(f"cdiv({args[0].code}, {args[1].code})", I64)
            if f.id in ("min", "max") and len(args) >= 2:
                t = F64 if any(a.type == F64 for a in args) else I64
                self.h.includes.add("<algorithm>")
                ctype = "double" if t == F64 else "int64_t"
                if len(args) == 2:
                    return HEx(f"std::{f.id}<{ctype}>({args[0].code}, {args[1].code})", t)
                return HEx(f"std::{f.id}<{ctype}>({{{', '.join(a.code for a in args)}}})", t)
            if f.id == "len" and len(args) == 1:
                if isinstance(args[0].type, Shape):
                    return HEx(f"{args[0].type.tensor}.dim()", I64)
                if isinstance(args[0].type, Tensor):
                    return HEx(f"{args[0].code}.size(0)", I64)
            if f.id == "tuple" and len(args) == 1 and isinstance(args[0].type, Shape):
                return args[0]
            if f.id in ("int", "float") and len(args) == 1:
                return HEx(f"{'int64_t' if f.id == 'int' else 'double'}({args[0].code})", I64 if f.id == "int" else F64)
            if f.id in self.h.defs and f.id not in self.h.dev.functions:
                name, ret = self.h.function(f.id, [a.type for a in args], node)
                return HEx(f"{name}({', '.join(a.code for a in args)})", ret if ret is not None else NONE)
        raise fail(self.path, node, f"{ast.unparse(f)}() is outside the subset translate reads on the host "
                                    "(torch.empty/empty_like/zeros/zeros_like, tensor methods, cdiv, min, max, launch "
                                    "and this file's own functions)")

    def method(self, node: ast.Call, base: HEx, name: str) -> HEx:
        args = [self.expr(a) for a in node.args]
        t = base.type
        assert isinstance(t, Tensor)
        if node.keywords:
            raise fail(self.path, node, f".{name}() with keyword arguments is outside the subset")
        if name in ("contiguous", "clone", "t", "zero_") and not args:
            return HEx(f"{base.code}.{name}()", t)
        if name in ("view", "reshape") and args:
            if len(args) == 1 and args[0].type in INTS:
                return HEx(f"{base.code}.{name}({args[0].code})", t)
            return HEx(f"{base.code}.{name}({{{', '.join(a.code for a in args)}}})", t)
        if name == "transpose" and len(args) == 2:
            return HEx(f"{base.code}.transpose({args[0].code}, {args[1].code})", t)
        if name in ("numel", "dim") and not args:
            return HEx(f"{base.code}.{name}()", I64)
        if name in ("size", "stride") and len(args) == 1:
            return HEx(f"{base.code}.{name}({args[0].code})", I64)
        raise fail(self.path, node, f".{name}() on a tensor is outside the subset translate reads")

    def torch_call(self, node: ast.Call, name: str) -> HEx:
        kw = {k.arg: k.value for k in node.keywords}
        unknown = set(kw) - {"dtype", "device"}
        if unknown:
            raise fail(self.path, node, f"torch.{name}() with {', '.join(sorted(map(str, unknown)))}= is outside the subset")
        dtype = self.expr(kw["dtype"]) if "dtype" in kw else None
        if dtype is not None and not isinstance(dtype.type, Dtype):
            raise fail(self.path, node, f"dtype={ast.unparse(kw['dtype'])} is not a dtype")
        if name in ("empty_like", "zeros_like") and len(node.args) == 1:
            like = self.expr(node.args[0])
            if not isinstance(like.type, Tensor):
                raise fail(self.path, node, f"torch.{name} of something that is not a tensor")
            if name == "zeros_like":
                self.h.includes.add("<ATen/ops/zeros_like.h>")
            if dtype is None:
                return HEx(f"at::{name}({like.code})", like.type)
            return HEx(f"at::{name}({like.code}, {like.code}.options().dtype({dtype.code}))",
                       Tensor(dtype.type.of))  # type: ignore[union-attr]
        if name in ("empty", "zeros") and node.args:
            args = [self.expr(a) for a in node.args]
            if len(args) == 1 and isinstance(args[0].type, Shape):
                size = args[0].code
            elif len(args) == 1 and isinstance(args[0].type, HTuple):
                size = args[0].code[args[0].code.index("{"):] if args[0].code.startswith("std::array") else args[0].code
            elif all(a.type in INTS for a in args):
                size = f"{{{', '.join(a.code for a in args)}}}"
            else:
                raise fail(self.path, node, f"torch.{name}(): the size must be ints, a tuple of ints or a shape")
            options = "at::TensorOptions()"
            if "device" in kw:
                dev = self.expr(kw["device"])
                if dev.type != DEVICE:
                    raise fail(self.path, node, "device= must be a tensor's .device")
                options += f".device({dev.code})"
            of = dtype.type.of if dtype is not None else torch.get_default_dtype()  # type: ignore[union-attr]
            options += f".dtype({dtype.code if dtype is not None else AT_DTYPE[of]})"
            if name == "zeros":
                self.h.includes.add("<ATen/ops/zeros.h>")
            return HEx(f"at::{name}({size}, {options})", Tensor(of))
        raise fail(self.path, node, f"torch.{name}() is outside the subset translate reads on the host "
                                    "(torch.empty, empty_like, zeros, zeros_like)")


def _wrap_call(text: str, depth: int, width: int = 116) -> str:
    """A long call broken after commas, continuation lines aligned under its first argument."""
    if len(text) + 4 * depth <= width or "(" not in text:
        return text
    indent = " " * (4 * depth + text.index("(") + 1)
    args, level, current = [], 0, ""
    for ch in text:
        current += ch
        level += ch in "([{<" and ch != "<"
        level -= ch in ")]}"
        if ch == "," and level == 1:
            args.append(current)
            current = ""
    args.append(current)
    lines, line = [], ""
    for a in args:
        piece = a if not line else a.lstrip()
        if line and len(line) + len(piece) + 1 + (4 * depth if not lines else len(indent)) > width:
            lines.append(line)
            line = piece.lstrip()
        else:
            line = line + (" " if line else "") + piece if line else piece
    lines.append(line)
    return ("\n" + indent).join(lines)


def _macro_arg(code: str) -> str:
    """Code made one argument of a macro (TORCH_CHECK): a comma outside parentheses would split it."""
    depth = 0
    for ch in code:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            return f"({code})"
    return code


def _wrap(code: str) -> str:
    return f"({code})"


def _simple(code: str) -> bool:
    return code.isidentifier()


def _words(code: str) -> set[str]:
    import re

    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", code))
