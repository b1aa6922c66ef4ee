"""Warp intrinsics on the CPU when each lane passes its own operand: a shuffle's source lane, delta
or lane mask, a vote's predicate, a match's or a reduction's value. The expected values are
computed here from CUDA's definitions (Programming Guide, warp shuffle, vote, match and reduce
functions), lane by lane."""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_programs import build, run

CASES = Path(__file__).with_name("warp_cases.cu")
THREADS = 64


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-warp"))


ENCODE = {
    "int": lambda lane: -1000 * (lane + 1),
    "unsigned": lambda lane: 0x80000000 + lane,
    "long_long": lambda lane: ((lane + 1) << 40) + lane,
    "float": lambda lane: lane + 0.25,
    "double": lambda lane: lane + 1.0 / 3.0,
    "half": lambda lane: lane + 0.5,
    "bfloat16": lambda lane: lane + 0.5,
}


def shfl(lane: int, src: int, width: int) -> int:
    return lane // width * width + src % width


def shfl_up(lane: int, delta: int, width: int) -> int:
    return lane - delta if lane % width >= delta else lane


def shfl_down(lane: int, delta: int, width: int) -> int:
    return lane + delta if lane % width + delta < width else lane


def shfl_xor(lane: int, mask: int, width: int) -> int:
    source = lane ^ mask
    return lane if source // width > lane // width else source  # a later group: the caller's own value


def sources(lane: int) -> list[int]:
    """The lane each of the case's eight shuffles reads, in its order."""
    src = (lane * 5 + 3) % 32
    return [shfl(lane, src, 32), shfl(lane, src, 8), shfl_up(lane, src % 7, 32), shfl_up(lane, src % 5, 16),
            shfl_down(lane, src % 7, 32), shfl_down(lane, src % 3, 4), shfl_xor(lane, src, 32),
            shfl_xor(lane, src, 16)]


@pytest.mark.parametrize("type_name", list(ENCODE))
def test_every_shuffle_gathers_from_the_lane_each_lane_names(program: Path, type_name: str) -> None:
    values = [float(v) for v in run(program, f"gather_{type_name}").split()]
    encode = ENCODE[type_name]
    expected = [float(encode(s)) for t in range(THREADS) for s in sources(t % 32)]
    assert values == expected


def test_the_source_lanes_differ_from_lane_to_lane() -> None:
    # The gather is only a test of per-lane operands if the lanes ask for different ones.
    assert len({sources(lane)[0] for lane in range(32)}) == 32


def test_votes_matches_and_reductions_take_each_lanes_operand(program: Path) -> None:
    out = [int(v) for v in run(program, "votes").split()]
    src = [(lane * 5 + 3) % 32 for lane in range(32)]
    for t in range(THREADS):
        lane = t % 32
        half = range(16) if lane < 16 else range(16, 32)
        got = out[t * 10:t * 10 + 10]
        match_any = sum(1 << k for k in range(32) if src[k] % 4 == src[lane] % 4)
        # the low half passes 7 everywhere, the high half its own src: all equal, or not
        match_all, pred = (0xFFFF, 1) if lane < 16 else (0, 0)
        ballot = sum(1 << k for k in range(32) if src[k] % 4 == 1)
        votes = int(any(src[k] == 3 for k in half)) + 2 * int(all(src[k] % 2 == 1 for k in half))
        xor = 0
        for k in range(32):
            xor ^= src[k] << (k % 4)
        and_ = 0xFFFFFFFF
        for k in half:
            and_ &= 0xF0 | src[k]
        or_ = 0
        for k in range(32):
            or_ |= 1 << (src[k] % 8)
        assert got == [match_any, match_all, pred, ballot, votes, 7, max(-src[k] for k in half), xor,
                       sum(src[k] for k in half), and_ * 1000 + or_], f"thread {t}"
