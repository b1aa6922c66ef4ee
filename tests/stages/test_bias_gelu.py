"""bias_gelu: planted bugs (the bias gradient, the saturated tails) that validation must catch,
its CUDA build, and on a GPU the properties the CUDA stage promises beyond the runner's checks."""

from __future__ import annotations

import pytest
import torch
from conftest import HAS_GPU, compile_only, failed, gpu, needs_nvcc, validate

from brrr_kernels.cuda import builder
from brrr_kernels.op.loaders import load_op
from brrr_kernels.verdict.report import NOT_RUN


def test_bias_gradient_from_row_0_only_fails_backward(mutant) -> None:
    op = mutant("bias_gelu", "bias_grad_row0")
    bad = failed(validate(op, "numba"))
    for dtype in ("float32", "float64"):
        detail = bad[("numba", "backward", dtype)].detail
        assert "grad_bias:" in detail and "grad_x:" not in detail, detail
        assert ("numba", "forward", dtype) not in bad
    assert "Jacobian mismatch" in bad[("numba", "gradcheck", "float64")].detail


def test_reference_bias_gradient_not_summed_fails_gradcheck_and_oracle(mutant) -> None:
    op = mutant("bias_gelu", "reference_bias_grad_unsummed")
    bad = failed(validate(op, "reference"))
    assert "Jacobian mismatch" in bad[("reference", "gradcheck", "float64")].detail
    assert "grad_bias:" in bad[("reference", "backward vs oracle", "float32")].detail


def test_bias_indexed_by_row_instead_of_column_fails_forward(mutant) -> None:
    op = mutant("bias_gelu", "bias_by_row")
    bad = failed(validate(op, "numba"))
    assert "y:" in bad[("numba", "forward", "float32")].detail


def test_tanh_from_exp_is_nan_on_saturated_inputs(mutant) -> None:
    """(e^2z - 1)/(e^2z + 1) is inf/inf at u = 1e4: NaN where GELU is 1e4."""
    op = mutant("bias_gelu", "tanh_from_exp")
    row = failed(validate(op, "reference"))[("reference", "edge inputs", "float64")]
    assert "NaN where a number was expected" in row.detail
    assert abs(row.worst.expected) == 1e4


def test_numba_exp_overflow_is_named_with_its_thread(mutant) -> None:
    op = mutant("bias_gelu", "exp_overflow")
    row = failed(validate(op, "numba"))[("numba", "edge forward", "float64")]
    assert "OverflowError" in row.detail and "numba_kernel.py:" in row.detail and "in sigmoids" in row.detail


def test_cuda_layout_for_tiles_and_for_bias_gradient() -> None:
    spec = load_op("bias_gelu").spec
    locate = spec.layouts["cuda"].locate
    # Row 45 of 257 is in row group 45 // 4 = 11: block y 1, thread y 3. Column 300 is in block x 1
    # (columns 256..511), 44 columns in: thread x 11 owns 300..303 and 428..431.
    assert locate(45 * 4099 + 300, (257, 4099)) == ((1, 1, 0), (11, 3, 0))
    assert locate(45 * 4099 + 428, (257, 4099)) == ((1, 1, 0), (11, 3, 0))
    assert locate(45 * 4099 + 304, (257, 4099)) == ((1, 1, 0), (12, 3, 0))
    # grad_bias: bias_grad_kernel's blocks of kFinalizeColumns = 32 columns, a lane each (its warps split the parts)
    assert locate(300, (4099,)) == ((9, 0, 0), (12, 0, 0))
    # Past 65535 * 8 groups of 4 rows, each thread takes more rows rather than the grid growing.
    rows = 65535 * 8 * 4 + 1
    assert spec.layouts["cuda"].locate((rows - 1) * 3, (rows, 3))[0][1] <= 65534


@pytest.mark.parametrize("itemsize", [2, 4, 8])
def test_cuda_layout_names_the_flat_forward_and_the_backwards_longer_tiles(itemsize: int) -> None:
    """y of rows that are whole 16-byte packs: v7's flat forward; grad_x: v8's tiles of up to 16 rows."""
    layout = load_op("bias_gelu").spec.layouts["cuda"]
    per_pack = 16 // itemsize
    cols = 40 * per_pack  # whole packs
    # Element 1 of row 300's fourth pack is pack 300 * 40 + 3 = 12003: block 46, thread 227.
    assert layout.place_in("y", 300 * cols + 3 * per_pack + 1, (8192, cols), itemsize) == ((46, 0, 0), (227, 0, 0))
    # A ragged row (not whole packs) keeps the tiles, as the forward does.
    ragged = (8192, cols + 1)
    assert layout.place_in("y", 300 * (cols + 1), ragged, itemsize) == layout.place(300 * (cols + 1), ragged, itemsize)
    # grad_x at 8192 rows: 16 rows a thread, 8 row groups a block: row 17 is thread y 1, row 128 block y 1.
    assert layout.place_in("grad_x", 17 * cols, (8192, cols), itemsize) == ((0, 0, 0), (0, 1, 0))
    assert layout.place_in("grad_x", 128 * cols, (8192, cols), itemsize) == ((0, 1, 0), (0, 0, 0))
    # 4100 rows: 8 rows a thread; 257 rows keep 4 (fewer would leave under 64 block rows).
    assert layout.place_in("grad_x", 17 * cols, (4100, cols), itemsize) == ((0, 0, 0), (0, 2, 0))
    assert layout.place_in("grad_x", 17 * cols, (257, cols), itemsize) == ((0, 0, 0), (0, 4, 0))


def test_the_widened_y_bound_allows_u_rounding_but_not_the_naive_tanh_form() -> None:
    """In gelu's left tail the bound grows with u's rounding (u^2 of it), but the naive
    0.5 u (1 + tanh z) in float32, which cancels, still fails it."""
    from brrr_kernels.stages.bias_gelu.reference import forward
    from brrr_kernels.verdict.compare import Around, case_terms, compare

    spec = load_op("bias_gelu").spec
    x = torch.linspace(-6.0, -3.0, 301, dtype=torch.float64).reshape(1, -1).float()
    bias = torch.zeros(301, dtype=torch.float32)
    xd, bd = x.double(), bias.double()
    want = forward(xd, bd)
    terms = case_terms(spec, (xd, bd), (want,))
    rule = spec.rule("y", torch.float32, "numba")
    u32 = (x + bias).double()  # u rounded to float32, then computed exactly: the error the bound is for
    assert compare("y", forward(u32, torch.zeros_like(bd)).float(), want, rule, Around(terms)).ok
    assert not compare("y", torch.zeros_like(x), want, rule, Around(terms)).ok
    z = (2 / torch.pi) ** 0.5 * (x + 0.044715 * x**3)
    naive = 0.5 * x * (1 + torch.tanh(z))  # float32 throughout
    c = compare("y", naive, want, rule, Around(terms))
    assert not c.ok, "the naive form cancels in float32 and must fail"


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_compiles_without_spills() -> None:
    (row,) = compile_only("bias_gelu")
    assert row.verdict == NOT_RUN
    kernels = {k["kernel"]: k for k in row.extras["kernels"]}
    for t in ("float", "double", "__half", "__nv_bfloat16"):
        for name in ("bias_gelu_forward_kernel", "bias_gelu_forward_v1_kernel", "bias_gelu_backward_kernel",
                     "bias_grad_kernel"):
            assert f"{name}<{t}>" in kernels
        vec = 8 if t in ("__half", "__nv_bfloat16") else 4  # kVec<T>: one 16-byte vector of T
        # sums[kBlockY][kPack][kBlockX] of double
        assert kernels[f"bias_gelu_backward_kernel<{t}>"]["shared_bytes"] == 8 * (2 * vec) * 32 * 8
    assert all(k["spill_stores"] == 0 for k in kernels.values())


# -- on a GPU -------------------------------------------------------------------------------


def _cuda_stage():
    return builder.build_extension(load_op("bias_gelu"))


def _reference():
    from brrr_kernels.op.loaders import load_reference

    return load_reference(load_op("bias_gelu"))


def _misaligned(t: torch.Tensor) -> torch.Tensor:
    """The same values, contiguous, starting one element past a 16-byte boundary."""
    flat = torch.empty(t.numel() + 1, dtype=t.dtype, device=t.device)
    flat[1:] = t.reshape(-1)
    return flat[1:].view(t.shape)


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_bias_gradient_is_the_same_bits_every_run(dtype: torch.dtype) -> None:
    ext = _cuda_stage()
    x = torch.randn(1031, 1032, device="cuda").to(dtype)
    bias = torch.randn(1032, device="cuda").to(dtype)
    g = torch.randn(1031, 1032, device="cuda").to(dtype)
    first = ext.backward(g, x, bias)[1]
    for _ in range(3):
        assert torch.equal(ext.backward(g, x, bias)[1], first)


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_vector_and_scalar_paths_agree(dtype: torch.dtype) -> None:
    """Aligned rows take 16-byte packs; the same values one element off a boundary take the scalar path."""
    ext = _cuda_stage()
    x = torch.randn(37, 1032, device="cuda").to(dtype)
    bias = torch.randn(1032, device="cuda").to(dtype)
    g = torch.randn(37, 1032, device="cuda").to(dtype)
    torch.testing.assert_close(ext.forward(_misaligned(x), bias), ext.forward(x, bias), rtol=0, atol=0)
    got_x, got_bias = ext.backward(_misaligned(g), _misaligned(x), bias)
    want_x, want_bias = ext.backward(g, x, bias)
    torch.testing.assert_close(got_x, want_x, rtol=1e-12 if dtype == torch.float64 else 1e-6, atol=0)
    # The column sums are not in the same order: the vector path adds a thread's rows in acc_t before
    # its double sums (v4), the scalar path in double throughout. So grad_bias is held to the op's own
    # rule for it (8 ulps of the sum of its terms' sizes), which a dropped or doubled row fails.
    terms = {"x": x.double(), "bias": bias.double(), "grad_y": g.double()}
    rule = load_op("bias_gelu").spec.rule("grad_bias", dtype, "cuda")
    assert rule.excess(got_bias, want_bias.double(), terms).max() <= 1


@gpu
def test_more_rows_than_the_grid_reaches_in_y() -> None:
    """2^21 + 3 rows need more than 4 rows a thread (65535 blocks of 8 threads in y)."""
    ext, ref = _cuda_stage(), _reference()
    x = torch.randn(2**21 + 3, 3, device="cuda", dtype=torch.float64)
    bias = torch.randn(3, device="cuda", dtype=torch.float64)
    g = torch.randn_like(x)
    torch.testing.assert_close(ext.forward(x, bias), ref.forward(x, bias), rtol=1e-10, atol=1e-12)
    for got, want in zip(ext.backward(g, x, bias), ref.backward(g, x, bias)):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-9)


def test_cuda_missing_barrier_before_the_column_sum_fails_the_bias_gradient(mutant) -> None:
    op = mutant("bias_gelu", "cuda_no_barrier_before_column_sum")
    bad = failed(validate(op, "cuda"))
    detail = bad[("cuda", "backward", "float64")].detail
    if HAS_GPU:
        assert "grad_bias:" in detail and "grad_x:" not in detail, detail
    else:  # the CPU execution's checks name the race: a row group's sums read before they are written
        assert "race on shared memory: writes sums[" in detail and "with no __syncthreads" in detail, detail
    assert ("cuda", "forward", "float64") not in bad
