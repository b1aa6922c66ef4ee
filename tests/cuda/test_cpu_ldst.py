"""ld and st in inline PTX on the CPU (include/cpu/brrr_cpu_ldst.h, pipeline/cuda/cpu_ptx.py): the
values a GPU gives (vectors, narrow loads widened as PTX widens them, shared addresses, ordered
forms), and a misaligned or out-of-bounds access a fault naming the line."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import torch
from cpu_programs import build, line_in, run

CASES = Path(__file__).with_name("ldst_cases.cu")
SOURCE = CASES.resolve()
THREADS = 32
X = [(i % 13) * 0.5 - 2.0 for i in range(4 * THREADS + 4)]
BYTES = bytes((i * 37 % 256 - 128) & 0xFF for i in range(2 * THREADS + 8))


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-ldst"))


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-ldst-checked"), checked=True)


def values(out: str) -> list[float]:
    assert not out.startswith("FAULT"), out
    return [float(v) for v in out.split()]


def widened(t: int) -> list[float]:
    """What `widening` stores for thread t, from the PTX ISA's rules for narrow loads."""
    p, q = 2 * t, 8 * (t // 4)
    (s8,), (u8,) = struct.unpack_from("<b", BYTES, p), struct.unpack_from("<B", BYTES, p)
    (s16,), (u16,) = struct.unpack_from("<h", BYTES, p), struct.unpack_from("<H", BYTES, p)
    pair = struct.unpack_from("<II", BYTES, q)
    (wide,) = struct.unpack_from("<Q", BYTES, q)
    return [s8, u8, s16, u16, u16, pair[0] & 0xFFFF, pair[1] >> 16, (wide >> 40) & 0xFFFF]


@pytest.mark.parametrize("build_kind", ["plain", "checked"])
def test_loads_and_stores_give_what_a_gpu_gives(request: pytest.FixtureRequest, build_kind: str) -> None:
    program = request.getfixturevalue(build_kind)
    assert values(run(program, "vector_copy")) == [2 * x + 1 for x in X[:4 * THREADS]]
    assert values(run(program, "widening")) == [v for t in range(THREADS) for v in widened(t)]
    nxt = [(t + 1) % THREADS for t in range(THREADS)]
    assert values(run(program, "shared_and_ordered")) == [
        v for t in range(THREADS) for v in (X[2 * nxt[t]], X[2 * nxt[t] + 1], t + 7)]


WORDS = [(0x9E3779B9 * (i + 1) & 0xFFFFFFFF) ^ 0x85EBCA6B for i in range(THREADS)]


def prmt(a: int, b: int, c: int) -> int:
    """The PTX ISA's prmt.b32 (default mode): byte i of d from selector nibble i over the bytes of {b, a}."""
    pool = (b << 32 | a).to_bytes(8, "little")
    out = 0
    for i in range(4):
        sel = c >> 4 * i & 0xF
        byte = pool[sel & 7]
        out |= ((0xFF if byte & 0x80 else 0) if sel & 8 else byte) << 8 * i
    return out


def lop3(a: int, b: int, c: int, lut: int) -> int:
    return sum(1 << k for k in range(32) if lut >> ((a >> k & 1) << 2 | (b >> k & 1) << 1 | (c >> k & 1)) & 1)


def bits_of(x: float, dtype: torch.dtype) -> int:
    return int(torch.tensor([x], dtype=torch.float32).to(dtype).view(torch.int16).item()) & 0xFFFF


def float_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bit_results(t: int) -> list[int]:
    a, b, c = WORDS[t], WORDS[(t + 5) % THREADS], WORDS[(t + 11) % THREADS]
    f = struct.unpack("<f", struct.pack("<f", float(torch.tensor(a % 20001 - 10000, dtype=torch.float32) / 7.0)))[0]
    h, bf = bits_of(f, torch.float16), bits_of(f, torch.bfloat16)
    back_h = float(torch.tensor([h], dtype=torch.int32).to(torch.int16).view(torch.float16).float())
    back_bf = float(torch.tensor([bf], dtype=torch.int32).to(torch.int16).view(torch.bfloat16).float())
    return [prmt(a, b, 0x5140), prmt(a, b, 0x9B3F), lop3(a, b, c, 0x96), lop3(a, b, c, 0xE8),
            (a >> 16) | (a & 0xFFFF) << 16, h | bf << 16, float_bits(back_h), float_bits(back_bf)]


@pytest.mark.parametrize("build_kind", ["plain", "checked"])
def test_prmt_lop3_mov_and_16_bit_conversions_follow_the_ptx_isa(request: pytest.FixtureRequest, build_kind: str) -> None:
    got = [int(v) for v in values(run(request.getfixturevalue(build_kind), "bits"))]
    words = [lo | hi << 16 for lo, hi in zip(got[0::2], got[1::2])]
    assert words == [r for t in range(THREADS) for r in bit_results(t)]
    assert len(set(words)) > 200  # not vacuous: the results differ from thread to thread


def test_a_vector_load_not_aligned_to_its_size_is_a_misaligned_address_fault_at_its_line(plain: Path) -> None:
    out = run(plain, "misaligned_vector")
    assert out.startswith(f"FAULT: {SOURCE}:{line_in(CASES, '// misaligned load')}:"), out
    assert "misaligned address" in out and "ld of 16 bytes" in out and "not 16-byte aligned" in out, out


def test_a_shared_load_past_its_array_is_an_out_of_bounds_read_in_the_checked_build(checked: Path) -> None:
    out = run(checked, "shared_past_end")
    assert out.startswith(f"FAULT: {SOURCE}:{line_in(CASES, '// shared read')}:"), out
    assert "out-of-bounds read" in out and "row" in out, out
