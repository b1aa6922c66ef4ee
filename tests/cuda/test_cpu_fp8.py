"""8-bit floats on the CPU (include/cpu/cuda_fp8.h): every conversion to fp8 a kernel makes through
cuda_fp8.h equals the formats' definition written out here (exact rational rounding to nearest even;
an overflow is NaN in E4M3 and infinity in E5M2, or the largest finite value with __NV_SATFINITE),
every conversion back equals torch's float8_e4m3fn / float8_e5m2, and the classes pack, clamp and
convert as CUDA's do. (torch's own float-to-E4M3 saturates, so it is no oracle for __NV_NOSAT.)"""

from __future__ import annotations

import math
import struct
from fractions import Fraction
from pathlib import Path

import pytest
import torch
from cpu_programs import build, run

from brrr_kernels.cuda.cpu_ptx import translate
from brrr_kernels.cuda.cpu_ptx_operands import UnsupportedPtx

CASES = Path(__file__).with_name("fp8_cases.cu")
HALVES, HASHED = 1 << 16, 1 << 12
KINDS = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
FORMATS = {"e4m3": (3, 7), "e5m2": (2, 15)}  # mantissa bits, exponent bias
NAN_BITS = 0x7F  # a float NaN converted, in either kind (sign dropped, as CUDA's conversion does)
OVERFLOW = {"e4m3": 0x7F, "e5m2": 0x7C}  # without saturation: NaN (E4M3 has no infinity), infinity


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-fp8"))


def words(out: str) -> list[int]:
    assert not out.startswith("FAULT"), out
    return [int(v) for v in out.split()]


def inputs() -> torch.Tensor:
    """The case's inputs as float32: every half, then hashed float bit patterns."""
    halves = torch.arange(HALVES, dtype=torch.int32).to(torch.int16).view(torch.float16).float()
    bits = [(i * 0x9E3779B9 & 0xFFFFFFFF) ^ 0x85EBCA6B for i in range(HALVES, HALVES + HASHED)]
    hashed = torch.tensor([struct.unpack("<f", struct.pack("<I", b))[0] for b in bits], dtype=torch.float32)
    return torch.cat([halves, hashed])


def value(b: int, kind: str) -> Fraction | None:
    """An fp8 byte's value by the format's definition; None for NaN and infinity."""
    mantissa_bits, bias = FORMATS[kind]
    exponent, mantissa = (b & 0x7F) >> mantissa_bits, b & ((1 << mantissa_bits) - 1)
    if (kind == "e4m3" and b & 0x7F == 0x7F) or (kind == "e5m2" and exponent == 31):
        return None
    whole = mantissa if exponent == 0 else mantissa + (1 << mantissa_bits)
    return (-1 if b & 0x80 else 1) * Fraction(whole) * Fraction(2) ** (max(exponent, 1) - bias - mantissa_bits)


FINITE = {kind: {float(value(b, kind)): b for b in range(0x80) if value(b, kind) is not None} for kind in FORMATS}


def encode(x: float, kind: str, satfinite: bool) -> int:
    """x to fp8 by the definition: rounded once to nearest even in steps of x's binade (the subnormals' below)."""
    if math.isnan(x):
        return NAN_BITS
    mantissa_bits, bias = FORMATS[kind]
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    finite = FINITE[kind]
    largest = max(finite)
    if math.isinf(x):
        rounded = math.inf
    else:  # in double, exactly: a power-of-two step, and a quotient of at most 2^25 (a float's bits)
        exponent = max(math.frexp(abs(x))[1] - 1, 1 - bias) if x else 1 - bias
        step = math.ldexp(1.0, exponent - mantissa_bits)
        rounded = round(abs(x) / step) * step  # round(): to nearest, ties to even
    if rounded > largest:
        return sign | (finite[largest] if satfinite else OVERFLOW[kind])
    return sign | finite[rounded]


def test_every_conversion_to_fp8_rounds_to_nearest_even_and_overflows_by_its_saturation(program: Path) -> None:
    got = torch.tensor(words(run(program, "encode")), dtype=torch.int64)
    x = inputs()
    assert got.numel() == x.numel()
    for shift, (kind, satfinite) in zip((0, 8, 16, 24), [("e4m3", False), ("e4m3", True), ("e5m2", False), ("e5m2", True)]):
        byte = got >> shift & 0xFF
        wrong = [(v, hex(b)) for v, b in zip(x.tolist(), byte.tolist()) if b != encode(v, kind, satfinite)]
        assert not wrong, (kind, satfinite, len(wrong), wrong[:8])


def test_every_fp8_value_converts_back_exactly(program: Path) -> None:
    out = words(run(program, "decode"))
    every = torch.arange(256, dtype=torch.uint8)
    for column, kind in enumerate(KINDS):
        values = every.view(KINDS[kind])
        as_float = values.float().view(torch.int32).tolist()
        as_half = values.to(torch.float16).view(torch.int16).tolist()
        for b in range(256):
            float_bits, half_bits = out[3 * b + column], out[3 * b + 2] >> 16 * column & 0xFFFF
            if values[b].float().isnan():  # CUDA's canonical NaNs
                assert (float_bits, half_bits) == (0x7FFFFFFF, 0x7FFF), (kind, b)
            else:
                assert float_bits == as_float[b] & 0xFFFFFFFF and half_bits == as_half[b] & 0xFFFF, (kind, hex(b))


def test_the_classes_clamp_pack_and_convert_as_cudas(program: Path) -> None:
    f32 = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]  # noqa: E731
    assert words(run(program, "classes")) == [
        0x7E,  # __nv_fp8_e4m3(1000.f): the constructors saturate to finite: 448
        0xFB,  # __nv_fp8_e5m2(-1e9): -57344
        0xC038,  # {1, -2} as E4M3: the first element in the low byte
        0x4442403C,  # {1, 2, 3, 4} as E5M2, the first in the lowest byte
        (-3) & 0xFFFFFFFF,  # int(-3.7 as E4M3 = -3.75): toward zero
        0,  # unsigned char of -2: clamped to 0
        f32(0.5), f32(96.0),  # a half2 through E5M2 and back to float2: exact
        0x2E80,  # bfloat16(0.1) = 0.10009765625 -> E4M3 0.1015625 (steps of 2^-7) -> its half's bits
        0xFE00,  # {1e-9, -448} without saturation: 0 (underflow) in the low byte, -448 in the high
        0b100,  # bool: -0 and 1e-30 (0 as E5M2) false, 3 true
    ]


def relu(x: float) -> float:
    return 0.0 if x < 0 else x  # NaN and -0 as they are


def half_bits(values: torch.Tensor) -> list[int]:
    """Each value's half bits, a NaN as CUDA's canonical 0x7FFF."""
    halves = values.flatten().to(torch.float16)
    return [0x7FFF if h != h else b & 0xFFFF
            for h, b in zip(halves.float().tolist(), halves.view(torch.int16).tolist())]


def test_inline_ptx_cvt_of_fp8_pairs_packs_the_first_source_high(program: Path) -> None:
    out = words(run(program, "ptx_pairs"))
    x = inputs().tolist()
    n = len(x)
    as_halves = torch.tensor(x).half().float().tolist()
    pairs = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16).view(torch.uint8).view(-1, 2)  # low, high byte
    back5 = half_bits(pairs.contiguous().view(torch.float8_e5m2).float())
    back4 = half_bits(pairs.contiguous().view(torch.float8_e4m3fn).float())
    wrong = []
    for i in range(n):
        a, b = x[i], x[(7 * i + 3) % n]
        ha, hb = as_halves[i], as_halves[(7 * i + 3) % n]
        pair = i & 0xFFFF
        want = [encode(a, "e4m3", True) << 8 | encode(b, "e4m3", True)
                | (encode(relu(a), "e5m2", True) << 8 | encode(relu(b), "e5m2", True)) << 16,
                encode(ha, "e4m3", True) << 8 | encode(hb, "e4m3", True),
                back5[2 * pair + 1] << 16 | back5[2 * pair],
                sum((0 if h & 0x8000 and h != 0x8000 else h) << shift
                    for h, shift in ((back4[2 * pair + 1], 16), (back4[2 * pair], 0)))]
        if out[4 * i:4 * i + 4] != want:
            wrong.append((i, a, b, [hex(w) for w in out[4 * i:4 * i + 4]], [hex(w) for w in want]))
    assert not wrong, (len(wrong), wrong[:4])


@pytest.mark.parametrize("template, why", [
    ("cvt.rn.e4m3x2.f32 %0, %1, %2", ".satfinite"),  # ptxas requires it: brrr does not guess
    ("cvt.rz.satfinite.e5m2x2.f32 %0, %1, %2", ".satfinite"),
    ("cvt.rn.satfinite.e4m3x2.f32 %0, %1", "takes 2 source operand"),
])
def test_an_fp8_cvt_brrr_cannot_run_is_refused_naming_it(template: str, why: str) -> None:
    with pytest.raises(UnsupportedPtx) as refused:
        translate(template, [f'"{template}"', ' "=h"(d) ', ' "f"(a), "f"(b) '])
    assert template in str(refused.value) and why in str(refused.value) + refused.value.hint, str(refused.value)
