"""softmax: planted bugs in its stages that validation must catch, and its CUDA build."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from conftest import HAS_GPU, compile_only, failed, gpu, needs_cuda_torch, needs_nvcc, validate

from brrr_kernels.op.loaders import load_op
from brrr_kernels.verdict.compare import Around, case_terms, compare
from brrr_kernels.verdict.report import NOT_RUN


def test_numba_without_the_max_subtraction_overflows_on_large_values(mutant) -> None:
    """exp(x) instead of exp(x - max): the random rows (|x| < ~20) never show it, 1e4 does."""
    op = mutant("softmax", "no_max")
    bad = failed(validate(op, "numba"))
    assert not any(check in ("forward", "backward") for _, check, _ in bad), "random inputs stay in range"
    for dtype in ("float32", "float64"):
        detail = bad[("numba", "edge forward", dtype)].detail
        assert "[large values]" in detail and "OverflowError" in detail, detail
        assert "math.exp(v[k * width + j])" in detail  # the faulting line is shown
    # Each fault names the thread that overflowed: the edge rows are 6 wide, a warp each, four a block,
    # so row r's lane l is thread 32 (r % 4) + l of block r // 4.
    detail = bad[("numba", "edge forward", "float32")].detail
    pattern = r"block \((\d+), 0, 0\) thread \((\d+), 0, 0\).*locals: .*tpr=(\d+).*lane=(\d+), row=(\d+)"
    faults = [re.search(pattern, part, re.S) for part in detail.split("\n[")
              if part.lstrip("[").startswith("large values]")]
    assert faults and all(faults), detail
    for block, thread, tpr, lane, row in (map(int, f.groups()) for f in faults):
        assert tpr == 32 and block == row // 4 and thread == 32 * (row % 4) + lane


def test_naive_reference_fails_against_the_oracle_on_large_values(mutant) -> None:
    """Without the max, exp(1e4) is inf and inf/inf NaN, or exp(-1e4) = 0 and 0/0 NaN."""
    op = mutant("softmax", "reference_no_max")
    bad = failed(validate(op, "reference"))
    row = bad[("reference", "edge inputs", "float32")]
    assert "[large values]" in row.detail and "NaN where a number was expected" in row.detail
    assert "[minus infinity]" in row.detail  # its second row holds 1e4 too
    assert ("reference", "gradcheck", "float64") not in bad


def test_missing_barrier_before_the_fold_is_reported_as_a_race(mutant) -> None:
    """Rows of two or more warps meet in shared memory: without the barrier, threads fold the
    partials before other warps have written them, which the simulator reports as a race."""
    op = mutant("softmax", "no_barrier_before_fold")
    bad = failed(validate(op, "numba"))
    detail = bad[("numba", "forward", "float64")].detail
    assert "[size (2, 1030)]" in detail and "SharedMemoryRace: shared-memory race on part_max[" in detail, detail
    assert "[size (5, 70)]" not in detail  # a warp per row: no barrier to miss


def test_dot_product_not_reduced_over_the_block_fails_backward_only(mutant) -> None:
    """Each thread using its own partial dot: right for one-column rows, wrong once a row spans threads."""
    op = mutant("softmax", "dot_not_reduced")
    bad = failed(validate(op, "numba"))
    assert not any(check in ("forward", "edge forward") for _, check, _ in bad)
    detail = bad[("numba", "backward", "float64")].detail
    assert "grad_x:" in detail and "(1, 1)" not in detail, detail
    assert "Jacobian mismatch" in bad[("numba", "gradcheck", "float64")].detail


def test_minus_infinity_gives_exact_zeros() -> None:
    from brrr_kernels.op.loaders import load_numba
    from brrr_kernels.validation.function import call

    numba = load_numba(load_op("softmax"))
    x = torch.tensor([[float("-inf"), 0.0, 1.0]], dtype=torch.float64, requires_grad=True)
    (y,) = call(numba, x)
    assert y[0, 0].item() == 0.0 and abs(y.sum().item() - 1) < 1e-15
    (grad,) = torch.autograd.grad(y, x, torch.tensor([[5.0, 1.0, -1.0]], dtype=torch.float64))
    assert grad[0, 0].item() == 0.0


# kernel.cu's kernels per dtype: the register path at 16-byte packs and one element at a time,
# and v1 (forward_v1, and the path for rows too long for registers).
PACKS = {"float": 4, "double": 2, "__half": 8, "__nv_bfloat16": 8}


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_compiles_all_four_dtypes_without_spills() -> None:
    (row,) = compile_only("softmax")
    assert row.verdict == NOT_RUN
    kernels = {k["kernel"]: k for k in row.extras["kernels"]}
    for t, w in PACKS.items():
        for phase in ("forward", "backward"):
            for width in (w, 1):
                for full in ("true", "false"):  # v4: rows whose threads hold every slot, and the rest
                    assert f"softmax_{phase}_kernel<{t}, {width}, {full}>" in kernels, sorted(kernels)
            assert f"softmax_{phase}_v1_kernel<{t}>" in kernels, sorted(kernels)
    assert all(k["spill_stores"] == 0 and k["spill_loads"] == 0 for k in kernels.values()), kernels


@needs_cuda_torch
def test_cuda_build_registers_forward_v1_beside_forward() -> None:
    from brrr_kernels.cuda import builder

    ext = builder.build_extension(load_op("softmax"), arch="sm_90")
    assert list(ext.variants()) == ["forward_v1"]


def test_cuda_without_the_max_subtraction_gives_nan_on_large_values(mutant, small_cpu_sizes: None) -> None:
    """The planted bug is in the register path, which the edge cases' 6-column rows take."""
    op = mutant("softmax", "cuda_no_max")
    bad = failed(validate(op, "cuda"))
    for dtype in ("float32", "float16", "bfloat16"):
        detail = bad[("cuda", "edge forward", dtype)].detail
        assert "[large values]" in detail and "NaN where a number was expected" in detail, detail


DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


@gpu
def test_cuda_forward_v1_agrees_with_forward() -> None:
    """forward_v1 (bench's first version) on each of forward's paths: packs, single elements, v1."""
    from brrr_kernels.cuda import builder

    op = load_op("softmax")
    ext = builder.build_extension(op)
    v1 = ext.variants()["forward_v1"]
    gen = torch.Generator().manual_seed(0)
    for dtype in DTYPES:
        rule = op.spec.rule("y", dtype, "cuda")
        for size in ((7, 1000), (65, 8192), (33, 4099), (3, 70001)):
            (x,) = op.spec.make_inputs(size, dtype, torch.device("cuda"), gen)
            want = torch.softmax(x.double(), dim=-1)
            terms = case_terms(op.spec, (x.double(),), (want,))
            for got in (ext.forward(x), v1(x)):
                assert compare("y", got, want, rule, Around(terms)).ok, (dtype, size)


@gpu
def test_cuda_takes_the_element_path_for_misaligned_rows() -> None:
    """A contiguous view one element into its storage is not 16-byte aligned, though its rows are
    whole packs: the launcher must see it and take the element-at-a-time kernel."""
    from brrr_kernels.cuda import builder

    op = load_op("softmax")
    ext = builder.build_extension(op)
    rows, cols = 9, 2048
    for dtype in DTYPES:
        x = (3 * torch.randn(rows * cols + 1, device="cuda", dtype=torch.float64)).to(dtype)[1:].view(rows, cols)
        g = torch.randn(rows * cols + 1, device="cuda", dtype=torch.float64).to(dtype)[1:].view(rows, cols)
        assert x.data_ptr() % 16 != 0 and x.is_contiguous()
        y = ext.forward(x)
        expected = torch.softmax(x.double(), dim=-1)
        terms = case_terms(op.spec, (x.double(),), (expected,))
        assert compare("y", y, expected, op.spec.rule("y", dtype, "cuda"), Around(terms)).ok, dtype
        y_off = torch.empty(rows * cols + 1, device="cuda", dtype=dtype)[1:].view(rows, cols).copy_(y)
        grad = ext.backward(g, y_off)
        yd = y_off.double()
        expected = yd * (g.double() - (g.double() * yd).sum(dim=-1, keepdim=True))
        terms = case_terms(op.spec, (x.double(),), (yd,), (g.double(),))
        assert compare("grad_x", grad, expected, op.spec.rule("grad_x", dtype, "cuda"), Around(terms)).ok, dtype


def test_cuda_missing_barrier_before_the_sum_fails_rows_of_several_warps(mutant) -> None:
    """Warps fold the other warps' slots before they are written: shared memory still holds its
    poison (NaN) on the CPU, or stale sums on a GPU. Rows of one warp need no barrier and pass."""
    op = mutant("softmax", "cuda_no_barrier_before_sum")
    bad = failed(validate(op, "cuda", fail_fast=True))
    detail = bad[("cuda", "forward", "float32")].detail
    assert "y:" in detail and "[size (33, 4099)]" in detail and "[size (5, 70)]" not in detail, detail


@pytest.mark.skipif(HAS_GPU, reason="a GPU does not check warp masks: the CPU execution does")
def test_cuda_shuffle_with_a_mask_that_leaves_out_the_source_lane_is_named(mutant) -> None:
    op = mutant("softmax", "cuda_shuffle_mask")
    bad = failed(validate(op, "cuda"))
    detail = bad[("cuda", "forward_v1", "float32")].detail
    kernel = Path(getattr(op, "folder", op)) / "kernel.cu"
    line = 1 + kernel.read_text().split("__shfl_xor_sync(0x0000ffffu")[0].count("\n")
    assert f"kernel.cu:{line} in softmax_forward_v1_kernel<float>, block (0, 0, 0) thread (0, 0, 0): warp mask:" in detail
    assert "lane 0 reads lane 16 of __shfl_xor_sync with mask 0xffff, which does not name lane 16" in detail


@pytest.mark.skipif(HAS_GPU, reason="a GPU does not check barriers: the CPU execution does")
def test_cuda_barrier_in_a_branch_of_lane_0_is_named(mutant) -> None:
    """Lane 0 of each warp waits at __syncthreads while its warp's other lanes go on: they read the
    warp slots lane 0 has yet to write, then reach the next reduction's shuffle, which names lane 0,
    still at the barrier they went past: barrier divergence, named at that barrier."""
    op = mutant("softmax", "cuda_barrier_in_branch")
    bad = failed(validate(op, "cuda", fail_fast=True))
    detail = bad[("cuda", "forward", "float32")].detail
    assert re.search(r"kernel\.cu:\d+ in softmax_forward_kernel<float, \d, (?:true|false)>, "
                     r"block \(0, 0, 0\) thread \(0, 0, 0\): "
                     r"barrier divergence: thread \(0, 0, 0\) waits at __syncthreads at \S*kernel\.cu:\d+, which thread "
                     r"\(\d+, 0, 0\) of its warp went past", detail), detail

