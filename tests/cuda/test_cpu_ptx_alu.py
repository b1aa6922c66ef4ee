"""Arithmetic, atomics and blocks of inline PTX on the CPU (pipeline/cuda/cpu_ptx_alu.py, cpu_ptx_atom.py,
cpu_ptx_blocks.py; include/cpu/brrr_cpu_alu.h): each result equals the PTX ISA's definition, written
out again here in Python (exact rational arithmetic rounded once for the floats), and a block with an
instruction brrr cannot run is refused naming it."""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from pathlib import Path

import pytest
from cpu_programs import build, run

from brrr_kernels.cuda.cpu_ptx import translate
from brrr_kernels.cuda.cpu_ptx_operands import UnsupportedPtx

CASES = Path(__file__).with_name("ptx_alu_cases.cu")
THREADS, WORDS_A_THREAD = 32, 24
WORDS = [(0x9E3779B9 * (i + 1) & 0xFFFFFFFF) ^ 0x85EBCA6B for i in range(THREADS)]
M32 = 0xFFFFFFFF


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-ptx-alu"))


def words(out: str) -> list[int]:
    assert not out.startswith("FAULT"), out
    return [int(v) for v in out.split()]


def signed(x: int, bits: int = 32) -> int:
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def bfe(a: int, pos: int, length: int, is_signed: bool) -> int:
    sign = is_signed and length and a >> min(pos + length - 1, 31) & 1
    return sum(((a >> (pos + i) & 1) if i < length and pos + i < 32 else sign) << i for i in range(32))


def bfi(a: int, b: int, pos: int, length: int) -> int:
    for i in range(length):
        if pos + i < 32:
            b = b & ~(1 << (pos + i)) | (a >> i & 1) << (pos + i)
    return b & M32


def integer_results(t: int) -> list[int]:
    a, b, c = WORDS[t], WORDS[(t + 5) % THREADS], WORDS[(t + 11) % THREADS]
    sa, sb, sc = signed(a), signed(b), signed(c)
    n, m = b & 63, c & 63
    wide, swide = a * b, sa * sb
    return [(sa + sb) & M32, (a - b) & M32, a * b & M32, (sa * sb >> 32) & M32, wide & M32, wide >> 32,
            (sa * sb + sc) & M32, 0 if n >= 32 else a << n & M32, (sa >> min(m, 31)) & M32,
            0 if m >= 32 else a >> m, min(sa, sb) & M32, max(a, b), -sa & M32, abs(sa) & M32, ~a & M32,
            bin(a).count("1"), 32 - (a >> (b & 31)).bit_length(), int(f"{a:032b}"[::-1], 2),
            bfe(a, b & 31, c & 31, False), bfe(a, b & 31, c & 15, True), bfi(a, b, c & 31, c >> 8 & 31),
            wide >> 32 & M32, swide & M32, (swide >> 32) & M32]


def test_integer_and_bit_instructions_follow_the_ptx_isa(program: Path) -> None:
    got = words(run(program, "integers"))
    assert got == [r for t in range(THREADS) for r in integer_results(t)]


# Floats: (mantissa bits, smallest normal exponent) of each type, rounded to nearest even once.
F32, F16, BF16 = (24, -126), (11, -14), (8, -126)


def rounded(x: Fraction, kind: tuple[int, int]) -> Fraction:
    """x rounded to nearest even in a binary type of `kind` (subnormals kept; no overflow here)."""
    if x == 0:
        return Fraction(0)
    bits, emin = kind
    mag = abs(x)
    e = mag.numerator.bit_length() - mag.denominator.bit_length()
    e = e - 1 if Fraction(2) ** e > mag else e
    quantum = Fraction(2) ** (max(e, emin) - bits + 1)
    q, rest = divmod(mag, quantum)
    q += 1 if rest > quantum / 2 or (rest == quantum / 2 and q % 2) else 0
    return q * quantum * (1 if x > 0 else -1)


def f32(bits: int) -> Fraction:
    return Fraction(struct.unpack("<f", struct.pack("<I", bits))[0])


def f32_bits(x: Fraction | float) -> int:
    return struct.unpack("<I", struct.pack("<f", float(x)))[0]


def half_bits(x: Fraction, kind: tuple[int, int]) -> int:
    """The 16 bits of x (already rounded to `kind`)."""
    import torch

    dtype = torch.float16 if kind == F16 else torch.bfloat16
    return int(torch.tensor([float(x)], dtype=torch.float64).to(dtype).view(torch.int16).item()) & 0xFFFF


def half_value(bits: int, kind: tuple[int, int]) -> Fraction:
    import torch

    dtype = torch.float16 if kind == F16 else torch.bfloat16
    return Fraction(float(torch.tensor([bits], dtype=torch.int32).to(torch.int16).view(dtype).item()))


def pair(hi: Fraction, lo: Fraction, kind: tuple[int, int]) -> list[Fraction]:
    """cvt.rn.{f16,bf16}x2.f32 d, hi, lo: [low lane, high lane]."""
    return [rounded(lo, kind), rounded(hi, kind)]


def packed(lanes: list[Fraction], kind: tuple[int, int]) -> int:
    return half_bits(lanes[0], kind) | half_bits(lanes[1], kind) << 16


def lanewise(fn, kind: tuple[int, int], *pairs: list[Fraction]) -> int:
    return packed([rounded(fn(*(p[i] for p in pairs)), kind) for i in range(2)], kind)


def value_of(a: int) -> Fraction:
    return rounded(Fraction((a % 20001) - 10000) / 7, F32)


def float_results(t: int) -> list[int]:
    x, y, z = (value_of(WORDS[(t + k) % THREADS]) for k in (0, 5, 11))
    r = [rounded(x + y, F32), rounded(x - y, F32), rounded(x * y, F32), rounded(x * y + z, F32), rounded(x / y, F32),
         min(x, y), max(x, y), -x, abs(y)]
    milli = f32(f32_bits(0.001))
    sat = rounded(rounded(x * milli, F32) + rounded(y * milli, F32), F32)
    r.append(min(max(sat, Fraction(0)), Fraction(1)))
    out = [f32_bits(v) for v in r]
    out.append(f32_bits(0.0) if x >= 0 else f32_bits(-0.0))  # mul.ftz of a subnormal: a zero of its sign
    hxy, hyz, hzx = pair(x, y, F16), pair(y, z, F16), pair(z, x, F16)
    bxy, byz, bzx = pair(x, y, BF16), pair(y, z, BF16), pair(z, x, BF16)
    out += [lanewise(lambda a, b, c: a * b + c, F16, hxy, hyz, hzx), lanewise(lambda a, b: a + b, F16, hxy, hyz),
            lanewise(lambda a, b: a - b, F16, hxy, hzx), lanewise(lambda a, b: a * b, F16, hyz, hzx),
            lanewise(lambda a, b, c: a * b + c, BF16, bxy, byz, bzx), lanewise(lambda a, b: a + b, BF16, bxy, byz),
            lanewise(max, BF16, bxy, bzx), lanewise(min, F16, hxy, hyz), lanewise(lambda a: -a, F16, hxy),
            lanewise(abs, BF16, byz)]
    out += [f32_bits(rounded(min(x, y) + 1, F32)), 7 if x > 0 and t & 1 else 9, (2 * WORDS[t] & M32) >> 1]
    return out


def test_float_and_packed_16_bit_math_and_blocks_follow_the_ptx_isa(program: Path) -> None:
    got = words(run(program, "floats"))
    want = [r for t in range(THREADS) for r in float_results(t)]
    wrong = [(i // WORDS_A_THREAD, i % WORDS_A_THREAD, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not wrong, wrong[:8]
    assert len(got) == len(want)


def conversion_results(t: int) -> list[int]:
    a = WORDS[t]
    sa, x = signed(a), value_of(a)
    v = rounded(x * Fraction(1, 2), F32)
    d = float(x) * 1.1  # a double product, as the kernel's
    bf = (a >> 16) & 0xBFFF
    xm = rounded(x * f32(f32_bits(0.001)), F32)
    return [round(v) & M32, math.trunc(v) & M32, math.floor(v) & M32, min(max(math.ceil(v), 0), M32),
            f32_bits(rounded(Fraction(sa), F32)), half_bits(rounded(x, F16), F16), bf << 16, f32_bits(round(v)),
            signed(a & 0xFF, 8) & M32, min(max(sa >> 20, 0), 255), a & 0xFFFF, min(max(sa >> 8, -32768), 32767) & M32,
            f32_bits(rounded(Fraction(d), F32)), half_bits(rounded(xm, BF16), BF16), 0, 2**31 - 1]


def test_cvt_rounds_saturates_and_extends_as_the_ptx_isa_says(program: Path) -> None:
    got = words(run(program, "conversions"))
    want = [r for t in range(THREADS) for r in conversion_results(t)]
    wrong = [(i // 16, i % 16, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not wrong and len(got) == len(want), wrong[:8]


def int8_results(lane: int) -> list[int]:
    """D = A B + C of the int8_mma case at this lane's four accumulators (rows g, g + 8; columns 2t, 2t + 1)."""
    def a8(r: int, k: int) -> int:
        return (r * 37 + k * 11) % 255 - 127

    def b8(k: int, c: int) -> int:
        return (k * 13 + c * 7) % 251 - 125

    g, t = divmod(lane, 4)
    places = [(g + 8 * (i >> 1), 2 * t + (i & 1)) for i in range(4)]
    s32 = [sum(a8(r, k) * b8(k, c) for k in range(32)) + r * 1000 - c * 77 for r, c in places]
    u8s8 = [sum((a8(r, k) + 127) * b8(k, c) for k in range(16)) + r * 1000 - c * 77 for r, c in places]
    satf = [min(max(sum(a8(r, k) * b8(k, c) for k in range(32)) + 2147483000 + i, -2**31), 2**31 - 1)
            for i, (r, c) in enumerate(places)]
    return [v & M32 for v in (*s32, *u8s8, *satf)]


def test_int8_tensor_core_mma_gives_exact_sums_wrapped_or_saturated(program: Path) -> None:
    got = words(run(program, "int8_mma"))
    assert got == [w for lane in range(THREADS) for w in int8_results(lane)]
    assert 2**31 - 1 in got  # the .satfinite accumulators did clamp


def approx16_results(t: int) -> list[int]:
    x, y = (rounded(value_of(WORDS[(t + k) % THREADS]) / 1500, F32) for k in (0, 5))
    h2, b2 = pair(x * 8, y * 8, F16), pair(x * 8, y * 8, BF16)
    h = rounded(rounded(x * 3, F32), F16)

    def exact(fn, v: Fraction, kind: tuple[int, int]) -> Fraction:
        return rounded(Fraction(fn(float(v))), kind)  # a double of the function, rounded to 16 bits

    return [packed([exact(math.exp2, v, F16) for v in h2], F16), packed([exact(math.exp2, v, BF16) for v in b2], BF16),
            packed([exact(math.tanh, v, F16) for v in h2], F16), packed([exact(math.tanh, v, BF16) for v in b2], BF16),
            half_bits(exact(math.exp2, h, F16), F16), half_bits(exact(math.tanh, h, F16), F16)]


def test_16_bit_approx_functions_are_the_exact_values_rounded_once(program: Path) -> None:
    got = words(run(program, "approx16"))
    assert got == [w for t in range(THREADS) for w in approx16_results(t)]


def test_a_cache_hinted_copy_with_its_policy_and_the_fences_around_a_lock_run(program: Path) -> None:
    """Marlin's createpolicy block and cp.async ... L2::cache_hint, fence.acq_rel.gpu, membar.gl."""
    got = words(run(program, "cache_hinted"))
    assert got == [w for t in range(THREADS) for w in WORDS[4 * ((t + 1) % 8):4 * ((t + 1) % 8) + 4]]


def test_atom_and_red_give_the_old_values_and_totals_of_atomics(program: Path) -> None:
    got = words(run(program, "atomics"))
    tickets, flags = got[0:2 * THREADS:2], got[1:2 * THREADS:2]
    assert tickets == list(range(THREADS))  # atom.shared.add's old values, each once (printed sorted)
    assert flags[0] == 32 * 1000 + 100  # thread 0's cas found the 32 tickets and left 100
    assert all(flags[1:])  # atom.inc's old values wrap below 10
    counters, sums = got[2 * THREADS:2 * THREADS + 4], got[2 * THREADS + 4:]
    assert counters == [sum(range(1, THREADS + 1)), 11, THREADS % 10, M32]
    assert sums == [f32_bits(0.5 * sum(t // 4 for t in range(THREADS) if t % 4 == j)) for j in range(4)]


def test_setp_gives_both_destinations_and_combines_with_a_third_predicate(program: Path) -> None:
    got = words(run(program, "setp_pairs"))
    for t in range(THREADS):
        a, b = signed(WORDS[t]), signed(WORDS[(t + 5) % THREADS])
        x, y = value_of(WORDS[t]), value_of(WORDS[(t + 11) % THREADS])
        odd = bool(t & 1)
        lt, gt, hs, eq = a < b, x > y, WORDS[t] >= WORDS[(t + 5) % THREADS], (a & 3) == (b & 3)
        want = [lt, not lt, gt and not odd, (not gt) and not odd, hs != bool(t & 2), (not eq) or bool(t & 4)]
        assert got[6 * t:6 * t + 6] == [int(w) for w in want], t


def test_predicated_loads_and_copies_in_blocks_run_only_where_the_predicate_holds(program: Path) -> None:
    got = words(run(program, "guarded"))
    for t in range(THREADS):
        loaded = WORDS[4 * (t % 8):4 * (t % 8) + 4] if t % 3 else [t, t + 1, t + 2, t + 3]
        copied = WORDS[4 * ((t + 3) % 8):4 * ((t + 3) % 8) + 4] if t % 2 else [0xDEADBEEF] * 4
        assert got[8 * t:8 * t + 8] == loaded + copied, t


def warp_results(t: int) -> list[int]:
    w = WORDS[t]
    low_bits = sum((WORDS[k] & 1) << k for k in range(THREADS))
    return [WORDS[31 - t], WORDS[t - 1] if t >= 1 else w, WORDS[t + 2] if t + 2 < THREADS else w,
            WORDS[t ^ 1], low_bits, 1, 1, 0, sum(x & 0xFFFF for x in WORDS) & M32, max(signed(x) for x in WORDS) & M32,
            _xor_all(WORDS), 99 if t == 0 else 1, 1 if t == 1 else 0, M32, WORDS[(t + 1) % THREADS], 0]


def _xor_all(xs: list[int]) -> int:
    out = 0
    for x in xs:
        out ^= x
    return out


def test_warp_instructions_and_barrier_zero_give_cudas_intrinsics_results(program: Path) -> None:
    got = words(run(program, "warps"))
    assert got == [r for t in range(THREADS) for r in warp_results(t)]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-ptx-alu-checked"), checked=True)


@pytest.mark.parametrize("build_kind", ["program", "checked"])
def test_named_barriers_order_a_producer_warp_and_its_consumers(request: pytest.FixtureRequest, build_kind: str) -> None:
    """bar.arrive / bar.sync 1, 128 and barrier.sync 2, 64 among 3 of 4 warps: what each thread reads
    is what was written before the barrier, and the checked build reports no race on the tiles."""
    got = words(run(request.getfixturevalue(build_kind), "named_barriers"))
    tile = [w ^ 0x5A5A5A5A for w in WORDS]
    for t in range(128):
        warp, lane = divmod(t, 32)
        if warp == 0:
            assert got[2 * t:2 * t + 2] == [0, 0], t
            continue
        traded = (tile[((t - 64 + 32) % 64) % 32] + 2 + ((t - 64 + 32) % 64) // 32) & M32 if warp >= 2 else 7
        assert got[2 * t:2 * t + 2] == [tile[(lane + warp) % 32], traded], t


def test_a_named_barrier_that_never_completes_is_a_deadlock_named_at_its_line(program: Path) -> None:
    out = run(program, "named_deadlock")
    line = next(n for n, text in enumerate(CASES.read_text().splitlines(), 1) if "waits forever" in text)
    assert out.startswith(f"FAULT: {CASES.resolve()}:{line}:") and "deadlock" in out, out
    assert "named barrier (bar.sync)" in out, out


@pytest.mark.parametrize("template, named", [
    ("{ .reg .pred p; setp.ne.b32 p, %0, 0; @p match.any.sync.b32 %1, %1, -1; }", "match.any.sync.b32"),
    ("{ .reg .pred p; L1: setp.ne.b32 p, %0, 0; @p bra L1; }", "inline PTX"),
    ("{ .reg .f32 x; add.rz.f32 x, %1, %1; }", "rounding .rz"),
    ("atom.global.add.noftz.f16 %1, [%0], %1", "atom"),
])
def test_a_block_or_instruction_brrr_cannot_run_is_refused_naming_it(template: str, named: str) -> None:
    sections = [f'"{template}"', ' "+r"(a) ', ' "l"(p) ']
    try:
        out = translate(template, sections)
    except UnsupportedPtx as e:
        assert named in str(e) + e.hint, (str(e), e.hint)
    else:
        assert out is None and named == "inline PTX", out  # labels: cpu_source refuses it as unknown
