"""atom and red in inline PTX on the CPU: `atom.global.add.f32 %0, [%1], %2`, `red.release.gpu.global.add.s32
[%0], %1` (Marlin's lock), `atom.shared.cas.b32 %0, [%1], %2, %3`, each a call of CUDA's atomic
function of that operation on the address (include/cpu/brrr_cpu_alu.h: atom), so the CPU execution's
watch of threads spinning on memory sees them as it sees atomicAdd. Orders and scopes are accepted and
made sequentially consistent; 16-bit float and vector forms are refused."""

from __future__ import annotations

import re

from .cpu_ptx_operands import RUNTIME, Statement, UnsupportedPtx

_TYPES = {"b32": "uint32_t", "u32": "uint32_t", "s32": "int32_t", "b64": "uint64_t", "u64": "uint64_t",
          "s64": "int64_t", "f32": "float", "f64": "double"}
# operation: the PTX types it takes
OPERATIONS = {"add": ("u32", "s32", "u64", "f32", "f64"), "min": ("u32", "s32", "u64", "s64"),
              "max": ("u32", "s32", "u64", "s64"), "inc": ("u32",), "dec": ("u32",), "and": ("b32", "b64"),
              "or": ("b32", "b64"), "xor": ("b32", "b64"), "exch": ("b32", "b64"), "cas": ("b32", "b64")}
_QUALIFIERS = r"(?:\.(?:relaxed|acquire|release|acq_rel|cta|cluster|gpu|sys|global|shared|shared::cta))*"
_FORM = re.compile(rf"(atom|red)({_QUALIFIERS})\.(\w+)\.(\w+)")
_HINT = ("brrr runs atom and red on .global, .shared (::cta) or generic addresses: add (u32, s32, u64, f32, f64), min "
         "and max (u32, s32, u64, s64), inc and dec (u32), and, or, xor, exch, cas (b32, b64), with any order and scope")


def atom(s: Statement, instr: str, args: list[str]) -> str | None:
    """atom's or red's C++; None for another instruction."""
    if not instr.startswith(("atom.", "red.")):
        return None
    m = _FORM.fullmatch(instr)
    if not m or m.group(3) not in OPERATIONS or m.group(4) not in OPERATIONS[m.group(3)]:
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _HINT)
    kind, operation, ptx_type = m.group(1), m.group(3), m.group(4)
    sources = (3 if operation == "cas" else 2) + (1 if kind == "atom" else 0)
    if len(args) != sources or (kind == "red" and operation == "cas"):
        raise UnsupportedPtx(f'inline PTX "{s.template}": {kind}.{operation} takes {sources} operands', _HINT)
    shared = ".shared" in m.group(2)
    at, *values = args if kind == "red" else args[1:]
    pointer = s.address(at, "shared_address" if shared else "global_address")
    b, c = values[0], values[1] if len(values) > 1 else "0"
    call = (f"{RUNTIME}atom<{RUNTIME}AOp::{operation.capitalize()}, {_TYPES[ptx_type]}>({RUNTIME}Space::"
            f"{'Shared' if shared else 'Generic'}, {pointer}, {s.value(b)}, {s.value(c)}, __FILE__, __LINE__)")
    return f"(void){call};" if kind == "red" else f"{RUNTIME}put({s.output(args[0])}, {call});"
