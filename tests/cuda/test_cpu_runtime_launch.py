"""The runtime's launch calls beside <<<>>> on the CPU: an argument array unpacked by the kernel's own
type (a void* cast taken off), cudaLaunchKernelEx's attributes, and a cooperative launch's grid-wide
barrier, which every block must reach (a block that skips it is a deadlock named at the barrier);
brrr_kernel.cuh's cached launch facts against the runtime's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_programs import build, line_in, run

CASES = Path(__file__).with_name("launch_cases.cu")
SOURCE = CASES.resolve()
PATIENT = {"BRRR_CPU_TIMEOUT": "60"}


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-launch"))


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-launch-checked"), checked=True)


def line_of(text: str) -> int:
    return line_in(CASES, text)


def grid_total() -> float:
    blocks, n = 6, 40
    return float(blocks * sum(i % 7 for i in range(blocks * n)))


@pytest.mark.parametrize("build_kind", ["program", "checked"])
@pytest.mark.parametrize("case", ["cooperative", "cooperative_ex"])
@pytest.mark.parametrize("workers", [1, 3])
def test_every_block_sees_every_block_after_the_grid_barrier(request: pytest.FixtureRequest, build_kind: str, case: str,
                                                             workers: int) -> None:
    out = run(request.getfixturevalue(build_kind), case, workers, PATIENT).split()
    assert out == ["0"] + [f"{grid_total():g}"] * 6, out


def test_a_grid_barrier_in_an_ordinary_launch_is_named(program: Path) -> None:
    out = run(program, "not_cooperative", 1, PATIENT)
    line = line_of("grid.sync();  // every block's partial")
    assert out.startswith(f"FAULT: {SOURCE}:{line}: grid sync in grid_sums"), out
    assert "not launched cooperatively" in out, out


def test_only_a_cooperative_launch_has_a_valid_grid(program: Path) -> None:
    assert run(program, "validity") == "1 0"


def test_a_cooperative_grid_larger_than_the_device_is_refused_and_not_run(program: Path) -> None:
    assert run(program, "too_large") == "720 too many blocks in cooperative launch -1"


@pytest.mark.parametrize("workers", [1, 2])
def test_a_block_that_skips_the_grid_barrier_is_a_deadlock_at_it(program: Path, workers: int) -> None:
    out = run(program, "skipped", workers, PATIENT)
    assert out.startswith(f"FAULT: {SOURCE}:{line_of('block 1 never comes')}: deadlock in grid_skipped"), out
    assert "grid-wide barrier" in out, out


def test_launch_facts_are_the_runtimes_answers_each_time_asked(program: Path) -> None:
    sms, sms_runtime, per_sm, per_sm_runtime, *again = map(int, run(program, "launch_facts").split())
    assert sms == sms_runtime > 0 and per_sm == per_sm_runtime > 0
    assert again == [sms, sms_runtime, per_sm, per_sm_runtime]


def test_cuda_launch_kernel_unpacks_the_argument_array(program: Path) -> None:
    assert run(program, "launch_kernel") == "0 0 3 3"


@pytest.mark.parametrize("workers", [1, 3])
def test_a_block_that_faults_while_the_others_wait_at_the_grid_barrier_is_the_fault_reported(
        program: Path, workers: int) -> None:
    out = run(program, "fault", workers, PATIENT)
    assert out.startswith(f"FAULT: {SOURCE}:{line_of('__trap();')}: trap in grid_fault, block (2, 0, 0)"), out


def test_template_kernels_launched_by_their_bare_name_deduce_their_arguments(program: Path) -> None:
    # x[i] = i % 7 (x[8] = 1, x[99] = 1) doubled in float; 1.5 doubled in double; 1 + 2.5 + 3 from a pack;
    # 1.5 times 3, the first template argument given and the type deduced.
    assert run(program, "deduced").split() == ["2", "2", "3", "3", "6.5", "4.5"]
