"""Arithmetic and bit instructions of inline PTX on the CPU: `add.s32`, `mul.wide.u32`, `shr.s32`,
`bfe.u32`, `fma.rn.f32`, `sub.f16x2`, `max.bf16x2`, ... each a call of include/cpu/brrr_cpu_alu.h
(`ialu` for integers, `falu` for floats, lane by lane for the packed types), as the PTX ISA defines
them: integer arithmetic wraps, shifts past the width saturate, .ftz flushes subnormals, .sat clamps
to [0, 1]. Float rounding other than to nearest (.rz, .rm, .rp) is refused, not approximated.

A new instruction is a line in INTEGER_OPS or FLOAT_OPS and, where it computes something new, a
branch of ialu or falu."""

from __future__ import annotations

from .cpu_ptx_operands import RUNTIME, Statement, UnsupportedPtx

INTEGERS = {"s16": "int16_t", "u16": "uint16_t", "b16": "uint16_t", "s32": "int32_t", "u32": "uint32_t",
            "b32": "uint32_t", "s64": "int64_t", "u64": "uint64_t", "b64": "uint64_t"}
FLOATS = {"f32": "float", "f64": "double", "f16": f"{RUNTIME}F16", "bf16": f"{RUNTIME}BF16",
          "f16x2": f"{RUNTIME}X2<{RUNTIME}F16>", "bf16x2": f"{RUNTIME}X2<{RUNTIME}BF16>"}

# name: (IOp, sources, the PTX types it takes)
_ARITH, _BITS, _SIGNED = ("s16", "u16", "s32", "u32", "s64", "u64"), ("b16", "b32", "b64"), ("s16", "s32", "s64")
INTEGER_OPS = {
    "add": ("Add", 2, _ARITH), "sub": ("Sub", 2, _ARITH), "mul.lo": ("MulLo", 2, _ARITH), "mul.hi": ("MulHi", 2, _ARITH),
    "mul.wide": ("MulWide", 2, _ARITH[:4]), "mad.lo": ("MadLo", 3, _ARITH), "mad.hi": ("MadHi", 3, _ARITH),
    "mad.wide": ("MadWide", 3, _ARITH[:4]), "min": ("Min", 2, _ARITH), "max": ("Max", 2, _ARITH),
    "neg": ("Neg", 1, _SIGNED), "abs": ("Abs", 1, _SIGNED),
    "and": ("And", 2, _BITS), "or": ("Or", 2, _BITS), "xor": ("Xor", 2, _BITS), "not": ("Not", 1, _BITS),
    "shl": ("Shl", 2, _BITS), "shr": ("Shr", 2, (*_BITS, *_ARITH)), "popc": ("Popc", 1, ("b32", "b64")),
    "clz": ("Clz", 1, ("b32", "b64")), "brev": ("Brev", 1, ("b32", "b64")),
    "bfe": ("Bfe", 3, ("u32", "s32", "u64", "s64")), "bfi": ("Bfi", 4, ("b32", "b64")),
}
# name: (FOp, sources, the PTX types it takes, the modifiers it may carry)
_ALL_FLOATS, _WIDE, _HALVES = tuple(FLOATS), ("f32", "f64"), ("f16", "bf16", "f16x2", "bf16x2")
_ROUNDED = {"rn", "ftz", "sat"}
FLOAT_OPS = {
    "add": ("Add", 2, _ALL_FLOATS, _ROUNDED), "sub": ("Sub", 2, _ALL_FLOATS, _ROUNDED),
    "mul": ("Mul", 2, _ALL_FLOATS, _ROUNDED), "fma": ("Fma", 3, _ALL_FLOATS, _ROUNDED),
    "mad": ("Fma", 3, _WIDE, _ROUNDED), "div": ("Div", 2, _WIDE, {"rn", "ftz", "approx", "full"}),
    "min": ("Min", 2, _ALL_FLOATS, {"ftz"}), "max": ("Max", 2, _ALL_FLOATS, {"ftz"}),
    "neg": ("Neg", 1, _ALL_FLOATS, {"ftz"}), "abs": ("Abs", 1, _ALL_FLOATS, {"ftz"}),
    # the 16-bit .approx functions (f32's are cpu_ptx.SCALAR's), computed exactly and rounded once
    "ex2": ("Ex2", 1, _HALVES, {"approx", "ftz"}), "tanh": ("Tanh", 1, _HALVES, {"approx"}),
}
_HINT = ("brrr runs integer add, sub, mul{.lo,.hi,.wide}, mad{.lo,.hi,.wide}, min, max, neg, abs, and, or, xor, not, "
         "shl, shr, popc, clz, brev, bfe, bfi, and float add, sub, mul, fma, mad, div, min, max, neg, abs on f32, f64, "
         "f16, bf16, f16x2 and bf16x2, rounding to nearest (.rn), with .ftz and .sat; ex2.approx and tanh.approx on the "
         "16-bit types")


def alu(s: Statement, instr: str, args: list[str]) -> str | None:
    """`instr d, a, ...` of the tables as C++; None for an instruction they do not name."""
    parts = instr.split(".")
    if len(parts) < 2:
        return None
    name, ptx_type = parts[0], parts[-1]
    modifiers = parts[1:-1]
    if name in ("mul", "mad") and modifiers[:1] and modifiers[0] in ("lo", "hi", "wide"):
        name, modifiers = f"{name}.{modifiers[0]}", modifiers[1:]
    if (name in INTEGER_OPS or name in FLOAT_OPS) and (other := set(modifiers) & {"rz", "rm", "rp", "rni", "rzi"}):
        raise UnsupportedPtx(f'inline PTX "{s.template}": rounding .{other.pop()}', _HINT)
    if ptx_type in INTEGERS and name in INTEGER_OPS:
        op, sources, types = INTEGER_OPS[name]
        if ptx_type not in types or modifiers:
            raise UnsupportedPtx(f'inline PTX "{s.template}": {name} on .{ptx_type}', _HINT)
        return _call(s, args, sources, f"ialu<{RUNTIME}IOp::{op}, {INTEGERS[ptx_type]}>")
    if ptx_type in FLOATS and name in FLOAT_OPS:
        op, sources, types, allowed = FLOAT_OPS[name]
        if ptx_type not in types or not set(modifiers) <= allowed:
            raise UnsupportedPtx(f'inline PTX "{s.template}"', _HINT)
        flags = " | ".join(f"{RUNTIME}{m.capitalize()}" for m in ("ftz", "sat") if m in modifiers) or f"{RUNTIME}Plain"
        return _call(s, args, sources, f"falu<{RUNTIME}FOp::{op}, {FLOATS[ptx_type]}, {flags}>")
    if (name in INTEGER_OPS or name in FLOAT_OPS) and (ptx_type in INTEGERS or ptx_type in FLOATS):
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _HINT)
    return None


def _call(s: Statement, args: list[str], sources: int, function: str) -> str:
    if len(args) != sources + 1:
        raise UnsupportedPtx(f'inline PTX "{s.template}": takes a destination and {sources} source'
                             f"{'s' if sources > 1 else ''}", _HINT)
    values = ", ".join(s.value(a) for a in args[1:])
    return f"{RUNTIME}put({s.output(args[0])}, {RUNTIME}{function}({values}));"
