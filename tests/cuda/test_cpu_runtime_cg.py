"""Cooperative groups on the CPU (include/cpu/brrr_cpu_cg.h, brrr_cpu_cg_reduce.h): kernels written
as public CUDA code writes them (llm.c's `cg::reduce(warp, v, cg::plus<float>{})`), with the
values each thread should see computed here from the CUDA Programming Guide's definitions, and
planted bugs that fail as faults naming their line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from cpu_programs import build, line_in, run

CASES = Path(__file__).with_name("cg_cases.cu")
SOURCE = CASES.resolve()


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-cg"))


def line_of(text: str) -> int:
    return line_in(CASES, text)


def numbers(text: str) -> list[int]:
    return [int(v) for v in text.split()]


@pytest.mark.parametrize("n", [32, 16, 4])
def test_a_tile_ranks_moves_and_votes_as_cuda_defines(program: Path, n: int) -> None:
    out = numbers(run(program, f"tile{n}"))
    threads = 128  # a (16, 8) block: ranks are linear, x fastest

    def v(t: int) -> int:
        return 100 * t

    for t in range(threads):
        r, base = t % n, t // n * n
        expected = [
            r, t // n, threads // n, n * 1000 + n,
            v(base + (r * 5 + 3) % n),
            v(t + 3) if r + 3 < n else v(t),
            v(t - 3) if r >= 3 else v(t),
            v(base + (r ^ (5 % n))),
            sum(1 << k for k in range(n) if k % 3 == 0),
            int(n > 2) + 2,
            sum(1 << k for k in range(n) if k % 4 == r % 4),
            (1 << n) - 1, 1,
            2 * v(base) + 1,
            threads,
            t % 16 + 10 * (t // 16) + 100 * 2,  # the last of the three blocks wrote last
        ]
        assert out[t * 16:t * 16 + 16] == expected, f"thread {t}"


def test_llm_c_style_block_reduction(program: Path) -> None:
    got = [float(v) for v in run(program, "block_sum").split()]
    x = [((i * 7919) % 1001) / 8 - 60 for i in range(1000)]  # multiples of 1/8: every order sums exactly
    for b in range(4):
        chunk = x[b * 256:(b + 1) * 256]
        assert got[2 * b:2 * b + 2] == [sum(chunk), max(chunk)], f"block {b}"


def test_reduce_operators_on_integers_and_structs(program: Path) -> None:
    ints_line, wide_line = run(program, "reduce_ops").splitlines()
    out, wide = numbers(ints_line), [float(w) for w in wide_line.split()]
    for t in range(64):
        group = range(t // 8 * 8, t // 8 * 8 + 8)
        vals = [(k * 37 + 11) % 29 - 14 for k in group]
        and_, or_, xor = 0xFFFFFFFF, 0, 0
        for k in group:
            and_ &= 0xFF00 | (1 << (k % 8)) | (k << 16)
            or_ |= 1 << (k % 13)
            xor ^= (k * 2654435761) % 2**32
        m = max(vals)
        softmax_sum = sum(math.exp(v - m) for v in vals)
        got = out[t * 8:t * 8 + 8]
        assert got[:7] == [sum(vals), min(vals), max(vals), and_, or_, xor, m], f"thread {t}"
        assert abs(got[7] - softmax_sum * 1e6) < 20, f"thread {t}"
        warp = range(t // 32 * 32, t // 32 * 32 + 32)  # a 28-byte struct, moved in two pieces
        assert wide[t * 4:t * 4 + 4] == [sum(k + 0.25 for k in warp), sum(2.0 * k for k in warp),
                                         sum(-1.0 * k for k in warp), sum(warp)], f"thread {t}"


def test_coalesced_threads_rank_the_lanes_that_took_the_branch(program: Path) -> None:
    out = numbers(run(program, "coalesced"))
    active = [lane for lane in range(32) if lane % 3 == 0]
    for t in range(64):
        lane = t % 32
        got = out[t * 6:t * 6 + 6]
        if lane not in active:
            assert got == [-1] * 6
            continue
        r, size = active.index(lane), len(active)
        assert got == [size * 100 + r, active[0], active[r + 1] if r + 1 < size else lane,
                       active[r - 2] if r >= 2 else lane, sum(1 << k for k in range(size) if k % 2 == 1),
                       sum(active)], f"thread {t}"


def test_tiles_of_tiles_and_run_time_tiles(program: Path) -> None:
    out = numbers(run(program, "nested"))
    for t in range(64):
        assert out[t * 5:t * 5 + 5] == [t % 8, t % 32 // 8, 4, t % 16 * 100 + 16, t ^ 1], f"thread {t}"


@pytest.mark.parametrize("case, line, kind, detail", [
    # the planted bug: a tile size that does not divide the block
    ("partial_tile", "auto warp = cg::tiled_partition<32>(block);", "tiled_partition",
     "tiled_partition<32> of a group of 48 threads: the parent's size must be a multiple of the tile size"),
    ("bad_dynamic_size", "cg::tiled_partition(cg::this_thread_block(), 24)", "tiled_partition",
     "the tile size must be a power of 2 from 1 to 32"),
    ("grid_sync", "grid.sync();", "grid sync", "not launched cooperatively"),
    ("tile_lane_returns", "out[threadIdx.x] = cg::reduce(tile, 1.0f", "warp mask",
     "for lane 3, which returned without reaching it"),
])
def test_planted_group_bugs_fail_naming_the_line(program: Path, case: str, line: str, kind: str, detail: str) -> None:
    out = run(program, case)
    assert out.startswith(f"FAULT: {SOURCE}:{line_of(line)}: {kind}"), out
    assert detail in out, out
