"""Warp and barrier instructions of inline PTX on the CPU, each the CUDA function it is
(include/cpu/brrr_cpu_ptx_warp.h): `shfl.sync.{idx,up,down,bfly}.b32` (__shfl_*_sync, for the c operands
CUDA compiles them to), `vote.sync.{ballot.b32,all.pred,any.pred,uni.pred}`, `redux.sync`, `elect.sync`
(CUTLASS's elect_one_sync), `activemask.b32`, `bar.warp.sync`, and `bar.sync` / `barrier.sync` / `bar.arrive`:
barrier 0 over the whole block is __syncthreads, another (1-15, or a count of fewer threads) the runtime's
named barrier. A predicate source may be negated (`!p`), as PTX allows."""

from __future__ import annotations

import re

from .cpu_ptx_operands import RUNTIME, Statement, UnsupportedPtx

_HINT = ("brrr runs shfl.sync.{idx,up,down,bfly}.b32, vote.sync.{ballot.b32,all.pred,any.pred,uni.pred}, "
         "redux.sync.{add,min,max}.{u32,s32} and .{and,or,xor}.b32, elect.sync, activemask.b32, bar.warp.sync, "
         "bar.sync / barrier.sync a{, b} and bar.arrive a, b")
_REDUX = {("add", "u32"): "unsigned", ("add", "s32"): "int", ("min", "u32"): "unsigned", ("min", "s32"): "int",
          ("max", "u32"): "unsigned", ("max", "s32"): "int", ("and", "b32"): "unsigned", ("or", "b32"): "unsigned",
          ("xor", "b32"): "unsigned"}
_HERE = "__FILE__, __LINE__"


def warp(s: Statement, instr: str, args: list[str]) -> str | None:
    """C++ for a warp or barrier instruction; None for another instruction."""
    if m := re.fullmatch(r"shfl\.sync\.(idx|up|down|bfly)\.b32", instr):
        if len(args) != 5 or "|" in args[0]:
            raise UnsupportedPtx(f'inline PTX "{s.template}": shfl.sync d, a, b, c, membermask (no predicate '
                                 "destination)", _HINT)
        mode = m.group(1).capitalize()
        a, b, c, mask = (s.value(x) for x in args[1:])
        return (f"{RUNTIME}put({s.output(args[0])}, {RUNTIME}shfl_sync<{RUNTIME}Shfl::{mode}>({a}, {b}, {c}, {mask}, "
                f"{_HERE}));")
    if m := re.fullmatch(r"vote\.sync\.(ballot\.b32|all\.pred|any\.pred|uni\.pred)", instr):
        if len(args) != 3:
            raise UnsupportedPtx(f'inline PTX "{s.template}": vote.sync d, p, membermask', _HINT)
        p, mask = s.predicate(args[1]), f"{RUNTIME}bits_of<uint32_t>({s.value(args[2])})"
        ballot = f"__ballot_sync({mask}, {p}, {_HERE})"
        value = {"ballot.b32": ballot, "all.pred": f"__all_sync({mask}, {p}, {_HERE}) != 0",
                 "any.pred": f"__any_sync({mask}, {p}, {_HERE}) != 0",
                 "uni.pred": f"[&] {{ const unsigned brrr_v = {ballot}; return brrr_v == 0u || brrr_v == "
                             f"({mask} & __activemask({_HERE})); }}()"}[m.group(1)]
        return f"{RUNTIME}put({s.output(args[0])}, {value});"
    if m := re.fullmatch(r"redux\.sync\.(\w+)\.(\w+)", instr):
        ctype = _REDUX.get((m.group(1), m.group(2)))
        if ctype is None or len(args) != 3:
            raise UnsupportedPtx(f'inline PTX "{s.template}"', _HINT)
        return (f"{RUNTIME}put({s.output(args[0])}, __reduce_{m.group(1)}_sync({RUNTIME}bits_of<uint32_t>("
                f"{s.value(args[2])}), static_cast<{ctype}>({s.value(args[1])}), {_HERE}));")
    if instr == "elect.sync":
        outs = [o.strip() for o in args[0].split("|")] if args else []
        if len(args) != 2 or len(outs) != 2:
            raise UnsupportedPtx(f'inline PTX "{s.template}": elect.sync d|p, membermask', _HINT)
        leader = "_" if outs[0] == "_" else s.output(outs[0])
        flag = "_" if outs[1] == "_" else s.output(outs[1])
        call = f"{RUNTIME}elect_sync({RUNTIME}bits_of<uint32_t>({s.value(args[1])}), brrr_e, {_HERE})"
        return (f"{{ bool brrr_e = false; const uint32_t brrr_l = {call}; "
                + ("" if leader == "_" else f"{RUNTIME}put({leader}, brrr_l); ")
                + ("(void)brrr_l; " if leader == "_" else "")
                + ("" if flag == "_" else f"{RUNTIME}put({flag}, brrr_e); ") + "}")
    if instr == "activemask.b32" and len(args) == 1:
        return f"{RUNTIME}put({s.output(args[0])}, __activemask({_HERE}));"
    if instr == "bar.warp.sync" and len(args) == 1:
        return f"__syncwarp({RUNTIME}bits_of<uint32_t>({s.value(args[0])}), {_HERE});"
    if re.fullmatch(r"(bar(\.sync|\.arrive)?|barrier(\.cta)?\.(sync|arrive)(\.aligned)?)", instr):
        if not 1 <= len(args) <= 2 or ("arrive" in instr and len(args) != 2):
            raise UnsupportedPtx(f'inline PTX "{s.template}": bar.sync a{{, b}} or bar.arrive a, b', _HINT)
        count = s.value(args[1]) if len(args) == 2 else "0"
        wait = "false" if "arrive" in instr else "true"
        return (f"{RUNTIME}bar_sync({RUNTIME}bits_of<uint32_t>({s.value(args[0])}), {RUNTIME}bits_of<uint32_t>({count}), "
                f"{wait}, {_HERE});")
    if instr.startswith(("shfl.", "vote.", "redux.", "elect.", "bar.", "barrier.")):
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _HINT)
    return None
