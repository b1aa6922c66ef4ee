"""`brrr debug OP --stage cuda`: gdb on the CPU execution of kernel.cu, in one thread, driven
here by piped gdb commands (pipeline/cuda_debugger.py). No GPU needed."""

from __future__ import annotations

import shutil

import pytest
from conftest import STAGES, brrr

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
    assert "kernel.cu:23" in text and "$1 = 4\n" in text, text
    assert "$2 = {x = 1, y = 0, z = 0}" in text and "$3 = {x = 0, y = 0, z = 0}" in text, text
    assert "brrr: the call returned" in text, text


@needs_gdb
def test_next_over_a_barrier_stays_in_the_thread() -> None:
    # matmul's tiled kernel (the simulator sizes are not multiples of 128): 25 steps pass the
    # `tiles loaded` __syncthreads, while the block's other 255 threads run to it
    barrier = next(i for i, line in enumerate((STAGES / "matmul" / "kernel.cu").read_text().splitlines(), 1)
                   if "tiles loaded" in line and "__syncthreads" in line)
    out = brrr("debug", "matmul", "--stage", "cuda", "--block", "0,0", "--thread", "3,2",
               "--kernel", "tiled_matmul_kernel", stdin="next\n" * 25 + "print threadIdx\nprint tx\nprint ty\nkill\n")
    text = out.stdout + out.stderr
    assert f"{barrier}\t            __syncthreads();" in text, text
    after = text.split(f"{barrier}\t            __syncthreads();", 1)[1]
    assert "acc += a_tile[ty][kk] * b_tile[kk][tx];" in after, text
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
