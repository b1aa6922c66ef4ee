"""Device printf, atomics on 16-bit floats and double, __half2/__nv_bfloat162 arithmetic, __ldg and
the bit intrinsics on the CPU: values checked against Python's own arithmetic (numpy's float16,
bfloat16 rounded here from float32), printf lines against CUDA's order of a launch's output."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from cpu_programs import build, run

CASES = Path(__file__).with_name("extras_cases.cu")
MASK = 0xFFFFFFFF


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-extras"))


def test_printf_lines_are_prefixed_with_block_and_thread_and_come_at_the_launchs_end(program: Path) -> None:
    lines = run(program, "printf", workers=1).splitlines()
    assert lines == [
        "[block (0, 0, 0), thread (0, 0, 0)] value 0 of block 0",
        "[block (0, 0, 0), thread (1, 0, 0)] value 10 of block 0",
        "[block (1, 0, 0), thread (0, 0, 0)] value 0 of block 1",
        "[block (1, 0, 0), thread (0, 0, 0)] two",  # each line of one printf has the prefix
        "[block (1, 0, 0), thread (0, 0, 0)] lines",
        "[block (1, 0, 0), thread (1, 0, 0)] value 10 of block 1",
        "after the launch",  # host printf: no prefix
    ]


def test_a_collector_takes_the_printf_lines_instead_of_stdout(program: Path) -> None:
    lines = run(program, "printf_kept", workers=2).splitlines()
    assert lines[0] == "nothing printed yet" and lines[1].startswith("kept: ")
    kept = [lines[1].removeprefix("kept: "), *lines[2:-1]]  # two blocks at once: in either order
    assert sorted(kept) == sorted(["[block (0, 0, 0), thread (0, 0, 0)] value 0 of block 0",
                                   "[block (1, 0, 0), thread (0, 0, 0)] value 0 of block 1",
                                   "[block (1, 0, 0), thread (0, 0, 0)] two",
                                   "[block (1, 0, 0), thread (0, 0, 0)] lines"])
    assert lines[-1] == "left: 0"


@pytest.mark.parametrize("workers", [1, 3])
def test_atomics_on_16_bit_pairs_and_double(program: Path, workers: int) -> None:
    # 128 threads: each adds 1 to a half, 0.5 to a bfloat16, (1, 2) and (0.5, 1) to the pairs, 0.125 to a double
    assert run(program, "atomics", workers).split() == ["128", "64", "128", "256", "64", "128", "16"]


def bf16(x: np.float32) -> int:
    """float32 to bfloat16 bits, round to nearest even (no NaNs here)."""
    u = struct.unpack("<I", struct.pack("<f", float(x)))[0]
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(bits: int) -> np.float32:
    return np.float32(struct.unpack("<f", struct.pack("<I", bits << 16))[0])


def f16_value(bits: int) -> np.float32:
    return np.float32(np.array([bits], dtype=np.uint16).view(np.float16)[0])


def f16(x: np.float32) -> int:
    return int(np.array([np.float16(x)]).view(np.uint16)[0])


@pytest.mark.parametrize("case, to_bits, value", [("half2", f16, f16_value), ("bfloat162", bf16, bf16_value)])
def test_pair_arithmetic_is_the_scalar_arithmetic_on_each_half(program: Path, case: str, to_bits, value) -> None:
    out = [int(v) for v in run(program, case).split()]
    one = to_bits(np.float32(1.0))
    for i in range(64):
        o = out[i * 70:i * 70 + 70]
        pairs = [(o[2 * k], o[2 * k + 1]) for k in range(16)]
        scalars = [(o[32 + 2 * k], o[33 + 2 * k]) for k in range(9)]
        assert pairs[:9] == scalars, f"pair {i}"                       # add sub mul div fma neg abs max min
        assert pairs[9:14] == [pairs[0], pairs[1], pairs[2], pairs[3], pairs[5]]  # + - * / unary -
        x, y = (value(o[50]), value(o[51])), (value(o[52]), value(o[53]))
        for k, op in enumerate((np.add, np.subtract, np.multiply, np.divide)):
            assert pairs[k] == (to_bits(op(x[0], y[0])), to_bits(op(x[1], y[1]))), f"pair {i} op {k}"
        assert pairs[14] == (one if x[0] < y[0] else 0, one if x[1] < y[1] else 0)
        assert pairs[15] == (o[51], o[50])
        flags = 1 + 2 * (x[0] > y[0] and x[1] > y[1]) + 4 * (x == y) + 8 * (x[0] != y[0] and x[1] != y[1])
        assert o[54] == flags, f"pair {i}"


def test_bit_intrinsics(program: Path) -> None:
    xs_line, out_line = run(program, "bits").splitlines()
    xs, out = [int(v) for v in xs_line.split()], [int(v) for v in out_line.split()]
    for i in range(32):
        v, w, s = xs[i], xs[(i + 1) % 32], i * 3
        both = (w << 32) | v
        expected = [bin(v).count("1"), 32 - v.bit_length(), (v & -v).bit_length(), int(f"{v:032b}"[::-1], 2),
                    ((both << (s & 31)) >> 32) & MASK, (both >> (s & 31)) & MASK,
                    ((both << min(s, 32)) >> 32) & MASK, (both >> min(s, 32)) & MASK,
                    bin((v << 32) | w).count("1") * 100 + 64 - w.bit_length()]
        assert out[i * 9:i * 9 + 9] == expected, f"thread {i}"


def test_the_toolkit_versions_are_those_of_the_cuda_the_runtime_follows(program: Path) -> None:
    """Code that picks a path by CUDA_VERSION (a 16-bit conversion under `#if CUDA_VERSION >= 12000`)
    takes the path a CUDA 13.0 build takes, not its fallback."""
    assert run(program, "versions").split() == ["13000", "13000"]
