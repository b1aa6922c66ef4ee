"""Inline PTX for tensor cores and asynchronous copies, rewritten into calls of brrr's CPU runtime.

g++ cannot assemble PTX, so cpu_source hands each `asm` statement it does not translate itself to
`translate`, which knows these instructions (with the PTX ISA's operand forms):

- `mma.sync.aligned.m16n8k16.row.col.D.A.B.C` (A = B = f16 or bf16), `...m16n8k8...` (f16, bf16,
  tf32) and `...m16n8k4...` (tf32), D = C = f32 (or f16 with f16 inputs): include/cpu/brrr_cpu_mma.h;
- `ldmatrix.sync.aligned.m8n8.x1/.x2/.x4{.trans}{.shared{::cta}}.b16` and `stmatrix` of the same forms
  (qualifiers in any order, as ptxas reads them);
- `cp.async.ca/.cg.shared{::cta}.global{.L2::64B/128B/256B} [dst], [src], size{, src_size}`,
  `cp.async.commit_group`, `cp.async.wait_group N`, `cp.async.wait_all`: include/cpu/brrr_cpu_async.h;
- `cvt.rna.tf32.f32`, `cvt.rn.bf16x2.f32` and `cvt.rn.f16x2.f32`;
- `ld` and `st` of global, shared or generic addresses, vectors of up to 8, with their cache, order
  and scope qualifiers: include/cpu/brrr_cpu_ldst.h;
- `cvta.to.shared` and `cvta.shared` (.u32, .u64): the generic <-> .shared address conversions;
- `wgmma.mma_async.sync.aligned.m64nNk16.f32.AB.AB` (AB = bf16 or f16) with both operands in shared
  memory (descriptors), alone or in the block `{ .reg .pred p; setp.ne.b32 p, %N, 0; wgmma ... p, ...; }`
  that passes scale-d as a predicate; `wgmma.fence`, `.commit_group`, `.wait_group N` and
  `fence.proxy.async`: include/cpu/brrr_cpu_wgmma.h;
- `mbarrier.init`, `.arrive` (a count, `.expect_tx`), `.expect_tx`, `.inval`, and `mbarrier.try_wait` /
  `.test_wait` (`.parity` or a token) in the blocks kernels wrap them in (a wait loop of `bra`s, or a
  `selp` of the predicate); `cp.async.bulk.tensor.1d`-`.5d` tiled loads and `cp.async.bulk`'s plain
  loads (`[dst], [src], size, [mbar]`) that complete an mbarrier's transaction bytes;
  `fence.mbarrier_init`, `prefetch.tensormap` (nothing to do on the CPU): include/cpu/brrr_cpu_tma.h;
  the stores of both (`cp.async.bulk{.tensor.Nd}.global.shared::cta.bulk_group`), made when issued, and
  `cp.async.bulk.commit_group` / `.wait_group{.read} N`;
  `griddepcontrol.wait` and `.launch_dependents` (programmatic dependent launch: a launch on the CPU
  ends before the next one starts), nothing either;
- thread block clusters: `barrier.cluster.arrive` / `.wait` (with .release, .relaxed, .acquire,
  .aligned), `mov.u32` of `%cluster_ctarank`, `%cluster_nctarank`, `%clusterid`, `%nclusterid`,
  `%cluster_ctaid`, `%cluster_nctaid` and `%is_explicit_cluster`, and `mapa.u64` on generic addresses.

Each becomes one line of C++ (a block that packs the operands into 32-bit registers, calls the
runtime, and unpacks the results), so kernel.cu's line numbers stay. An instruction of these families
in a form brrr does not emulate raises UnsupportedPtx, which cpu_source reports at kernel.cu's line;
any other instruction returns None and stays cpu_source's to judge.
"""

from __future__ import annotations

import re

from .cpu_ptx_alu import alu
from .cpu_ptx_atom import atom
from .cpu_ptx_blocks import translate_block
from .cpu_ptx_cvt import cvt
from .cpu_ptx_operands import RUNTIME, Operand, Statement, UnsupportedPtx, arg_groups, operands
from .cpu_ptx_warp import warp

_MMA_HINT = ("brrr emulates mma.sync.aligned.m16n8k16 (f16, bf16), .m16n8k8 (f16, bf16, tf32) and .m16n8k4 "
             "(tf32), .row.col, with f32 accumulators (or f16 ones for f16 inputs), and the 8-bit integer "
             ".m16n8k16 / .m16n8k32 .row.col{.satfinite}.s32.{s8,u8}.{s8,u8}.s32")
_TYPES = {"f16": "F16", "bf16": "BF16", "tf32": "TF32", "f32": "F32"}


_INT_MMA = re.compile(r"mma\.sync\.aligned\.m16n8k(16|32)\.row\.col(\.satfinite)?\.s32\.([su]8)\.([su]8)\.s32")


def _mma(s: Statement, instr: str, groups: list[list[str]]) -> str:
    m = re.fullmatch(r"mma\.sync\.aligned\.m16n8k(16|8|4)\.row\.col\.(\w+)\.(\w+)\.(\w+)\.(\w+)", instr)
    if (integer := _INT_MMA.fullmatch(instr)) and len(groups) == 4:
        k, satf, sa, sb = integer.group(1), bool(integer.group(2)), integer.group(3) == "s8", integer.group(4) == "s8"
        call = (f"{RUNTIME}int_mma_sync<{k}, {str(sa).lower()}, {str(sb).lower()}, {str(satf).lower()}>"
                "(brrr_d, brrr_a, brrr_b, brrr_c, __FILE__, __LINE__);")
        return _mma_call(s, groups, call)
    if not m:
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _MMA_HINT)
    k, d, a, b, c = int(m.group(1)), *m.group(2, 3, 4, 5)
    valid = a == b and d == c and (
        (k == 16 and a in ("f16", "bf16")) or (k == 8 and a in ("f16", "bf16", "tf32")) or (k == 4 and a == "tf32"))
    valid = valid and (d == "f32" or (d == "f16" and a == "f16"))
    if not valid or len(groups) != 4:
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _MMA_HINT)
    call = (f"{RUNTIME}mma_sync<16, 8, {k}, {RUNTIME}Type::{_TYPES[a]}, {RUNTIME}Type::{_TYPES[d]}>"
            "(brrr_d, brrr_a, brrr_b, brrr_c, __FILE__, __LINE__);")
    return _mma_call(s, groups, call)


def _mma_call(s: Statement, groups: list[list[str]], call: str) -> str:
    """The block around an mma call: the operands packed into register arrays, the results unpacked."""
    dg, ag, bg, cg = groups
    return (f"{{ const uint32_t brrr_a[{len(ag)}] = {s.registers(ag)}; const uint32_t brrr_b[{len(bg)}] = "
            f"{s.registers(bg)}; const uint32_t brrr_c[{len(cg)}] = {s.registers(cg)}; uint32_t brrr_d[{len(dg)}]; "
            f"{call} {s.outputs('brrr_d', dg)} }}")


_MATRIX_HINT = "brrr emulates {0}.sync.aligned.m8n8.x1/.x2/.x4{{.trans}}{{.shared}}.b16 {1}"


def _matrix_form(instr: str) -> tuple[int, bool] | None:
    """ldmatrix's or stmatrix's (count, trans), its qualifiers in any order as ptxas takes them
    (`ldmatrix.sync.aligned.x4.trans.m8n8.shared.b16`, LeetCUDA's spelling); None for another form."""
    quals = instr.split(".")[1:]
    counts = [q for q in quals if q in ("x1", "x2", "x4")]
    known = {"sync", "aligned", "m8n8", "b16", "trans", "shared", "shared::cta", "x1", "x2", "x4"}
    if len(counts) != 1 or len(set(quals)) != len(quals) or not {"sync", "aligned", "m8n8", "b16"} <= set(quals) \
            or not set(quals) <= known:
        return None
    return int(counts[0][1]), "trans" in quals


def _matrix(s: Statement, instr: str, groups: list[list[str]]) -> str:
    """ldmatrix {regs}, [addr] and stmatrix [addr], {regs}."""
    store = instr.startswith("stmatrix")
    form = _matrix_form(instr)
    registers, address = (groups[1], groups[0]) if store and len(groups) == 2 else (groups[0], groups[-1])
    if not form or len(groups) != 2 or len(registers) != form[0]:
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _MATRIX_HINT.format(
            instr.split(".")[0], "[addr], {regs}" if store else "{regs}, [addr]"))
    count, trans = form[0], "true" if form[1] else "false"
    at = s.address(address[0], "shared_address")
    if store:
        return (f"{{ const uint32_t brrr_s[{count}] = {s.registers(registers)}; "
                f"{RUNTIME}stmatrix<{count}, {trans}>({at}, brrr_s, __FILE__, __LINE__); }}")
    return (f"{{ uint32_t brrr_d[{count}]; {RUNTIME}ldmatrix<{count}, {trans}>(brrr_d, {at}, __FILE__, __LINE__); "
            f"{s.outputs('brrr_d', registers)} }}")


# ld / st: the C++ type of each PTX element type (a float's bits travel as an integer of its size).
_ELEMENTS = {"b8": "uint8_t", "u8": "uint8_t", "s8": "int8_t", "b16": "uint16_t", "u16": "uint16_t", "s16": "int16_t",
             "f16": "uint16_t", "bf16": "uint16_t", "b32": "uint32_t", "u32": "uint32_t", "s32": "int32_t",
             "f32": "uint32_t", "f16x2": "uint32_t", "bf16x2": "uint32_t", "b64": "uint64_t", "u64": "uint64_t",
             "s64": "int64_t", "f64": "uint64_t"}
_SIZES = {"uint8_t": 1, "int8_t": 1, "uint16_t": 2, "int16_t": 2, "uint32_t": 4, "int32_t": 4, "uint64_t": 8, "int64_t": 8}
# Qualifiers that change nothing but timing and caching on the CPU, or say the order and scope.
_LDST_QUALIFIERS = re.compile(r"weak|volatile|mmio|relaxed|acquire|release|sys|gpu|cta|global|shared|shared::cta|const"
                              r"|nc|ca|cg|cs|lu|cv|wb|wt|v2|v4|v8|L2::cache_hint|L2::(64|128|256)B"
                              r"|L1::(evict_normal|evict_unchanged|evict_first|evict_last|no_allocate)"
                              r"|L2::(evict_normal|evict_first|evict_last)")
_LDST_HINT = ("brrr emulates ld and st of .global, .shared (::cta) or generic addresses: {.v2, .v4, .v8} of "
              "b8-b64, u8-u64, s8-s64, f16, bf16, f16x2, bf16x2, f32, f64, with their cache, order and scope qualifiers")


def _ldst(s: Statement, instr: str, groups: list[list[str]]) -> str:
    op, *quals, element = instr.split(".")
    vector = next((int(q[1]) for q in quals if q in ("v2", "v4", "v8")), 1)
    ctype = _ELEMENTS.get(element)
    registers, address = (groups[0], groups[1:]) if op == "ld" else (groups[1] if len(groups) > 1 else [], groups[:1])
    hinted = 1 if "L2::cache_hint" in quals else 0  # the cache policy, a last operand with nothing to do here
    if (ctype is None or not all(_LDST_QUALIFIERS.fullmatch(q) for q in quals) or len(groups) != 2 + hinted
            or len(registers) != vector or not address):
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _LDST_HINT)
    shared = "shared" in quals or "shared::cta" in quals
    at = s.address(address[0][0], "shared_address" if shared else "global_address")
    order = ("Acquire" if "acquire" in quals else "Release" if "release" in quals
             else "Relaxed" if {"relaxed", "volatile", "mmio"} & set(quals) else "Plain")
    size = _SIZES[ctype]
    n = size * vector
    where = f"{RUNTIME}Space::{'Shared' if shared else 'Generic'}, {at}"
    if op == "ld":
        unpack = " ".join(f"{RUNTIME}from_bytes<{ctype}>({s.operand(r).expr}, brrr_b + {k * size});"
                          for k, r in enumerate(registers))
        return (f"{{ unsigned char brrr_b[{n}]; {RUNTIME}ld<{n}, {RUNTIME}Order::{order}>(brrr_b, {where}, "
                f"__FILE__, __LINE__); {unpack} }}")
    pack = " ".join(f"{RUNTIME}to_bytes<{ctype}>({s.value(r)}, brrr_b + {k * size});" for k, r in enumerate(registers))
    return (f"{{ unsigned char brrr_b[{n}]; {pack} {RUNTIME}st<{n}, {RUNTIME}Order::{order}>({where}, brrr_b, "
            "__FILE__, __LINE__); }")


# Instructions of one result that a function of the CPU runtime computes (named as the instruction, its
# dots as underscores: include/cpu/brrr_cpu.h and brrr_cpu_ldst.h), with how many sources each takes.
SCALAR = {
    **dict.fromkeys(("rcp_approx_f32", "rcp_approx_ftz_f32", "rcp_rn_f32", "rcp_rn_f64", "ex2_approx_f32",
                     "ex2_approx_ftz_f32", "lg2_approx_f32", "lg2_approx_ftz_f32", "sqrt_approx_f32",
                     "sqrt_approx_ftz_f32", "rsqrt_approx_f32", "rsqrt_approx_ftz_f32", "rsqrt_approx_f64",
                     "tanh_approx_f32", "sin_approx_f32", "sin_approx_ftz_f32", "cos_approx_f32", "cos_approx_ftz_f32",
                     "mov_b16", "mov_u16",
                     "mov_b32", "mov_u32", "mov_s32", "mov_b64", "mov_u64", "mov_f32", "mov_f64"), 1),
    "prmt_b32": 3, "lop3_b32": 4,
}


def _scalar(s: Statement, instr: str, groups: list[list[str]]) -> str | None:
    """`instr d, a, ...` of SCALAR, `mov` of %laneid, and mov's packing of two halves into a register
    (`mov.b32 d, {lo, hi}`) or back (`mov.b32 {lo, hi}, d`); None for any other instruction."""
    flat = [g[0] for g in groups if len(g) == 1]
    fn = instr.replace(".", "_")
    if instr in ("mov.u32", "mov.b32") and flat[1:] == ["%laneid"] and len(groups) == 2:
        return f"{RUNTIME}put({s.output(flat[0])}, {RUNTIME}laneid());"
    if fn in SCALAR and len(groups) == SCALAR[fn] + 1 and len(flat) == len(groups):
        return f"{RUNTIME}put({s.output(flat[0])}, {RUNTIME}{fn}({', '.join(s.value(r) for r in flat[1:])}));"
    half = {"mov.b32": "uint16_t", "mov.b64": "uint32_t"}.get(instr)
    if half is None or len(groups) != 2 or sorted(map(len, groups)) != [1, 2]:
        return None
    if len(groups[1]) == 2:  # pack
        lo, hi = (s.value(r) for r in groups[1])
        return f"{RUNTIME}put({s.output(groups[0][0])}, {RUNTIME}mov_pack_{instr[-3:]}({lo}, {hi}));"
    whole = f"{RUNTIME}bits_of<{'uint32_t' if half == 'uint16_t' else 'uint64_t'}>({s.value(groups[1][0])})"
    shift = 16 if half == "uint16_t" else 32
    return (f"{{ const auto brrr_v = {whole}; {RUNTIME}put({s.output(groups[0][0])}, static_cast<{half}>(brrr_v)); "
            f"{RUNTIME}put({s.output(groups[0][1])}, static_cast<{half}>(brrr_v >> {shift})); }}")


# Conversions tensor-core kernels use around mma (source operands each): tf32 rounding, and packing
# two floats into a register of two 16-bit values (the first source in the upper half).
_CVT = {"cvt.rna.tf32.f32": 1, "cvt.rn.bf16x2.f32": 2, "cvt.rn.f16x2.f32": 2}

_CP_ASYNC_HINT = ("brrr emulates cp.async.ca/.cg.shared.global{.L2::cache_hint} [dst], [src], size{, src_size}{, policy} "
                  "(size 4, 8 or 16; .cg 16), cp.async.commit_group, cp.async.wait_group N and cp.async.wait_all")


def _cp_async(s: Statement, instr: str, groups: list[list[str]]) -> str:
    if instr == "cp.async.commit_group" and not groups:
        return f"{RUNTIME}cp_async_commit_group(__FILE__, __LINE__);"
    if instr == "cp.async.wait_all" and not groups:
        return f"{RUNTIME}cp_async_wait_all(__FILE__, __LINE__);"
    if instr == "cp.async.wait_group" and len(groups) == 1:
        return f"{RUNTIME}cp_async_wait_group({s.value(groups[0][0])}, __FILE__, __LINE__);"
    m = re.fullmatch(r"cp\.async\.(ca|cg)\.shared(::cta)?\.global(\.L2::cache_hint)?(\.L2::(64|128|256)B)?", instr)
    hinted = 1 if m and m.group(3) else 0  # a cache policy last (createpolicy's): nothing to do on the CPU
    if not m or len(groups) - hinted not in (3, 4):
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _CP_ASYNC_HINT)
    to = s.address(groups[0][0], "shared_address")
    source = s.address(groups[1][0], "global_address")
    size = s.value(groups[2][0])
    read = s.value(groups[3][0]) if len(groups) - hinted == 4 else size
    return f"{RUNTIME}cp_async({to}, {source}, {size}, {read}, __FILE__, __LINE__);"


_WGMMA_HINT = ("brrr emulates wgmma.mma_async.sync.aligned.m64nNk16.f32.bf16.bf16 (or .f16.f16) d, a-desc, b-desc, "
               "scale-d, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b with both operands in shared memory and "
               "float32 accumulators (\"+f\"), plus wgmma.fence, .commit_group and .wait_group")
def _wgmma(s: Statement, instr: str, groups: list[list[str]]) -> str:
    if instr == "wgmma.fence.sync.aligned" and not groups:
        return f"{RUNTIME}wgmma_fence(__FILE__, __LINE__);"
    if instr == "wgmma.commit_group.sync.aligned" and not groups:
        return f"{RUNTIME}wgmma_commit_group(__FILE__, __LINE__);"
    if instr == "wgmma.wait_group.sync.aligned" and len(groups) == 1:
        return f"{RUNTIME}wgmma_wait_group({s.value(groups[0][0])}, __FILE__, __LINE__);"
    if instr.startswith("wgmma.mma_async") and len(groups) > 1 and len(groups[1]) > 1:
        raise UnsupportedPtx(f'inline PTX "{s.template}": A from registers (wgmma\'s register form)',
                             "brrr emulates wgmma with both operands in shared memory (two descriptors)")
    m = re.fullmatch(r"wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.(bf16|f16)\.(bf16|f16)", instr)
    if not m or m.group(2) != m.group(3) or len(groups) != 8 or int(m.group(1)) % 8 or not 8 <= int(m.group(1)) <= 256:
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _WGMMA_HINT)
    n, ab = int(m.group(1)), _TYPES[m.group(2)]
    d = groups[0]
    if len(d) != n // 2 or any(len(g) != 1 for g in groups[1:]):
        raise UnsupportedPtx(f'inline PTX "{s.template}": m64n{n}k16 with float32 accumulators takes {n // 2} '
                             "destination registers a thread and shared-memory descriptors for A and B", _WGMMA_HINT)
    for ref in d:
        if s.operand(ref).constraint not in ("+f", "=f"):
            raise UnsupportedPtx(f'inline PTX "{s.template}": the accumulator {ref} is not a float output ("+f")',
                                 _WGMMA_HINT)
    scale_d = groups[3][0]  # a block's predicate register (`setp.ne.b32 p, %N, 0`) as CUTLASS passes it
    pointers = ", ".join(f"&({s.operand(r).expr})" for r in d)
    rest = ", ".join(s.value(g[0]) for g in groups[4:])
    return (f"{{ float* const brrr_d[{len(d)}] = {{{pointers}}}; {RUNTIME}wgmma_mma_async<{n}, {RUNTIME}Type::{ab}>"
            f"(brrr_d, {s.value(groups[1][0])}, {s.value(groups[2][0])}, {s.value(scale_d)}, {rest}, "
            "__FILE__, __LINE__); }")


_MBARRIER_HINT = ("brrr emulates mbarrier.init, .arrive{.expect_tx} (a count, a state output or _), .expect_tx, .inval, "
                  "and .try_wait/.test_wait{.parity} in a wait loop or a selp of the predicate")
_TENSOR_HINT = ("brrr emulates cp.async.bulk.tensor.Nd.shared::cluster.global{.tile}.mbarrier::complete_tx::bytes "
                "[dst], [map, {c0, ...}], [mbar] and cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                "[dst], [src], size, [mbar]; their stores .global.shared::cta.bulk_group, with cp.async.bulk.commit_group "
                "and .wait_group{.read} (no multicast, no im2col, no reductions)")
_SPACE = r"(\.(relaxed|release|acquire)\.(cta|cluster))?(\.shared(::cta|::cluster)?)?"


def _mbarrier(s: Statement, instr: str, groups: list[list[str]]) -> str:
    flat = [g[0] for g in groups]
    if re.fullmatch(r"mbarrier\.init" + _SPACE + r"\.b64", instr) and len(flat) == 2:
        return f"{RUNTIME}mbarrier_init({s.address(flat[0], 'shared_address')}, {s.value(flat[1])}, __FILE__, __LINE__);"
    if re.fullmatch(r"mbarrier\.inval" + _SPACE + r"\.b64", instr) and len(flat) == 1:
        return f"{RUNTIME}no_op(__FILE__, __LINE__);"
    if re.fullmatch(r"mbarrier\.expect_tx" + _SPACE + r"\.b64", instr) and len(flat) == 2:
        return f"{RUNTIME}mbarrier_expect_tx({s.address(flat[0], 'shared_address')}, {s.value(flat[1])}, __FILE__, __LINE__);"
    m = re.fullmatch(r"mbarrier\.arrive(\.expect_tx)?" + _SPACE + r"\.b64", instr)
    if m and len(flat) in (2, 3):
        at = s.address(flat[1], "shared_address")
        count, tx = ("1", s.value(flat[2])) if m.group(1) else (s.value(flat[2]) if len(flat) == 3 else "1", "0")
        call = f"{RUNTIME}mbarrier_arrive({at}, {count}, {tx}, __FILE__, __LINE__)"
        if flat[0] == "_":
            return f"(void){call};"
        out = s.operand(flat[0])
        return f"({out.expr}) = {call};"
    raise UnsupportedPtx(f'inline PTX "{s.template}"', _MBARRIER_HINT)


def _tensor_store(s: Statement, instr: str, args: str) -> str | None:
    """cp.async.bulk.tensor's store of a box from shared memory, completed through bulk groups; None for
    another form."""
    m = re.fullmatch(r"cp\.async\.bulk\.tensor\.([1-5])d\.global\.shared::cta(\.tile)?\.bulk_group(\.L2::cache_hint)?", instr)
    a = re.fullmatch(r"\[\s*(%\d+)\s*,\s*\{([^}]*)\}\s*\]\s*,\s*\[\s*(%\d+)\s*\](\s*,\s*%\d+)?", args)
    if not m or not a or bool(m.group(3)) != bool(a.group(4)):
        return None
    rank, coords = int(m.group(1)), [c.strip() for c in a.group(2).split(",")]
    if len(coords) != rank:
        raise UnsupportedPtx(f'inline PTX "{s.template}": a {rank}-d copy takes {rank} coordinates', _TENSOR_HINT)
    listed = ", ".join(f"static_cast<int32_t>({s.value(c)})" for c in coords)
    return (f"{{ const int32_t brrr_c[{rank}] = {{{listed}}}; {RUNTIME}tensor_store<{rank}>("
            f"{RUNTIME}global_address({s.value(a.group(1))}), brrr_c, {RUNTIME}shared_address({s.value(a.group(3))}), "
            "__FILE__, __LINE__); }")


def _tensor(s: Statement, instr: str, args: str) -> str:
    if (store := _tensor_store(s, instr, args)) is not None:
        return store
    m = re.fullmatch(r"cp\.async\.bulk\.tensor\.([1-5])d\.shared::(cluster|cta)\.global(\.tile)?"
                     r"\.mbarrier::complete_tx::bytes(\.L2::cache_hint)?", instr)
    a = re.fullmatch(r"\[\s*(%\d+)\s*\]\s*,\s*\[\s*(%\d+)\s*,\s*\{([^}]*)\}\s*\]\s*,\s*\[\s*(%\d+)\s*\](\s*,\s*%\d+)?", args)
    if not m or not a or bool(m.group(4)) != bool(a.group(5)):
        raise UnsupportedPtx(f'inline PTX "{s.template}"', _TENSOR_HINT)
    rank = int(m.group(1))
    coords = [c.strip() for c in a.group(3).split(",")]
    if len(coords) != rank:
        raise UnsupportedPtx(f'inline PTX "{s.template}": a {rank}-d copy takes {rank} coordinates', _TENSOR_HINT)
    listed = ", ".join(f"static_cast<int32_t>({s.value(c)})" for c in coords)
    return (f"{{ const int32_t brrr_c[{rank}] = {{{listed}}}; {RUNTIME}tensor_load<{rank}>("
            f"{RUNTIME}shared_address({s.value(a.group(1))}), {RUNTIME}global_address({s.value(a.group(2))}), brrr_c, "
            f"{RUNTIME}shared_address({s.value(a.group(4))}), __FILE__, __LINE__); }}")


def _bulk(s: Statement, instr: str, args: str) -> str | None:
    """cp.async.bulk's plain copies (no tensor map): a load into shared memory completing an mbarrier's
    bytes, or a store to global memory in a bulk group; None for any other form."""
    store = re.fullmatch(r"cp\.async\.bulk\.global\.shared::cta\.bulk_group(\.L2::cache_hint)?", instr)
    a = re.fullmatch(r"\[\s*(%\d+)\s*\]\s*,\s*\[\s*(%\d+)\s*\]\s*,\s*(%\d+|\d+)\s*(,\s*%\d+)?", args)
    if store and a and bool(store.group(1)) == bool(a.group(4)):
        return (f"{RUNTIME}bulk_store({RUNTIME}global_address({s.value(a.group(1))}), {RUNTIME}shared_address("
                f"{s.value(a.group(2))}), static_cast<int64_t>({s.value(a.group(3))}), __FILE__, __LINE__);")
    m = re.fullmatch(r"cp\.async\.bulk\.shared::(cluster|cta)\.global\.mbarrier::complete_tx::bytes(\.L2::cache_hint)?", instr)
    a = re.fullmatch(r"\[\s*(%\d+)\s*\]\s*,\s*\[\s*(%\d+)\s*\]\s*,\s*(%\d+|\d+)\s*,\s*\[\s*(%\d+)\s*\](\s*,\s*%\d+)?", args)
    if not m or not a or bool(m.group(2)) != bool(a.group(5)):
        return None
    return (f"{RUNTIME}bulk_load({RUNTIME}shared_address({s.value(a.group(1))}), {RUNTIME}global_address({s.value(a.group(2))}), "
            f"static_cast<int64_t>({s.value(a.group(3))}), {RUNTIME}shared_address({s.value(a.group(4))}), __FILE__, __LINE__);")


_WAIT = re.compile(r"mbarrier\.(try_wait|test_wait)(\.parity)?" + _SPACE + r"\.b64")


def _wait_block(template: str, ops: list[Operand]) -> str | None:
    """`{ .reg .pred P; [L:] mbarrier.try_wait.parity... P, [%a], %p; @P bra D; bra L; D: }` (a wait loop) or
    `{ .reg .pred P; mbarrier.try_wait... P, [%a], %p; selp.b32 %o, 1, 0, P; }` (the predicate as 0 or 1)."""
    if not (template.startswith("{") and template.endswith("}")):
        return None
    statements = [re.sub(r"^(\w+:\s*)+", "", part.strip()) for part in template[1:-1].split(";")]
    statements = [t for t in statements if t and not t.startswith(".reg")]
    waits = [t for t in statements if _WAIT.match(t)]
    if len(waits) != 1:
        return None
    s = Statement(waits[0], ops)
    m = re.match(r"^(\S+)\s+(.*)$", waits[0])
    if not m or not _WAIT.fullmatch(m.group(1)):
        raise UnsupportedPtx(f'inline PTX "{template}"', _MBARRIER_HINT)
    flat = [g[0] for g in arg_groups(m.group(2))]
    if len(flat) not in (3, 4):
        raise UnsupportedPtx(f'inline PTX "{template}"', _MBARRIER_HINT)
    pred, at, phase = flat[0], s.address(flat[1], "shared_address"), s.value(flat[2])
    parity = bool(re.match(r"mbarrier\.\w+\.parity", m.group(1)))
    test = f"{RUNTIME}{'mbarrier_test_parity' if parity else 'mbarrier_test_token'}({at}, {phase}, __FILE__, __LINE__)"
    others = [t for t in statements if t is not waits[0]]
    if any(t.startswith(("bra", "@")) for t in others):
        if parity:
            return f"{RUNTIME}mbarrier_wait_parity({at}, {phase}, __FILE__, __LINE__);"
        return f"while (!{test}) {{}}"
    sel = [re.fullmatch(r"selp\.(b32|u32|s32)\s+(%\d+)\s*,\s*1\s*,\s*0\s*,\s*" + re.escape(pred), t) for t in others]
    if len(others) == 1 and sel[0]:
        return f"({s.operand(sel[0].group(2)).expr}) = {test};"
    raise UnsupportedPtx(f'inline PTX "{template}"', _MBARRIER_HINT)


def _cvta(s: Statement, args: str, to_shared: bool) -> str:
    """`cvta.to.shared.u64 %0, %1` (a generic pointer's .shared address: an offset of the block's
    shared memory, as __cvta_generic_to_shared gives) and `cvta.shared.u64 %0, %1` (back)."""
    groups = [g[0] for g in arg_groups(args)]
    if len(groups) != 2:
        raise UnsupportedPtx(f'inline PTX "{s.template}"', "cvta takes a destination and a source")
    dst, src = s.operand(groups[0]).expr, s.value(groups[1])
    if to_shared:
        return f"({dst}) = __cvta_generic_to_shared(reinterpret_cast<const void*>({src}));"
    return f"({dst}) = reinterpret_cast<uintptr_t>(__cvta_shared_to_generic(static_cast<size_t>({src})));"


# Thread block clusters (include/cpu/brrr_cpu_runtime.cpp): the special registers a kernel reads with
# `mov.u32 %0, %%cluster_ctarank;`, the cluster barrier, and mapa on generic addresses (what
# cooperative groups' map_shared_rank compiles to).
_CLUSTER_REGISTERS = {
    "cluster_ctarank": "::brrr_cpu::cluster_block_rank()",
    "cluster_nctarank": "(::brrr_cpu::cluster_dims().x * ::brrr_cpu::cluster_dims().y * ::brrr_cpu::cluster_dims().z)",
    "is_explicit_cluster": "(::brrr_cpu::cluster_dims().x * ::brrr_cpu::cluster_dims().y * ::brrr_cpu::cluster_dims().z > 1)",
    **{f"cluster_ctaid.{a}": f"::brrr_cpu::cluster_block_index().{a}" for a in "xyz"},
    **{f"cluster_nctaid.{a}": f"::brrr_cpu::cluster_dims().{a}" for a in "xyz"},
    **{f"clusterid.{a}": f"::brrr_cpu::cluster_index().{a}" for a in "xyz"},
    **{f"nclusterid.{a}": f"(gridDim.{a} / ::brrr_cpu::cluster_dims().{a})" for a in "xyz"},
}
_MAPA_HINT = ("brrr emulates mapa.u64 on generic addresses (what cooperative groups' map_shared_rank gives); a "
              ".shared::cluster address (mapa.shared::cluster, ld/st.shared::cluster) is not emulated on the CPU")


def _cluster(s: Statement, instr: str, args: str) -> str | None:
    """The cluster barrier, a cluster special register read, or mapa; None for other instructions."""
    if barrier := re.fullmatch(r"barrier\.cluster\.(arrive|wait)(\.(release|relaxed|acquire))?(\.aligned)?", instr):
        if args:
            raise UnsupportedPtx(f'inline PTX "{s.template}"', "barrier.cluster.arrive and .wait take no operands")
        return f"::brrr_cpu::cluster_{barrier.group(1)}(__FILE__, __LINE__);"
    if re.fullmatch(r"mov\.[usb]32", instr):
        parts = [g[0] for g in arg_groups(args)]
        special = parts[1].lstrip("%") if len(parts) == 2 else ""
        if special not in _CLUSTER_REGISTERS:
            return None
        return f"({s.operand(parts[0]).expr}) = {_CLUSTER_REGISTERS[special]};"
    if instr.startswith("mapa"):
        parts = [g[0] for g in arg_groups(args)]
        if not re.fullmatch(r"mapa(\.generic)?\.u64", instr) or len(parts) != 3:
            raise UnsupportedPtx(f'inline PTX "{s.template}"', _MAPA_HINT)
        mapped = (f"::brrr_cpu::cluster_map_shared(reinterpret_cast<const void*>({s.value(parts[1])}), "
                  f"static_cast<unsigned>({s.value(parts[2])}), __FILE__, __LINE__)")
        return f"({s.operand(parts[0]).expr}) = reinterpret_cast<uintptr_t>({mapped});"
    return None


_NO_OPS = re.compile(r"fence\.mbarrier_init\.release\.cluster|prefetch\.tensormap|setmaxnreg\.(inc|dec)\.sync\.aligned\.u32"
                     # bulk groups: their stores are made when issued (brrr_cpu_tma.h)
                     r"|cp\.async\.bulk\.commit_group|cp\.async\.bulk\.wait_group(\.read)?"
                     r"|fence\.proxy\.tensormap::generic\.\w+\.\w+"
                     # programmatic dependent launch: launches on the CPU end before the next starts
                     r"|griddepcontrol\.(wait|launch_dependents)")


# Memory fences (membar, and fence's sequentially consistent and acquire-release forms): __threadfence.
_FENCES = re.compile(r"membar\.(cta|gl|sys)|fence\.(sc|acq_rel)\.(cta|cluster|gpu|sys)")


def translate(template: str, sections: list[str]) -> str | None:
    """C++ for one PTX instruction of these families, or a block of them (cpu_ptx_blocks), None for
    any other; UnsupportedPtx for a form of them brrr does not emulate. `template` is the asm string
    with whitespace collapsed and the trailing ';' dropped; `sections` the asm body split at its
    top-level ':'."""
    ops = operands(sections)
    template = template.replace("%%", "%")  # asm's escape: `%%laneid`, a block's `%%px`, are PTX's %laneid, %px
    if (wait := _wait_block(template, ops)) is not None:
        return wait
    if (block := translate_block(template, ops, one)) is not None:
        return block
    return one(template, ops)


def one(template: str, ops: list[Operand]) -> str | None:
    """C++ for one instruction, its operands `ops`; None where brrr does not know the instruction."""
    if ";" in template:
        return None
    m = re.match(r"^([a-z][\w.:]*)\s*(.*)$", template)
    if not m:
        return None
    instr, args = m.group(1), m.group(2)
    family = instr.split(".")[0] if not instr.startswith("cp.async") else "cp.async"
    if re.fullmatch(r"fence\.proxy\.async(\.shared::(cta|cluster)|\.global)?", instr) and not args:
        return f"{RUNTIME}fence_proxy_async(__FILE__, __LINE__);"
    if _NO_OPS.fullmatch(instr):
        return f"{RUNTIME}no_op(__FILE__, __LINE__);"
    if _FENCES.fullmatch(instr) and not args:
        return "__threadfence();"
    if instr.startswith("createpolicy.") and args:  # an L2 cache policy: opaque, and nothing to the CPU
        return f"{RUNTIME}put({Statement(template, ops).output(arg_groups(args)[0][0])}, uint64_t(0));"
    if instr.startswith(("barrier.cluster", "mov.", "mapa")) and (
            cluster := _cluster(Statement(template, ops), instr, args)) is not None:
        return cluster
    if cvta := re.fullmatch(r"cvta(\.to)?\.shared(::cta)?\.u(32|64)", instr):
        return _cvta(Statement(template, ops), args, to_shared=bool(cvta.group(1)))
    if family not in ("mma", "ldmatrix", "stmatrix", "cp.async", "wgmma", "mbarrier", "ld", "st") and instr not in _CVT:
        s, groups = Statement(template, ops), arg_groups(args) if args else []
        flat = [g[0] if len(g) == 1 else "{" + ", ".join(g) + "}" for g in groups]
        if instr.replace(".", "_") in SCALAR:  # the f32 .approx functions before alu's 16-bit ones
            return _scalar(s, instr, groups)
        for family_of in (alu, atom, warp, cvt):
            if (call := family_of(s, instr, flat)) is not None:
                return call
        return _scalar(s, instr, groups)
    s = Statement(template, ops)
    if instr.startswith("cp.async.bulk.tensor"):
        return _tensor(s, instr, args)
    if instr.startswith("cp.async.bulk"):
        if (call := _bulk(s, instr, args)) is not None:
            return call
        raise UnsupportedPtx(f'inline PTX "{template}"', _TENSOR_HINT + "; " + _CP_ASYNC_HINT)
    groups = arg_groups(args) if args else []
    if instr in _CVT:
        if len(groups) != _CVT[instr] + 1:
            raise UnsupportedPtx(f'inline PTX "{template}"', f"{instr} takes {_CVT[instr]} source operands")
        sources = ", ".join(s.value(g[0]) for g in groups[1:])
        return f"{RUNTIME}set_reg({s.operand(groups[0][0]).expr}, {RUNTIME}{instr.replace('.', '_')}({sources}));"
    if family == "mbarrier":
        return _mbarrier(s, instr, groups)
    if family == "wgmma":
        return _wgmma(s, instr, groups)
    if family == "mma":
        return _mma(s, instr, groups)
    if family in ("ldmatrix", "stmatrix"):
        return _matrix(s, instr, groups)
    if family in ("ld", "st"):
        return _ldst(s, instr, groups)
    return _cp_async(s, instr, groups)
