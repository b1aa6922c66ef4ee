"""layernorm: planted bugs in its stages that validation must catch, and its CUDA build."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import HAS_GPU, KNOWN_SPILLS, compile_only, copy_op, cpu_sizes_up_to, failed, gpu, needs_nvcc, plant, validate

from brrr_kernels.cuda import builder
from brrr_kernels.op.loaders import load_op
from brrr_kernels.op.tolerances import Widen, rule_for
from brrr_kernels.verdict.compare import Around, case_terms, compare
from brrr_kernels.verdict.report import NOT_RUN


def test_missing_barrier_between_write_and_fold_is_reported_as_a_race(mutant) -> None:
    """v1's block sum: warp 0 folds the per-warp partials before warp 1 has written its own."""
    op = mutant("layernorm", "no_barrier_before_fold")
    bad = failed(validate(op, "numba"))
    detail = bad[("numba", "forward", "float32")].detail
    assert "SharedMemoryRace: shared-memory race on partial[" in detail, detail
    source = (op / "numba_kernel.py").read_text().splitlines()
    write = next(i for i, ln in enumerate(source, 1) if "partial[cuda.threadIdx.x // 32] = value" in ln)
    read = next(i for i, ln in enumerate(source, 1) if "result = partial[0]" in ln)
    assert f"numba_kernel.py:{write} in block_sum" in detail and f"numba_kernel.py:{read} in block_sum" in detail


def test_weight_gradient_from_one_row_fails_backward_only(mutant) -> None:
    """grad_weight and grad_bias must sum over every row; the first row alone is right only for one-row inputs."""
    op = mutant("layernorm", "weight_grad_one_row")
    bad = failed(validate(op, "numba"))
    assert not any(check in ("forward", "edge forward") for _, check, _ in bad)
    for dtype in ("float32", "float64"):
        detail = bad[("numba", "backward", dtype)].detail
        assert "grad_weight:" in detail and "grad_bias:" in detail and "grad_x:" not in detail, detail
        assert "(1, 1)" not in detail  # one row: nothing to sum
    assert "Jacobian mismatch" in bad[("numba", "gradcheck", "float64")].detail


def test_dropping_eps_divides_by_zero_on_constant_rows(mutant) -> None:
    """Variance 0 without eps: 1/sqrt(0), named at its line with the thread's locals. (Random rows fail
    too, in float64: eps = 1e-5 moves rstd by ~1e-6 relative, far above that tolerance.)"""
    op = mutant("layernorm", "no_eps")
    bad = failed(validate(op, "numba"))
    for dtype in ("float32", "float64"):
        detail = bad[("numba", "edge forward", dtype)].detail
        assert "[constant rows]" in detail and "ZeroDivisionError" in detail, detail
        assert "r = 1.0 / math.sqrt(" in detail and "squares=0.0" in detail
    assert ("numba", "forward", "float64") in bad


def test_float32_statistics_fail_the_large_offset_in_the_reference(mutant) -> None:
    """A float32 mean of 1e4 + noise is off by up to 4.9e-4, which the normalised values inherit / std."""
    op = mutant("layernorm", "float32_statistics")
    bad = failed(validate(op, "reference"))
    detail = bad[("reference", "edge inputs", "float32")].detail
    assert "[large offset]" in detail and "[constant rows]" not in detail, detail
    assert ("reference", "gradcheck", "float64") not in bad


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_compiles_all_three_dtypes_without_spills() -> None:
    (row,) = compile_only("layernorm")
    assert row.verdict == NOT_RUN
    kernels = {k["kernel"]: k for k in row.extras["kernels"]}
    for t in ("float", "double", "__nv_bfloat16"):
        for k in ("forward", "backward_x", "backward_weight"):
            assert f"layernorm_{k}_kernel<{t}>" in kernels
        for packs in (1, 2, 4):
            assert f"layernorm_forward_warp_kernel<{t}, {packs}>" in kernels
        # (packs, launch bound, blocks an SM): bfloat16's rows of 513-1024 packs take 8 packs under 128 threads
        shapes = ((2, 1024, 0), (4, 1024, 0), (8, 128, 6)) if t == "__nv_bfloat16" else ((2, 1024, 0), (4, 1024, 0),
                                                                                        (8, 1024, 0))
        for packs, bound, blocks in shapes:
            for full in ("true", "false"):  # rows whose threads hold every pack (no slot tests), and the rest
                assert f"layernorm_forward_block_kernel<{t}, {packs}, {full}, {bound}, {blocks}>" in kernels
        for packs in (1, 2, 4):
            for full in ("true", "false"):
                assert f"layernorm_backward_v4_kernel<{t}, {packs}, 2, 512, {full}>" in kernels
    spilled = {name for name, k in kernels.items() if k["spill_stores"]}
    assert spilled <= set(KNOWN_SPILLS), f"kernels that spill: {sorted(spilled - set(KNOWN_SPILLS))}"



def test_cuda_weight_gradient_from_one_row_group_fails_backward(mutant) -> None:
    op = mutant("layernorm", "cuda_weight_grad_one_group")
    bad = failed(validate(op, "cuda", fail_fast=True))  # float32 runs first; its forward passed, its backward not
    detail = bad[("cuda", "backward", "float32")].detail
    assert "grad_weight:" in detail and "grad_x:" not in detail, detail
    assert ("cuda", "forward", "float32") not in bad


def test_cuda_block_sum_of_one_warp_fails_the_block_path_only(mutant, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row held by a whole block, its mean summed from warp 0 alone: the rows a warp holds (short
    ones, the edge inputs) and the loop kernel's odd widths stay right."""
    cpu_sizes_up_to(monkeypatch, 1 << 16)  # every size named below, not the four largest
    op = mutant("layernorm", "cuda_block_sum_one_warp")
    bad = failed(validate(op, "cuda"))
    # The first size each dtype takes to a block path; the sizes before it are on other paths.
    for dtype, first in (("float64", "(19, 480)"), ("float32", "(7, 1000)"), ("bfloat16", "(17, 2000)")):
        detail = bad[("cuda", "forward", dtype)].detail
        assert f"[size {first}] y:" in detail, detail
        assert not any(f"[size {size}]" in detail for size in ("(1, 1)", "(37, 64)", "(19, 120)", "(37, 200)"))
        assert ("cuda", "edge forward", dtype) not in bad


def test_cuda_float32_y_centred_on_the_rounded_mean_fails_the_large_offset(mutant, small_cpu_sizes: None) -> None:
    """float32 y subtracts the double mean as hi + lo floats; hi alone is the float mean, whose rounding
    (up to 4.9e-4 near 1e4) every centred value inherits: the large-offset edge rows fail, and random
    rows only where their mean is far enough from 0 to matter; float64 and bfloat16 never."""
    op = mutant("layernorm", "cuda_rounded_mean")
    bad = failed(validate(op, "cuda"))
    detail = bad[("cuda", "edge forward", "float32")].detail
    assert "[large offset]" in detail and "[constant rows]" not in detail, detail
    assert not any(dtype != "float32" for _, _, dtype in bad), bad


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_cuda_forward_v1_and_misaligned_inputs(dtype: torch.dtype) -> None:
    """forward_v1 (the loop kernel, any row) is what `brrr bench` times beside forward; validate never
    calls it, so it is checked here on the validated sizes. Rows off a 16-byte boundary make forward
    take that same kernel: the same bits as forward_v1 on aligned copies."""
    op = load_op("layernorm")
    ext = getattr(torch.ops, builder.build_extension(op).namespace)
    eps = op.spec.params["eps"]
    # The statistics (float64, or float for bfloat16) are sums over a row of both signs: measured against
    # the mean of |x|, and rstd against its centring's loss, (|x| + |mean|) rstd.
    stats_dtype = torch.float32 if dtype == torch.bfloat16 else torch.float64
    mean_rule = rule_for("mean", stats_dtype, "cuda", (Widen("mean", "a row sum of both signs",
                                                             scale=lambda t: t["x"].abs().mean(dim=-1)),))
    rstd_rule = rule_for("rstd", stats_dtype, "cuda", (Widen("rstd", "the centring x - mean loses |x| / std digits",
                                                             scale=lambda t: t["rstd"] * t["loss"]),))
    gen = torch.Generator().manual_seed(0)
    cuda = torch.device("cuda")
    for size in op.spec.gpu_sizes:
        x, w, b = op.spec.make_inputs(size, dtype, cuda, gen)
        y, mean, rstd = ext.forward_v1(x, w, b, eps)
        xd, wd, bd = x.double(), w.double(), b.double()
        want = op.spec.oracle(xd, wd, bd, eps)
        assert compare("y", y, want, op.spec.rule("y", dtype, "cuda"), Around(case_terms(op.spec, (xd, wd, bd), (want,)))).ok
        want_mean, want_rstd = xd.mean(dim=-1), torch.rsqrt(xd.var(dim=-1, unbiased=False) + eps)
        loss = ((xd.abs() + want_mean[:, None].abs()) * want_rstd[:, None]).amax(dim=-1)
        assert compare("mean", mean, want_mean, mean_rule, Around({"x": xd})).ok, size
        assert compare("rstd", rstd, want_rstd, rstd_rule, Around({"rstd": want_rstd, "loss": 1 + loss})).ok, size

    def off_boundary(t: torch.Tensor) -> torch.Tensor:
        flat = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
        shifted = flat[1:].view(t.shape).copy_(t)
        assert shifted.is_contiguous() and shifted.data_ptr() % 16 != 0
        return shifted

    x, w, b = op.spec.make_inputs((37, 200), dtype, cuda, gen)  # whole packs: a register path when aligned
    for got, want in zip(ext.forward(off_boundary(x), w, b, eps), ext.forward_v1(x, w, b, eps)):
        assert torch.equal(got, want)
    for got, want in zip(ext.forward(x, off_boundary(w), b, eps), ext.forward_v1(x, w, b, eps)):
        assert torch.equal(got, want)


def test_cuda_missing_barrier_in_block_sum_fails_backward(mutant) -> None:
    """The per-warp sums folded before the other warps wrote them: wrong row sums in grad_x."""
    op = mutant("layernorm", "cuda_no_barrier_before_fold")
    bad = failed(validate(op, "cuda", fail_fast=True))  # float32 runs first
    detail = bad[("cuda", "backward", "float32")].detail
    if HAS_GPU:
        assert "grad_x:" in detail, detail
    else:  # the CPU execution's checks name the race on the per-warp slots
        assert "race on shared memory:" in detail and "partial[" in detail, detail


@pytest.mark.skipif(HAS_GPU, reason="a GPU does not check barriers: the CPU execution does")
def test_cuda_barrier_in_a_divergent_branch_is_barrier_divergence(mutant) -> None:
    op = mutant("layernorm", "cuda_barrier_in_branch")
    bad = failed(validate(op, "cuda", fail_fast=True))
    detail = bad[("cuda", "backward", "float32")].detail
    assert "in layernorm_backward_weight_kernel<float>, block (1, 0, 0) thread" in detail, detail
    assert "barrier divergence: threads (0, 0, 0)" in detail and "returned without reaching it" in detail, detail
    assert ("cuda", "forward", "float32") not in bad


def _bfloat16_only(tmp_path: Path) -> Path:
    """layernorm with its cuda stage in bfloat16 at one small size (and so its accumulator size): CPU-cheap."""
    op = copy_op("layernorm", tmp_path)
    plant(op, "spec.py", '"cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),',
          '"cuda": (torch.bfloat16,),')
    return plant(op, "spec.py", "    gpu_sizes=GPU_SIZES,", "    gpu_sizes=((7, 1000),),")


@needs_nvcc
def test_a_layernorm_summing_its_row_in_bfloat16_fails_at_the_accumulator_size(tmp_path: Path,
                                                                                  small_cpu_sizes: None) -> None:
    """v1's running sum of the row rounded to bfloat16 at every step: each of its 256 threads adds 4096
    terms of the accumulator size's row, long after a bfloat16 sum stops growing. The kernel as it is
    (a double sum) passes the same forward. (The accumulator size runs at any size budget.)"""
    long_row = load_op("layernorm").spec.accumulator_sizes[0]
    assert long_row[-1] // 256 >= 4096, long_row  # terms a thread of v1's 256 sums
    clean = failed(validate(_bfloat16_only(tmp_path / "clean"), "cuda"))
    assert ("cuda", "forward", "bfloat16") not in clean, clean[("cuda", "forward", "bfloat16")].detail
    op = plant(_bfloat16_only(tmp_path / "planted"), "kernel.cu",
               "for (int64_t c = threadIdx.x; c < cols; c += kThreads) total += static_cast<double>(to_stat(xr[c]));",
               "for (int64_t c = threadIdx.x; c < cols; c += kThreads)\n"
               "        total = to_stat(from_stat<T>(static_cast<stat_t<T>>(total) + to_stat(xr[c])));")
    bad = failed(validate(op, "cuda"))
    row = bad.get(("cuda", "forward", "bfloat16"))
    assert row is not None, sorted(bad)
    assert row.detail.startswith(f"[size {long_row}] y: "), row.detail
    assert row.of_bound is not None and row.of_bound > 10, row.of_bound
