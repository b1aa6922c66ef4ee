"""The CPU execution's scheduler (include/cpu/brrr_cpu_runtime.cpp), on small kernels built into one
program without torch: warp intrinsics and barriers compute what CUDA defines, and the rules a GPU
does not check are reported as faults naming the file, line, block and thread."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import REPO

from brrr_kernels.cuda import builder, cpu_build
from brrr_kernels.cuda.cpu_source import rewrite

CASES = REPO / "tests" / "cuda" / "cpu_runtime_cases.cu"
SOURCE = CASES.resolve()


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runtime = builder.compile_job(cpu_build.runtime_job())
    folder = tmp_path_factory.mktemp("cpu-runtime")
    source = folder / "cases.cpp"
    source.write_text(rewrite(CASES.read_text(), CASES))
    exe = folder / "cases"
    # -gdwarf-4, as brrr builds kernel.cu: addr2line (binutils 2.40) names the .cu after #line only in DWARF 4
    subprocess.run([builder.find_cxx(), "-std=c++20", "-O1", "-g", "-gdwarf-4", "-ffp-contract=off", f"-I{cpu_build.CPU_INCLUDE}",
                    str(source), str(runtime.path), "-o", str(exe), "-lpthread"], check=True)
    return exe


def run(program: Path, case: str, workers: int = 1) -> str:
    env = {"BRRR_CPU_WORKERS": str(workers), "BRRR_CPU_TIMEOUT": "2"}
    return subprocess.run([str(program), case], capture_output=True, text=True, check=True, timeout=60,
                          env=env).stdout.strip()


def ints(text: str) -> list[int]:
    return [int(v) for v in text.split()]


def test_shuffles_votes_and_reductions_match_cuda(program: Path) -> None:
    out = ints(run(program, "shuffles"))
    for t in range(64):
        lane = t % 32
        xor, up, down, idx, ballot, votes, total, butterfly = out[t * 8:t * 8 + 8]
        assert xor == (lane ^ 1) * 10
        assert up == (lane - 3 if lane >= 3 else lane) * 10
        assert down == (lane + 3 if lane % 16 + 3 < 16 else lane) * 10  # width 16
        assert idx == (lane // 8 * 8 + 5) * 10                            # width 8
        assert ballot == sum(1 << k for k in range(32) if k % 3 == 0)
        assert votes == 3 and total == 496 and butterfly == 512            # doubles move whole


def test_barrier_counts_shared_and_dynamic_shared(program: Path) -> None:
    out = ints(run(program, "block_sync"))
    for t in range(64):
        # slots[63 - t] = 64 - t; 16 threads with t % 4 == 0; all below 64; thread 63 is the "or"
        assert out[t] == (64 - t) + 1000 * 16 + 100000 + 1000000 + 10000000 * 2 * (63 - t)


def test_an_unwritten_shared_element_reads_as_nan(program: Path) -> None:
    values = run(program, "unwritten_shared").split()
    assert values[5] in ("nan", "-nan") and all(v == "1" for i, v in enumerate(values) if i != 5)


def test_activemask_is_the_lanes_that_reached_the_call_together(program: Path) -> None:
    values = [int(v, 16) for v in run(program, "divergent_active").split()]
    assert values == [0x55555555 if t % 2 == 0 else 0xAAAAAAAB for t in range(32)]


def test_nanosleep_lets_the_awaited_thread_run(program: Path) -> None:
    assert run(program, "naps") == "1"


@pytest.mark.parametrize("workers", [1, 3])
def test_atomics_across_blocks(program: Path, workers: int) -> None:
    total, fsum = run(program, "atomics", workers).split()  # blockIdx.y is not in the sum: each value twice
    assert int(total) == 2 * sum(range(5 * 96)) and float(fsum) == 960


LAUNCH_PAST_48K = next(i for i, text in enumerate(CASES.read_text().splitlines(), 1) if "block_sync<<<1, 64, bytes>>>" in text)


@pytest.mark.parametrize("case, line, detail", [
    ("shared_without_opt_in", LAUNCH_PAST_48K, "60000 bytes of dynamic shared memory, more than the 48 KiB"),
    ("shared_past_allowance", LAUNCH_PAST_48K, "more than the 50000 that cudaFuncSetAttribute"),
    # 49024 dynamic bytes pass the launch's own check; the static slots[64] beside them do not
    ("shared_beside_static", 27, "49024 bytes of dynamic shared memory beside 256 bytes of static __shared__"),
])
def test_dynamic_shared_memory_a_gpu_would_refuse_is_a_fault(program: Path, case: str, line: int, detail: str) -> None:
    """Past 48 KiB of shared memory a kernel needs cudaFuncSetAttribute's opt-in first, or a GPU refuses the
    launch; the CPU has the memory, so without this check the missing opt-in shows only on a GPU."""
    out = run(program, case)
    assert out.startswith(f"FAULT: {SOURCE}:{line}: invalid configuration argument"), out
    assert detail in out and "cudaFuncAttributeMaxDynamicSharedMemorySize" in out, out


def test_a_block_past_the_kernels_launch_bounds_is_a_fault(program: Path) -> None:
    """traps is __launch_bounds__(32): a GPU refuses a block of 64, "invalid argument" (an H200 did:
    benchmarks/results/2026-12-01-h200-launch-limits)."""
    launch = next(i for i, text in enumerate(CASES.read_text().splitlines(), 1) if "traps<<<1, 64>>>" in text)
    out = run(program, "past_launch_bounds")
    assert out.startswith(f"FAULT: {SOURCE}:101: invalid configuration argument"), out
    assert "a block of 64 threads, more than the kernel's __launch_bounds__(32)" in out, out
    assert f"launched at {SOURCE}:{launch}" in out, out


def test_dynamic_shared_memory_opted_in_runs(program: Path) -> None:
    out = ints(run(program, "shared_opted_in"))
    assert out[0] == 64 + 1000 * 16 + 100000 + 1000000 + 10000000 * 2 * 63


@pytest.mark.parametrize("case, kind, line, place, detail", [
    ("barrier_after_return", "barrier divergence", 60, "block (0, 0, 0)", "returned without reaching it"),
    ("barrier_in_branch", "barrier divergence", 68, "thread (32, 0, 0)", f"__syncthreads at {SOURCE}:66"),
    ("mask_names_exited_lane", "warp mask", 75, "thread (3, 0, 0)", "for lane 3, which returned without reaching it"),
    ("mask_without_caller", "warp mask", 78, "thread (0, 0, 0)", "does not name the calling lane"),
    ("reads_lane_outside_mask", "warp mask", 81, "thread (12, 0, 0)", "which does not name lane 16"),
    ("lanes_at_different_calls", "warp mask", 87, "thread (0, 0, 0)", f"which is at __shfl_xor_sync at {SOURCE}:89"),
    ("partial_warp_full_mask", "warp mask", 94, "thread (32, 0, 0)", "which do not exist"),
    ("asserts", "assertion failed", 97, "thread (7, 0, 0)", "threadIdx.x != 7"),
    ("traps", "trap", 102, "block (2, 0, 0), thread (1, 0, 0)", "the kernel called __trap()"),
    ("bad_config", "invalid configuration argument", 187, "launching traps", "grid (1, 70000, 1) is too large"),
    # at the loop's line (the instruction the limit interrupted), not the launch's
    ("spins", "time limit", 109, "thread (0, 0, 0)", "ran for more than 2 s (BRRR_CPU_TIMEOUT)"),
])
def test_faults_name_the_line_block_and_thread(program: Path, case: str, kind: str, line: int, place: str,
                                               detail: str) -> None:
    out = run(program, case, workers=2)  # the first failing block is reported, whatever the workers
    assert out.startswith(f"FAULT: {SOURCE}:{line}: {kind}"), out
    assert place in out and detail in out, out
