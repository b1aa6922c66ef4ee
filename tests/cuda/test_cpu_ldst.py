"""ld and st in inline PTX on the CPU (include/cpu/brrr_cpu_ldst.h, pipeline/cuda/cpu_ptx.py): the
values a GPU gives (vectors, narrow loads widened as PTX widens them, shared addresses, ordered
forms), and a misaligned or out-of-bounds access a fault naming the line."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
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


def test_a_vector_load_not_aligned_to_its_size_is_a_misaligned_address_fault_at_its_line(plain: Path) -> None:
    out = run(plain, "misaligned_vector")
    assert out.startswith(f"FAULT: {SOURCE}:{line_in(CASES, '// misaligned load')}:"), out
    assert "misaligned address" in out and "ld of 16 bytes" in out and "not 16-byte aligned" in out, out


def test_a_shared_load_past_its_array_is_an_out_of_bounds_read_in_the_checked_build(checked: Path) -> None:
    out = run(checked, "shared_past_end")
    assert out.startswith(f"FAULT: {SOURCE}:{line_in(CASES, '// shared read')}:"), out
    assert "out-of-bounds read" in out and "row" in out, out
