"""Cases that reach what a bug hides in (issue 29, item 4): planted kernel.cu/binding.cpp bugs that no
random, strided or misaligned case showed, each failing the cuda stage executed on the CPU."""

from __future__ import annotations

from pathlib import Path

import torch
from conftest import copy_op, failed, plant, validate

from brrr_kernels.op.loaders import Where, load_op
from brrr_kernels.validation.trial import Case, permuted, strided_cases

SOFTMAX_CUDA_DTYPES = ('"cuda": (torch.float32, torch.float64, torch.float16, torch.bfloat16),')


def small_softmax(tmp_path: Path, dtypes: str, gpu_sizes: str) -> Path:
    """softmax with its cuda stage checked in `dtypes` at `gpu_sizes` only: a CPU-cheap copy."""
    op = copy_op("softmax", tmp_path)
    plant(op, "spec.py", SOFTMAX_CUDA_DTYPES, f'"cuda": {dtypes},')
    spec = (op / "spec.py").read_text()
    start = spec.index("    gpu_sizes=(")
    end = spec.index("\n", start)
    (op / "spec.py").write_text(spec[:start] + f"    gpu_sizes={gpu_sizes}," + spec[end:])
    return op


def test_the_permuted_case_is_dense_and_holds_the_same_values() -> None:
    x = torch.arange(24.0).view(2, 3, 4)
    p = permuted(x)
    assert torch.equal(p, x) and not p.is_contiguous()
    assert p.stride() == (1, 2, 6)  # dense: every element of its storage used once
    assert p.untyped_storage().nbytes() == x.numel() * x.element_size()
    one_d = torch.arange(5.0)
    labels = [c.label for c in strided_cases([Case("size 5", (one_d,))])]
    assert labels == ["non-contiguous, size 5", "misaligned, size 5"]  # 1-D has no other dense order
    labels = [c.label for c in strided_cases([Case("size (2, 3)", (x[0],)), Case("size (3, 4)", (x[1, :3],))])]
    assert labels[-1] == "permuted, size (3, 4)" and len(labels) == 5


def test_an_output_allocated_with_a_permuted_inputs_strides_fails(tmp_path: Path) -> None:
    """empty_like(x) keeps a dense x's strides: for a transposed x the kernel, writing y row-major,
    scatters each row down a column. Stride-2 views never show it (empty_like makes those contiguous)."""
    op = small_softmax(tmp_path, "(torch.float32,)", "((7, 1000), (9, 2048))")
    plant(op, "binding.cpp", "auto y = at::empty_like(xc);", "auto y = at::empty_like(x);")
    bad = failed(validate(op, "cuda"))
    row = bad.get(("cuda", "non-contiguous fwd", "float32"))
    assert row is not None, sorted(bad)
    # The cause named first, since the output's memory read densely holds softmax(x) (validation/layouts.py).
    assert row.detail.startswith("[permuted, size (9, 2048)] cause: y written as if contiguous"), row.detail
    assert "[permuted, size (9, 2048)] y:" in row.detail
    # opcheck's fake tensors see the strides differ too; every other case has a contiguous x.
    assert {k[1] for k in bad} <= {"non-contiguous fwd", "non-contiguous bwd", "opcheck"}, sorted(bad)


def test_accumulator_sizes_run_in_16_bit_dtypes_only_wherever_the_cuda_stage_runs() -> None:
    spec = load_op("softmax").spec
    assert spec.accumulator_sizes, "softmax declares a row long enough for a 16-bit accumulator to fail"
    for where in (Where.GPU, Where.CPU_EXECUTION):
        for dtype in (torch.float16, torch.bfloat16):
            assert where.sizes(spec, dtype)[-1] == spec.accumulator_sizes[-1]
        assert not set(spec.accumulator_sizes) & set(where.sizes(spec, torch.float32))
    assert not set(spec.accumulator_sizes) & set(Where.SIMULATOR.sizes(spec, torch.bfloat16))


def test_a_softmax_summing_its_exps_in_bfloat16_fails(tmp_path: Path) -> None:
    """v1's running sum of exp(x - max) rounded to bfloat16 at every step: each of its 256 threads adds
    4096 terms of the accumulator size's row, long after a bfloat16 sum stops growing."""
    op = small_softmax(tmp_path, "(torch.bfloat16,)", "((7, 1000),)")
    plant(op, "kernel.cu",
          "for (int64_t c = threadIdx.x; c < cols; c += kV1Threads) total += exp(brrr::to_acc(xr[c]) - m);",
          "for (int64_t c = threadIdx.x; c < cols; c += kV1Threads)\n"
          "        total = brrr::to_acc(brrr::from_acc<T>(total + exp(brrr::to_acc(xr[c]) - m)));")
    bad = failed(validate(op, "cuda"))
    row = bad.get(("cuda", "forward", "bfloat16"))
    assert row is not None, sorted(bad)
    long_row = load_op(str(op)).spec.accumulator_sizes[0]
    assert row.detail.startswith(f"[size {long_row}] y: "), row.detail
    assert row.of_bound is not None and row.of_bound > 10, row.of_bound
