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


# vLLM's way: the kernel on one line of the macro, its <<<config>>> on the next, arguments after.
SPLIT = """\
#define LAUNCH(KERNEL)                                                     \\
    KERNEL<T, 4>                                                           \\
        <<<blocks, threads,                                                \\
           0, stream>>>(out,                                               \\
                        in, n);
void run(float* out, const float* in, int n) { LAUNCH(scale_kernel) }
"""


def test_a_launch_whose_kernel_config_and_arguments_are_on_lines_of_a_macro_stays_one_macro() -> None:
    out = rewrite(SPLIT, Path("scale.cu")).split("#line 1", 1)[1].split("\n", 1)[1]
    lines = out.splitlines()
    assert len(lines) == len(SPLIT.splitlines())  # every line keeps its number
    assert "::brrr_cpu::launch(::brrr_cpu::LaunchConfig(blocks, threads, 0, stream), " in lines[1]
    assert '"KERNEL<T, 4>"' in lines[1] and ", KERNEL<T, 4>, out," in " ".join(lines[1:5]).replace("\\", " ")
    assert all(line.rstrip().endswith("\\") for line in lines[:4]), out  # the macro still ends where it did
    assert lines[5].startswith("void run(")
