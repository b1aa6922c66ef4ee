"""A launch written inside a macro that pastes the kernel's name (LeetCUDA's torch bindings:
`NAME_##packed_type##_kernel<<<grid, block>>>(...)`) is rewritten whole for the CPU."""

from __future__ import annotations

from pathlib import Path

from brrr_kernels.cuda.cpu_source import rewrite

PASTED = """\
#define BIND(packed_type, element_type)                                  \\
void relu_##packed_type(float* x, float* y, int N) {                     \\
    relu_##packed_type##_kernel<<<(N + 255) / 256, 256>>>(               \\
        reinterpret_cast<element_type*>(x), y, N);                        \\
}
"""


def test_a_launch_of_a_pasted_kernel_name_keeps_the_whole_name() -> None:
    out = rewrite(PASTED, Path("relu.cu")).split("#line 1", 1)[1]
    assert "::brrr_cpu::launch(" in out
    assert ", relu_##packed_type##_kernel, " in out  # the kernel passed whole, not `_kernel` after `##`
    assert "relu_##packed_type##::" not in out
    assert out.count("\n") == PASTED.count("\n") + 1  # the #line directive's own line; lines keep their numbers
