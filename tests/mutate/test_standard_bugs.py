"""The standard bugs: each kind found by the syntax tree, applied by line and column, readable as a diff."""

from __future__ import annotations

import ast

import pytest

from brrr_kernels.mutate.standard_bugs import Kind, perturbed, python_mutants

KERNELS = '''
import math
from numba import cuda

C = 0.044715


@cuda.jit(device=True)
def block_sum(value, partial, t):
    partial[t] = value
    cuda.syncthreads()
    total = 0.0
    for i in range(0, 16):
        total += partial[i]
    return total


@cuda.jit
def kernel(x, y, n):
    i = cuda.grid(1)
    if i >= n:
        return
    v = x[i]
    y[i] = math.log1p(v * C) + math.expm1(v)


def forward(x, y, n):
    launch(kernel, cdiv(n, 128), 128, x, y, n)
'''


def _by_kind(source: str) -> dict[Kind, list[str]]:
    found: dict[Kind, list[str]] = {}
    for m in python_mutants(source):
        found.setdefault(m.kind, []).append(m.what)
    return found


def test_every_standard_bug_is_found_where_the_code_admits_it() -> None:
    found = _by_kind(KERNELS)
    assert set(found) == set(Kind) - {Kind.KNOWN}  # known bugs come from the op folder, not the source
    assert "i >= n -> i > n" in found[Kind.COMPARISON] and "i >= n -> i <= n" in found[Kind.COMPARISON]
    assert "range(0, 16): stop 16 -> 16 - 1" in found[Kind.COMPARISON]
    assert "x[i] -> x[i + 1]" in found[Kind.INDEX]
    assert found[Kind.LAST_BLOCK] == ["grid cdiv(n, 128) -> max(1, cdiv(n, 128) - 1)"]
    assert set(found[Kind.NAIVE]) == {"math.log1p(v * C) -> math.log(1 + v * C)",
                                      "math.expm1(v) -> (math.exp(v) - 1)"}
    assert found[Kind.CONSTANT] == ["0.044715 -> 0.044725"]
    assert found[Kind.ACCUMULATOR] == ["total = 0.0 -> total = 1.0"]
    assert found[Kind.BARRIER] == ["cuda.syncthreads() removed"]
    # x is read and never written by `kernel`; y is written, and block_sum is a device function.
    assert found[Kind.INPUT_WRITE] == ["x[i] = 2 * x[i] + 1 added"]


def test_mutants_compile_and_their_diff_is_one_readable_edit() -> None:
    for m in python_mutants(KERNELS):
        mutated = m.apply(KERNELS)
        ast.parse(mutated)
        assert mutated != KERNELS
        changed = [ln for ln in m.diff(KERNELS).splitlines() if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
        assert 1 <= len(changed) <= 2, m.diff(KERNELS)
    (m,) = [m for m in python_mutants(KERNELS) if m.kind == Kind.INPUT_WRITE]
    assert "+    x[i] = 2 * x[i] + 1\n" in m.diff(KERNELS)  # at the statement's indentation, after it


def test_reformatting_the_source_gives_the_same_bugs() -> None:
    """Edits come from the tree, so spacing and line breaks do not change what is found."""
    spaced = KERNELS.replace("if i >= n:", "if   i>=n :").replace("x[i]", "x[ i ]").replace(
        "math.log1p(v * C)", "math.log1p(\n        v * C)")
    assert sorted(m.kind for m in python_mutants(spaced)) == sorted(m.kind for m in python_mutants(KERNELS))
    for m in python_mutants(spaced):
        ast.parse(m.apply(spaced))


@pytest.mark.parametrize("value, expected", [(0.044715, 0.044725), (1.0, 1.001), (2.5, 2.501), (-0.5, -0.4999),
                                             (1e-5, 1.001e-5)])
def test_a_constant_moves_in_its_fourth_significant_digit(value: float, expected: float) -> None:
    assert perturbed(value) == pytest.approx(expected, rel=1e-12)


def test_builtin_numba_stages_give_mutants_that_parse() -> None:
    from brrr_kernels.op.loaders import builtin_op_names, load_op

    for name in builtin_op_names():
        source = load_op(name).path("numba").read_text()
        mutants = python_mutants(source)
        assert len(mutants) >= 10, name
        for m in mutants:
            ast.parse(m.apply(source))


def test_a_halving_loops_start_is_seeded_wrong_in_cuda() -> None:
    """A shuffle butterfly's `offset = 16` (halved with /= or >>=) is a seed to perturb, as an accumulator's is."""
    from brrr_kernels.mutate.standard_bugs import cuda_mutants

    for step in ("offset /= 2", "offset >>= 1"):
        text = ("__device__ float warp_sum(float v) {\n"
                f"    for (int offset = 16; offset > 0; {step}) v += __shfl_xor_sync(0xffffffffu, v, offset);\n"
                "    return v;\n}\n")
        assert "offset = 16 -> offset = 17" in [m.what for m in cuda_mutants(text) if m.kind == Kind.ACCUMULATOR], step
