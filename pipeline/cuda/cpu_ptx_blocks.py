"""Blocks of inline PTX on the CPU: `{ .reg .pred p; setp.ne.b32 p, %5, 0; mov.b32 %0, %6; @p ld.global.v4.u32
{%0, %1, %2, %3}, [%4]; }`, the shape CUTLASS's predicated loads, Marlin's predicated cp.async and Hopper
kernels' wgmma scale-d take.

A block's registers become C++ locals (`.reg .pred p` a bool, `.reg .b32 r<2>` two uint32_t: r0 and
r1), each handed to the instructions as one more operand; `setp` and `selp` become a comparison and a
choice (include/cpu/brrr_cpu_alu.h), the predicate logic (`and.pred`, `not.pred`, ...) C++'s, and
`@p` / `@!p` an `if` around an instruction. Every other statement is translated as a lone instruction
(`one`, cpu_ptx's), so a block runs on the CPU exactly when each of its instructions would alone; one
that would not is named. Labels and branches are a wait loop's (cpu_ptx's mbarrier waits) or refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from .cpu_ptx_operands import RUNTIME, Operand, Statement, UnsupportedPtx, arg_groups
from .tokens import split_top

# A block register's C++ type, and the asm constraint it would have as an operand.
LOCALS = {"pred": ("bool", "p"), "b8": ("uint8_t", "h"), "u8": ("uint8_t", "h"), "s8": ("int8_t", "h"),
          "b16": ("uint16_t", "h"), "u16": ("uint16_t", "h"), "s16": ("int16_t", "h"), "f16": ("uint16_t", "h"),
          "bf16": ("uint16_t", "h"), "b32": ("uint32_t", "r"), "u32": ("uint32_t", "r"), "s32": ("int32_t", "r"),
          "f16x2": ("uint32_t", "r"), "bf16x2": ("uint32_t", "r"), "f32": ("float", "f"), "b64": ("uint64_t", "l"),
          "u64": ("uint64_t", "l"), "s64": ("int64_t", "l"), "f64": ("double", "d")}

LOCALS_CONSTRAINT = {ctype: letter for ctype, letter in LOCALS.values()}

# setp's comparisons, as brrr_cpu_alu.h's Cmp (lo/ls/hi/hs: the unsigned ones, by the type; ...u: true on a NaN).
COMPARISONS = {"eq": "Eq", "ne": "Ne", "lt": "Lt", "le": "Le", "gt": "Gt", "ge": "Ge", "lo": "Lt", "ls": "Le",
               "hi": "Gt", "hs": "Ge", "equ": "Equ", "neu": "Neu", "ltu": "Ltu", "leu": "Leu", "gtu": "Gtu",
               "geu": "Geu", "num": "Num", "nan": "Nan"}
_VALUE_TYPES = {k: v[0] for k, v in LOCALS.items() if k != "pred"}
_COMPARED = {**_VALUE_TYPES, "f16": f"{RUNTIME}F16", "bf16": f"{RUNTIME}BF16"}  # setp.lt.f16 compares values
_HINT = ("brrr runs a block of PTX made of .reg declarations, setp, selp, predicate logic (and/or/xor/not.pred), "
         "@p or @!p guards, and instructions it runs alone; no labels or branches but an mbarrier wait loop's")

One = Callable[[str, list[Operand]], "str | None"]


@dataclass(frozen=True)
class Local:
    name: str   # as the block names it
    ctype: str
    var: str    # the C++ local


def is_block(template: str) -> bool:
    return template.startswith("{") and template.endswith("}")


def declarations(statements: list[str], template: str) -> tuple[list[Local], list[str]]:
    """The block's `.reg` registers (`r<4>` is r0..r3) and its other statements."""
    found: list[Local] = []
    rest = []
    for text in statements:
        m = re.fullmatch(r"\.reg\s+\.(\w+)\s+(.+)", text)
        if not m:
            rest.append(text)
            continue
        if m.group(1) not in LOCALS:
            raise UnsupportedPtx(f'inline PTX "{template}": a .reg of type .{m.group(1)}', _HINT)
        for name in (n.strip() for n in m.group(2).split(",")):
            ranged = re.fullmatch(r"(%?[A-Za-z_$]\w*)<(\d+)>", name)
            names = [f"{ranged.group(1)}{i}" for i in range(int(ranged.group(2)))] if ranged else [name]
            for each in names:
                if not re.fullmatch(r"%?[A-Za-z_$][\w$]*", each):
                    raise UnsupportedPtx(f'inline PTX "{template}": the register name "{each}"', _HINT)
                found.append(Local(each, LOCALS[m.group(1)][0], f"brrr_r_{each.lstrip('%').replace('$', '_')}"))
    return found, rest


def _guarded(text: str) -> tuple[str | None, bool, str]:
    """`@p instr ...` as (p, negated, instr ...); (None, False, text) for an unguarded statement."""
    m = re.fullmatch(r"@(!?)\s*(%?[A-Za-z_$][\w$]*|%\d+)\s+(.+)", text)
    return (m.group(2), bool(m.group(1)), m.group(3)) if m else (None, False, text)


_BOOL_OPS = {"and": "&&", "or": "||", "xor": "!="}
_SETP_HINT = ("setp.CmpOp{.BoolOp}.type p{|q}, a, b{, {!}c} with a comparison of the PTX ISA (eq, ne, lt, le, gt, "
              "ge, lo, ls, hi, hs, and the unordered forms) on a value type, and and/or/xor")


def _setp(s: Statement, instr: str, args: list[str]) -> str:
    """setp as the PTX ISA defines it: t = a CmpOp b; p = t (BoolOp c), and q (after `|`) = !t (BoolOp c)."""
    parts = instr.split(".")
    combine = _BOOL_OPS.get(parts[2]) if len(parts) == 4 else ""
    destinations = args[0].split("|") if args else []
    if (len(parts) not in (3, 4) or combine is None or parts[1] not in COMPARISONS or parts[-1] not in _COMPARED
            or len(args) != (4 if combine else 3) or len(destinations) > 2):
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _SETP_HINT)
    test = (f"{RUNTIME}setp<{_COMPARED[parts[-1]]}, {RUNTIME}Cmp::{COMPARISONS[parts[1]]}>("
            f"{s.value(args[1])}, {s.value(args[2])})")
    c = f" {combine} {s.predicate(args[3])}" if combine else ""
    results = [f"{RUNTIME}put({s.output(d)}, bool(brrr_t{c}));" if k == 0 else
               f"{RUNTIME}put({s.output(d)}, bool(!brrr_t{c}));" for k, d in enumerate(destinations)]
    return f"{{ const bool brrr_t = {test}; {' '.join(results)} }}"


def _predicate_logic(s: Statement, instr: str, args: list[str]) -> str | None:
    """setp, selp and the .pred forms of and/or/xor/not/mov, each as C++; None for another instruction."""
    if instr.startswith("setp."):
        return _setp(s, instr, args)
    if m := re.fullmatch(r"selp\.(\w+)", instr):
        if m.group(1) not in _VALUE_TYPES or len(args) != 4:
            raise UnsupportedPtx(f'inline PTX "{s.template}"', "selp.type d, a, b, p")
        t = _VALUE_TYPES[m.group(1)]
        return (f"{RUNTIME}put({s.output(args[0])}, {s.value(args[3])} ? {RUNTIME}bits_of<{t}>({s.value(args[1])}) "
                f": {RUNTIME}bits_of<{t}>({s.value(args[2])}));")
    logic = {"and.pred": "&&", "or.pred": "||", "xor.pred": "!=", "not.pred": "!", "mov.pred": ""}.get(instr)
    if logic is None:
        return None
    sources = [f"bool{s.value(a)}" for a in args[1:]]
    if len(sources) != (1 if instr in ("not.pred", "mov.pred") else 2):
        raise UnsupportedPtx(f'inline PTX "{s.template}": {instr} takes {"one" if len(sources) < 2 else "two"} '
                             "predicates", _HINT)
    expr = f"{logic}{sources[0]}" if len(sources) == 1 else f"{sources[0]} {logic} {sources[1]}"
    return f"({s.output(args[0])}) = {expr};"


def _named(text: str, locals_: list[Local], first: int) -> str:
    """A statement with each block register written as the operand it is given as (%first, ...)."""
    head, _, args = text.partition(" ")
    for k, local in enumerate(locals_):
        args = re.sub(rf"(?<![%\w.$]){re.escape(local.name)}(?![\w$])", f"%{first + k}", args)
    guard = re.fullmatch(r"@(!?)\s*(%?[A-Za-z_$][\w$]*)", head)
    if guard:
        index = next((first + k for k, loc in enumerate(locals_) if loc.name == guard.group(2)), None)
        head = f"@{guard.group(1)}%{index}" if index is not None else head
    return f"{head} {args}".strip()


def translate_block(template: str, ops: list[Operand], one: One) -> str | None:
    """C++ for a block of several PTX statements, or of declarations and one; None where `template`
    is one instruction (no braces) or holds labels (a wait loop: cpu_ptx's)."""
    if not is_block(template):
        return None
    statements = [t.strip() for t in split_top(template[1:-1], ";") if t.strip()]
    if any(re.match(r"^[A-Za-z_$][\w$]*\s*:(?!:)", t) for t in statements):
        return None
    locals_, body = declarations(statements, template)
    if not body:
        return ";"
    all_ops = [*ops, *(Operand(f"+{LOCALS_CONSTRAINT[loc.ctype]}", loc.var) for loc in locals_)]
    lines = [f"{loc.ctype} {loc.var} = {{}};" for loc in locals_]
    for text in body:
        text = _named(text, locals_, len(ops))
        guard, negated, instruction = _guarded(text)
        call = _statement(instruction, all_ops, one, template)
        if guard is not None:
            s = Statement(template, all_ops)
            call = f"if ({'!' if negated else ''}{s.value(guard)}) {{ {call} }}"
        lines.append(call)
    return "{ " + " ".join(lines) + " }"


def _statement(instruction: str, ops: list[Operand], one: One, template: str) -> str:
    m = re.match(r"^([a-z][\w.:]*)\s*(.*)$", instruction)
    if not m:
        raise UnsupportedPtx(f'inline PTX "{template}": the statement "{instruction}"', _HINT)
    s = Statement(instruction, ops)
    args = [g[0] if len(g) == 1 else "{" + ", ".join(g) + "}" for g in arg_groups(m.group(2))] if m.group(2) else []
    if (logic := _predicate_logic(s, m.group(1), args)) is not None:
        return logic
    call = one(instruction, ops)
    if call is None:
        raise UnsupportedPtx(f'inline PTX "{template}": "{instruction}" in it', _HINT + "; this instruction is not "
                             "one brrr runs")
    return call
