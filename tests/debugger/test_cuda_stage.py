"""`brrr debug OP --stage cuda`: gdb on the CPU execution of kernel.cu, in one thread, driven
here by piped gdb commands (pipeline/cuda_debugger.py). No GPU needed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO, STAGES, brrr

from brrr_kernels.debugger.cuda_stage import kernel_names

needs_gdb = pytest.mark.skipif(shutil.which("gdb") is None, reason="needs gdb")


@needs_gdb
def test_index_stops_in_the_thread_that_computes_it() -> None:
    # sigmoid's float32 kernel moves 16-byte packs: element 5 is thread 1's, whose base is 4
    out = brrr("debug", "sigmoid", "--stage", "cuda", "--index", "5",
               stdin="next\nprint base\nprint threadIdx\nprint blockIdx\ncontinue\n")
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "to block (0, 0, 0) thread (1, 0, 0), which computes element 5" in text, text
    assert "hit Breakpoint 2, sigmoid_forward_kernel<float, 4>" in text, text
    source = (STAGES / "sigmoid" / "kernel.cu").read_text()
    first = 1 + source.split("const int64_t base = (static_cast<int64_t>(blockIdx.x)")[0].count("\n")
    assert f"kernel.cu:{first}" in text and "$1 = 4\n" in text, text  # the kernel's first line
    assert "$2 = {x = 1, y = 0, z = 0}" in text and "$3 = {x = 0, y = 0, z = 0}" in text, text
    assert "brrr: the call returned" in text, text


@needs_gdb
def test_next_over_a_barrier_stays_in_the_thread() -> None:
    # matmul's tiled kernel (what float64 runs): 25 steps pass the `tiles loaded` __syncthreads,
    # while the block's other 255 threads run to it
    barrier = next(i for i, line in enumerate((STAGES / "matmul" / "kernel.cu").read_text().splitlines(), 1)
                   if "tiles loaded" in line and "__syncthreads" in line)
    out = brrr("debug", "matmul", "--stage", "cuda", "--block", "0,0", "--thread", "3,2",
               "--kernel", "tiled_matmul_kernel", "--dtype", "float64",
               stdin="next\n" * 25 + "print threadIdx\nprint tx\nprint ty\nkill\n")
    text = out.stdout + out.stderr
    assert f"{barrier}\t            __syncthreads();" in text, text
    after = text.split(f"{barrier}\t            __syncthreads();", 1)[1]
    assert "acc += brrr::to_acc(a_tile[ty][kk]) * brrr::to_acc(b_tile[kk][tx]);" in after, text
    assert "$1 = {x = 3, y = 2, z = 0}" in after and "$2 = 3\n" in after and "$3 = 2\n" in after, text


def test_missing_gdb_says_how_to_get_it() -> None:
    out = brrr("debug", "sigmoid", "--stage", "cuda", "--index", "5", env={"PATH": "/nonexistent", "BRRR_GDB": ""})
    assert out.returncode == 2, out.stderr
    assert "gdb not found" in out.stderr and "apt-get install gdb" in out.stderr, out.stderr


@pytest.mark.parametrize(("op", "expected"), [
    ("sigmoid", ["sigmoid_forward_kernel", "sigmoid_backward_kernel"]),
    ("softmax", ["softmax_forward_kernel", "softmax_backward_kernel", "softmax_forward_v1_kernel",
                 "softmax_backward_v1_kernel"]),
])
def test_kernel_names_of_kernel_cu(op: str, expected: list[str]) -> None:
    assert sorted(kernel_names((STAGES / op / "kernel.cu").read_text())) == sorted(expected)


def _replay_inputs(op, size, dtype: torch.dtype, seed: int = 0):
    """Inputs and an upstream gradient of one size, as validation saves a failing case's."""
    from brrr_kernels.op.contract import call_forward, visible
    from brrr_kernels.op.loaders import load_reference

    gen = torch.Generator().manual_seed(seed)
    inputs = tuple(op.spec.make_inputs(size, dtype, torch.device("cpu"), gen))
    shapes = [o.shape for o in visible(op.spec, call_forward(op.spec, load_reference(op), inputs))]
    return inputs, tuple(torch.randn(s, dtype=dtype, generator=gen) for s in shapes)


@needs_gdb
def test_the_printed_debug_command_runs_a_correct_row_op_to_the_end() -> None:
    # layernorm's block-per-row kernel at 37x1000 in float64 (37 blocks, shared-memory partial sums):
    # the command a failing row prints, continued to the end, meets no fault
    from brrr_kernels.op.loaders import load_op
    from brrr_kernels.verdict.replay import Failure, save_failure

    op = load_op("layernorm")
    inputs, upstream = _replay_inputs(op, (37, 1000), torch.float64)
    line = save_failure(Failure(op, inputs, upstream, "forward", index=36999, stage="cuda"), "test-replay")
    command = line.removeprefix("debug it: ").split()
    assert command[:2] == ["brrr", "debug"], line
    out = brrr(*command[1:], stdin="continue\n")
    text = out.stdout + out.stderr
    assert "brrr: the call returned" in text, text
    assert "out-of-bounds" not in text and "race" not in text, text


def test_the_debug_driver_runs_clean_on_every_size_validate_uses(tmp_path: Path) -> None:
    # the process gdb runs, on every size the cuda stage is validated at on the CPU, both phases, float64
    from brrr_kernels.cuda.cpu_build import DEBUG, build_cpu_extension
    from brrr_kernels.cuda.memcheck import install_allocation_registry
    from brrr_kernels.debugger.cuda_stage import Library, save_session
    from brrr_kernels.op.loaders import Where, load_op

    install_allocation_registry()
    op = load_op("layernorm")
    ext = build_cpu_extension(op, DEBUG)
    library = Library(ext.library, ext.namespace)
    sessions = []
    for n, size in enumerate(Where.CPU_EXECUTION.sizes(op.spec)):
        call = _replay_inputs(op, size, torch.float64, seed=n)
        for phase in ("forward", "backward"):
            sessions.append(tmp_path / f"{n}-{phase}.pt")
            save_session(sessions[-1], library, op, call, phase)
    out = subprocess.run([sys.executable, "-m", "brrr_kernels.debugger.cuda_stage", *map(str, sessions)],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert out.stdout.count("brrr: the call returned") == len(sessions), out.stdout


@needs_gdb
def test_thread_conditions_and_bthread_stop_in_one_thread_of_a_multi_block_launch() -> None:
    """A block per row (examples/rmsnorm_shuffle: 4 rows of 517, 256 threads a block, blocks run in
    order): `bthread` stops at a line in the selected thread only, at each trip through its loop, and a
    user's breakpoint conditioned on threadIdx and blockIdx stops in that thread of a later block."""
    kernel = (REPO / "examples" / "rmsnorm_shuffle" / "kernel.cu").read_text().splitlines()
    sums = next(i for i, line in enumerate(kernel, 1) if "total += v * v;" in line)
    stores = next(i for i, line in enumerate(kernel, 1) if "yr[c] = static_cast<T>(v * r" in line)
    commands = (f"bthread kernel.cu:{stores}\ncontinue\nprint threadIdx\nprint blockIdx\nprint c\ncontinue\n"
                f"print threadIdx\nprint c\ndelete\nbreak kernel.cu:{sums} if threadIdx.x == 40 && blockIdx.x == 1\n"
                "continue\nprint threadIdx\nprint blockIdx\nkill\n")
    out = brrr("debug", str(REPO / "examples" / "rmsnorm_shuffle"), "--stage", "cuda", "--block", "0",
               "--thread", "5", stdin=commands)
    text = out.stdout + out.stderr
    assert "$1 = {x = 5, y = 0, z = 0}" in text and "$2 = {x = 0, y = 0, z = 0}" in text and "$3 = 5\n" in text, text
    assert "$4 = {x = 5, y = 0, z = 0}" in text and "$5 = 261\n" in text, text
    assert "$6 = {x = 40, y = 0, z = 0}" in text and "$7 = {x = 1, y = 0, z = 0}" in text, text
