"""An inline PTX statement's operands, as cpu_ptx and its helpers read them: the asm's `"=r"(x)`
operands numbered as PTX's %N, the instruction's arguments grouped (`{%0, %1}, [%2+16], 16`), and the
C++ expression of a register, an immediate, a destination or an address."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .tokens import split_top

RUNTIME = "::brrr_cpu::ptx::"


class UnsupportedPtx(Exception):
    """A tensor-core or async-copy instruction in a form the CPU execution does not emulate."""

    def __init__(self, what: str, hint: str) -> None:
        super().__init__(what)
        self.what = what
        self.hint = hint


@dataclass(frozen=True)
class Operand:
    constraint: str  # "=f", "+r", "r", "l", "n", ...
    expr: str        # the C++ expression in the parentheses


def operands(sections: list[str]) -> list[Operand]:
    """The asm statement's operands, numbered as PTX's %N: the outputs, then the inputs."""
    found: list[Operand] = []
    for section in sections[1:3]:
        for part in split_top(section):
            m = re.match(r'^\s*(?:\[\w+\]\s*)?"([^"]*)"\s*\((.*)\)\s*$', part, re.S)
            if m:
                found.append(Operand(m.group(1), " ".join(m.group(2).split())))
    return found


def arg_groups(args: str) -> list[list[str]]:
    """`{%0, %1}, {%2}, [%3+16], 16` as [['%0', '%1'], ['%2'], ['[%3+16]'], ['16']]."""
    out: list[list[str]] = []
    for part in split_top(args):
        part = part.strip()
        if part.startswith("{") and part.endswith("}"):
            out.append([p.strip() for p in part[1:-1].split(",")])
        else:
            out.append([part])
    return out


class Statement:
    def __init__(self, template: str, ops: list[Operand]) -> None:
        self.template = template
        self.ops = ops

    def operand(self, ref: str) -> Operand:
        m = re.fullmatch(r"%(\d+)", ref.strip())
        if not m or int(m.group(1)) >= len(self.ops):
            raise UnsupportedPtx(f'inline PTX "{self.template}": operand "{ref}" is not one of the asm statement\'s '
                                 f"{len(self.ops)} operands", "refer to operands as %0, %1, ...")
        return self.ops[int(m.group(1))]

    def value(self, ref: str) -> str:
        """A register or an immediate, as a C++ expression."""
        ref = ref.strip()
        if re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", ref):
            return ref
        if m := re.fullmatch(r"0([fd])([0-9a-fA-F]{8}|[0-9a-fA-F]{16})", ref):  # PTX's float by its bits
            kind = "f32" if m.group(1) == "f" and len(m.group(2)) == 8 else "f64"
            return f"{RUNTIME}{kind}_literal(0x{m.group(2)}ull)"
        if re.fullmatch(r"-?\d+\.\d*(e[-+]?\d+)?", ref):  # a decimal float: a double, converted where used
            return f"({ref})"
        return f"({self.operand(ref).expr})"

    def predicate(self, ref: str) -> str:
        """A predicate source, `!p` negated, as a C++ int (0 or 1)."""
        ref = ref.strip()
        return f"!{self.value(ref[1:])}" if ref.startswith("!") else f"({self.value(ref)} != 0)"

    def output(self, ref: str) -> str:
        """A destination register's C++ expression; an input operand there is an error."""
        op = self.operand(ref)
        if not op.constraint.startswith(("=", "+")):
            raise UnsupportedPtx(f'inline PTX "{self.template}": the destination {ref} is an input operand',
                                 'give destination registers as outputs ("=r"(x), "=f"(x), "+r"(x), ...)')
        return op.expr

    def registers(self, refs: list[str]) -> str:
        return "{" + ", ".join(f"{RUNTIME}reg({self.value(r)})" for r in refs) + "}"

    def outputs(self, array: str, refs: list[str]) -> str:
        parts = []
        for k, ref in enumerate(refs):
            op = self.operand(ref)
            if not op.constraint.startswith(("=", "+")):
                raise UnsupportedPtx(f'inline PTX "{self.template}": the destination {ref} is an input operand',
                                     'give destination registers as outputs ("=f"(x), "=r"(x) or "+f"(x))')
            parts.append(f"{RUNTIME}set_reg({op.expr}, {array}[{k}]);")
        return " ".join(parts)

    def address(self, ref: str, convert: str) -> str:
        """`[%N]` or `[%N+offset]` as `convert(expr)`, plus the offset in bytes."""
        m = re.fullmatch(r"\[\s*(%\d+)\s*(?:\+\s*(\d+|0x[0-9a-fA-F]+))?\s*\]", ref.strip())
        if not m:
            raise UnsupportedPtx(f'inline PTX "{self.template}": the address "{ref}"',
                                 "give an address as [%N] or [%N+offset]")
        base = f"{RUNTIME}{convert}({self.value(m.group(1))})"
        return base if not m.group(2) else f"{base} + {m.group(2)}"
