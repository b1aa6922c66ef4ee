"""cvt in inline PTX on the CPU, one element (`cvt.rni.s32.f32`, `cvt.rn.f32.s32`, `cvt.rn.f16.f32`,
`cvt.f32.bf16`, `cvt.rn.f32.f64`, `cvt.rzi.f32.f32`, `cvt.s32.s8`, `cvt.sat.u8.s32`, ...): a call of
include/cpu/brrr_cpu_alu.h's `cvt` as the PTX ISA defines it. Float to integer rounds as its .rni/.rzi/
.rmi/.rpi says and saturates (NaN is 0); integer to integer sign- or zero-extends by the source type and
truncates, or clamps with .sat; between floats, .rn rounds once, an integer rounding gives the integral
value. Roundings other than to nearest where the result is a float (.rz, .rm, .rp) are refused. The
8-bit float pairs (`cvt.rn.satfinite{.relu}.e4m3x2.f32 d, a, b`, `.e5m2x2.f16x2 d, a`, and back,
`cvt.rn{.relu}.f16x2.e4m3x2 d, a`) are include/cpu/brrr_cpu_fp8.h's; the 16-bit packed pair forms
(`cvt.rn.bf16x2.f32`) are cpu_ptx's."""

from __future__ import annotations

import re

from .cpu_ptx_alu import FLOATS, INTEGERS
from .cpu_ptx_operands import RUNTIME, Statement, UnsupportedPtx

_INTEGERS = {**INTEGERS, "u8": "uint8_t", "s8": "int8_t", "b8": "uint8_t"}
_FLOATS = {k: v for k, v in FLOATS.items() if not k.endswith("x2")}
_ROUNDINGS = {"rn": "Rn", "rni": "Rni", "rzi": "Rzi", "rmi": "Rmi", "rpi": "Rpi"}
_HINT = ("brrr runs cvt of one element between s8-s64, u8-u64, f16, bf16, f32 and f64: float to integer with .rni, "
         ".rzi, .rmi or .rpi, to a float with .rn (or an integer rounding for an integral value), with .ftz and .sat")


_FP8 = {"e4m3x2": "E4M3", "e5m2x2": "E5M2"}
_FP8_HINT = ("brrr runs cvt.rn.satfinite{.relu}.e4m3x2/.e5m2x2.f32 d, a, b and .f16x2 d, a (ptxas requires .satfinite), "
             "and cvt.rn{.relu}.f16x2.e4m3x2/.e5m2x2 d, a")


def _fp8_pair(s: Statement, instr: str, args: list[str]) -> str | None:
    """A cvt to or from a pair of 8-bit floats; None for another instruction."""
    parts = instr.split(".")
    dst, src, modifiers = parts[-2], parts[-1], set(parts[1:-2])
    if dst not in _FP8 and src not in _FP8:
        return None
    kind = f"brrr_cpu::fp8::Kind::{_FP8.get(dst) or _FP8[src]}"
    relu = "true" if "relu" in modifiers else "false"
    to_fp8 = dst in _FP8 and src in ("f32", "f16x2")
    needed, allowed = ({"rn", "satfinite"}, {"rn", "satfinite", "relu"}) if to_fp8 else ({"rn"}, {"rn", "relu"})
    if not (to_fp8 or (dst == "f16x2" and src in _FP8)) or not needed <= modifiers <= allowed:
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _FP8_HINT)
    if len(args) != (sources := 2 if src == "f32" else 1) + 1:
        raise UnsupportedPtx(f'inline PTX "{s.template}": {instr} takes {sources} source operand(s)', _FP8_HINT)
    if src == "f32":
        call = f"cvt_f8x2_f32(static_cast<float>({s.value(args[1])}), static_cast<float>({s.value(args[2])}), "
    elif src == "f16x2":
        call = f"cvt_f8x2_f16x2({RUNTIME}bits_of<uint32_t>({s.value(args[1])}), "
    else:
        call = f"cvt_f16x2_f8x2({RUNTIME}bits_of<uint16_t>({s.value(args[1])}), "
    return f"{RUNTIME}put({s.output(args[0])}, brrr_cpu::fp8::{call}{kind}, {relu}));"


def cvt(s: Statement, instr: str, args: list[str]) -> str | None:
    """A one-element cvt's C++, or an 8-bit float pair's; None for another instruction (or a 16-bit packed cvt)."""
    if instr.startswith("cvt.") and (pair := _fp8_pair(s, instr, args)) is not None:
        return pair
    m = re.fullmatch(r"cvt((?:\.\w+)*)\.(\w+)\.(\w+)", instr)
    if not m or m.group(2).endswith("x2") or not instr.startswith("cvt."):
        return None
    modifiers = [x for x in m.group(1).split(".") if x]
    dst, src = m.group(2), m.group(3)
    types = {**_INTEGERS, **_FLOATS}
    rounding = [x for x in modifiers if x not in ("ftz", "sat")]
    if dst not in types or src not in types or len(rounding) > 1 or (rounding and rounding[0] not in _ROUNDINGS):
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _HINT)
    if len(args) != 2:
        raise UnsupportedPtx(f'inline PTX "{s.template}": cvt takes a destination and a source', _HINT)
    mode = _ROUNDINGS[rounding[0]] if rounding else "Rn"
    flags = " | ".join(f"{RUNTIME}{x.capitalize()}" for x in ("ftz", "sat") if x in modifiers) or f"{RUNTIME}Plain"
    return (f"{RUNTIME}put({s.output(args[0])}, {RUNTIME}cvt<{types[dst]}, {types[src]}, {RUNTIME}Round::{mode}, "
            f"{flags}>({s.value(args[1])}));")
