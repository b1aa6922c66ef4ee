"""Blocks that wait for other blocks on the CPU: a thread polling memory (an atomic, a volatile load
in a checked build, __nanosleep) gives way, its stalled block gets the next blocks run beside it,
and a wait nothing can end is a deadlock named at the polling line at once, not a time limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_programs import build, line_in, run

CASES = Path(__file__).with_name("blocks_cases.cu")
SOURCE = CASES.resolve()
# Far beyond what detection takes: a spin missed would end as "time limit", which the tests reject.
PATIENT = {"BRRR_CPU_TIMEOUT": "60"}


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-blocks"))


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-blocks-checked"), checked=True)


def line_of(text: str) -> int:
    return line_in(CASES, text)


@pytest.mark.parametrize("workers", [1, 3])
def test_a_block_waits_for_a_flag_a_later_block_sets(plain: Path, workers: int) -> None:
    assert run(plain, "atomic_flag", workers, PATIENT) == "7 9"


@pytest.mark.parametrize("workers", [1, 3])
def test_a_volatile_poll_in_a_checked_build_waits_for_the_last_block(checked: Path, workers: int) -> None:
    assert run(checked, "volatile_flag", workers, PATIENT).split() == [str(31 + t) for t in range(32)]


@pytest.mark.parametrize("workers", [1, 3])
def test_the_last_block_done_sums_the_partials(plain: Path, workers: int) -> None:
    total = sum(float(i % 17 - 3) for i in range(1000))
    assert run(plain, "last_block_sums", workers, PATIENT).split() == [f"{total:g}", "0"]


@pytest.mark.parametrize("workers", [1, 3])
def test_a_lock_taken_with_atomic_cas(plain: Path, workers: int) -> None:
    assert run(plain, "locked_sum", workers, PATIENT).split() == [str(sum(range(1, 41))), "40", "0"]


def test_blocks_waiting_on_later_blocks_run_together(plain: Path) -> None:
    values = [int(v) for v in run(plain, "reverse_chain", 1, PATIENT).split()]
    assert values == [sum(range(b, 12)) for b in range(12)]


def test_more_blocks_waiting_on_each_other_than_run_at_once_is_a_deadlock(plain: Path) -> None:
    out = run(plain, "reverse_chain", 1, {**PATIENT, "BRRR_CPU_RESIDENT": "4"})
    assert out.startswith(f"FAULT: {SOURCE}:{line_of('while (atomicAdd(&flags[b + 1], 0) == 0)')}: deadlock"), out
    assert "BRRR_CPU_RESIDENT" in out


@pytest.mark.parametrize("case, build_kind, line", [
    ("nobody_sets", "plain", "while (atomicOr(flag, 0) == 0) {"),
    ("nobody_sets_volatile", "checked", "while (reinterpret_cast<volatile int*>(flag)[0] == 0) {"),
    ("nobody_sets_napping", "plain", "__nanosleep(100);"),
])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_spin_on_a_flag_nobody_sets_is_named_at_once(request: pytest.FixtureRequest, case: str, build_kind: str,
                                                       line: str, workers: int) -> None:
    out = run(request.getfixturevalue(build_kind), case, workers, PATIENT)
    assert out.startswith(f"FAULT: {SOURCE}:{line_of(line)}: deadlock in {case}, block (0, 0, 0)"), out
    assert "waits on memory" in out and "nothing can change what they wait for" in out, out


@pytest.mark.parametrize("workers", [1, 3])
def test_a_block_waiting_on_one_that_faulted_gives_way_to_that_fault(plain: Path, workers: int) -> None:
    out = run(plain, "waits_past_a_fault", workers, PATIENT)
    line = line_of("__trap();  // the fault")
    assert out.startswith(f"FAULT: {SOURCE}:{line}: trap in waits_past_a_fault, block (1, 0, 0)"), out
