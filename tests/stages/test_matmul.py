"""matmul: the tiled kernels' planted bugs (barriers, boundary tiles, transposed strides) must fail."""

from __future__ import annotations

import pytest
import torch
from conftest import HAS_GPU, KNOWN_SPILLS, compile_only, cpu_sizes_up_to, failed, gpu, needs_nvcc, validate

from brrr_kernels.op.loaders import load_op
from brrr_kernels.verdict.report import NOT_RUN

ALL_ROWS = {(check, dtype) for check in ("forward", "backward", "edge forward", "edge backward")
            for dtype in ("float32", "float64")}


def failed_checks(bad: dict) -> set[tuple[str, str]]:
    return {(check, dtype) for stage, check, dtype in bad if stage == "numba"}


FORWARD_ROWS = {(check, dtype) for check in ("forward", "edge forward") for dtype in ("float32", "float64")}
LOAD_LINE = "a_tile[ty, tx] = a[row * a_rs + ka * a_cs]"
DOT_LINE = "acc += a_tile[ty, kk] * b_tile[kk, tx]"


def lines_of(op, *texts: str) -> list[int]:
    source = (op / "numba_kernel.py").read_text().splitlines()
    return [next(i for i, ln in enumerate(source, 1) if text in ln) for text in texts]


def test_missing_barrier_after_tile_loads_is_reported_as_a_race(mutant) -> None:
    """Without the barrier after the loads, thread (0, 0) reads a[0, 1] from the tile before thread
    (1, 0) has loaded it: a race between the load and the product, named with both lines, on every
    forward row (a faulting forward leaves backward unrun)."""
    op = mutant("matmul", "no_barrier_after_loads")
    bad = failed(validate(op, "numba"))
    assert FORWARD_ROWS <= failed_checks(bad)
    load, dot = lines_of(op, LOAD_LINE, DOT_LINE)
    row = bad[("numba", "forward", "float64")]
    assert "SharedMemoryRace: shared-memory race on a_tile[0, 1]" in row.detail, row.detail
    assert f"numba_kernel.py:{load} in kernel" in row.detail and f"numba_kernel.py:{dot} in kernel" in row.detail


def test_missing_barrier_before_tile_overwrite_is_reported_as_a_race(mutant) -> None:
    """Without the barrier after the products, a thread loads tile k0 + 4 over tile k0 while others
    still read it: only sums over two or more k-tiles have a next tile, (5, 7, 3) and (6, 5, 7)."""
    op = mutant("matmul", "no_barrier_before_overwrite")
    bad = failed(validate(op, "numba"))
    assert {("forward", "float32"), ("forward", "float64")} <= failed_checks(bad)
    detail = bad[("numba", "forward", "float32")].detail
    assert "[size (5, 7, 3)]" in detail and "[size (6, 5, 7)]" in detail and "[size (1, 1, 1)]" not in detail
    load, dot = lines_of(op, LOAD_LINE, DOT_LINE)
    assert "SharedMemoryRace" in detail and f":{load} in kernel" in detail and f":{dot} in kernel" in detail


def test_boundary_tile_that_is_not_zero_filled_reads_unwritten_shared_memory(mutant) -> None:
    """With no zeros past the edges, a partial k-tile's last columns are never written in the first
    tile of a block: the products read shared memory no thread has written, and it is named."""
    # Both zero fills must go: either one alone still zeroes every product past K (see the NaN test).
    op = mutant("matmul", "no_zero_fill")
    bad = failed(validate(op, "numba"))
    assert FORWARD_ROWS <= failed_checks(bad)
    (dot,) = lines_of(op, DOT_LINE)
    row = bad[("numba", "forward", "float32")]
    assert "[size (5, 7, 3)]" in row.detail and "[size (6, 5, 7)]" in row.detail
    assert "UnwrittenSharedRead: read of unwritten shared memory: thread (0, 0, 0) reads a_tile[0, " in row.detail
    assert f"numba_kernel.py:{dot} in kernel" in row.detail


def test_nan_past_k_is_not_cancelled_by_the_other_operands_zeros(mutant) -> None:
    """Garbage read past K where b's tile holds zeros still poisons the sum if it is NaN: NaN * 0 = NaN.

    On a GPU an unfilled shared-memory slot can hold any bit pattern; planting NaN in a's tile past
    the edge shows why a's tile needs its zeros even though b's tile has them: every sum with a
    partial k-tile comes out NaN where a number was expected.
    """
    op = mutant("matmul", "nan_past_k")
    bad = failed(validate(op, "numba"))
    assert ALL_ROWS <= failed_checks(bad)
    assert "NaN where a number was expected" in bad[("numba", "forward", "float32")].detail


def test_transposed_operand_read_with_its_own_strides_fails_backward(mutant) -> None:
    """grad_a reads b^T through swapped strides; reading b's storage as if it were b^T is wrong.

    Forward never touches that code, so it still passes; backward and gradcheck fail.
    """
    op = mutant("matmul", "transposed_strides")
    bad = failed(validate(op, "numba"))
    checks = failed_checks(bad)
    assert ("forward", "float32") not in checks and ("edge forward", "float64") not in checks
    assert {("backward", "float32"), ("backward", "float64")} <= checks
    assert ("numba", "gradcheck", "float64") in bad
    assert "grad_a:" in bad[("numba", "backward", "float64")].detail


# -- the spec --------------------------------------------------------------------------------


def test_huge_edge_case_is_exact_in_float32() -> None:
    """Its point is that any error at all is a bug: float32 must give float64's answer bit for bit."""
    spec = load_op("matmul").spec
    a, b = spec.edge_cases["huge mixed-sign, exact"](torch.float32, torch.device("cpu"))
    c = a @ b
    assert torch.equal(c.double(), a.double() @ b.double())
    assert c[0, 0] == 0 and c[4, 2] == 0 and c[1, 2] != 0 and c.abs().max() > 1e30


def test_layout_wraps_rows_past_the_grid_limit() -> None:
    """The kernels cap gridDim.y at 65535 and loop: row tile 65535 is block y 0's second tile."""
    layout = load_op("matmul").spec.layouts["cuda"]
    n = 100
    assert layout.place(17 * n + 40, (20, n), 8) == ((2, 1, 0), (8, 1, 0))  # float64: 16x16
    assert layout.place(65535 * 16 * n + 3, (65535 * 16 + 1, n), 8) == ((0, 0, 0), (3, 0, 0))
    assert layout.place(65535 * 128 * 128 + 3, (65536 * 128, 128), 4) == ((0, 0, 0), (0, 0, 0))


def test_cuda_layout_follows_the_kernel_choice_and_each_versions_register_blocks() -> None:
    """float32 outputs come from v5 in forward and backward (warps 4 x 2 over 32 x 64 tiles, lanes 4 x 8),
    those of 128-multiple rows and columns from v3 or v4 in forward_v3 and forward_v4 (thread t = ty * 16 + tx
    stores rows micro(i, ty) and columns micro(j, tx): kernel.cu's micro()); float64, forward_v1 and _v2,
    and v3 and v4's other shapes, from the 16x16 kernel."""
    layout = load_op("matmul").spec.layouts["cuda"]

    def micro(i: int, t: int, half: int) -> int:
        return (i // 4) * half + t * 4 + i % 4

    rows, cols = 256, 384
    for t in range(256):
        ty, tx = divmod(t, 16)
        warp, lane = divmod(t, 32)
        row_base, col_base = (warp // 2) * 32 + (lane // 8) * 4, (warp % 2) * 64 + (lane % 8) * 4
        for by, bx, i, j in ((0, 0, 0, 0), (1, 2, 7, 3), (1, 1, 4, 5), (0, 2, 3, 7)):
            r, c = by * 128 + micro(i, ty, 64), bx * 128 + micro(j, tx, 64)
            for check in ("forward_v3", "forward_v4"):
                assert layout.place_for(check, "c", r * cols + c, (rows, cols), 4) == ((bx, by, 0), (t, 0, 0))
            r, c = by * 128 + row_base + (i // 4) * 16 + i % 4, bx * 128 + col_base + (j // 4) * 32 + j % 4
            for check, output in (("forward", "c"), ("backward", "grad_a"), ("backward", "grad_b")):
                assert layout.place_for(check, output, r * cols + c, (rows, cols), 4) == ((bx, by, 0), (t, 0, 0))
            assert layout.place(r * cols + c, (rows, cols), 4) == ((bx, by, 0), (t, 0, 0))
    assert layout.place(130 * cols + 17, (rows, cols), 8) == ((1, 8, 0), (1, 2, 0))  # float64: 16x16
    # 100 columns: v5 still (its edge tile), v3 and v4 leave such outputs to the 16x16 kernel
    assert layout.place(130 * 100 + 17, (256, 100), 4) == ((0, 1, 0), (0 * 64 + 0 * 32 + 0 * 8 + 4, 0, 0))
    assert layout.place(130 * 100 + 17, (256, 100), 4) == layout.place_for("backward", "grad_a", 130 * 100 + 17,
                                                                            (256, 100), 4)
    assert layout.place_for("forward_v4", "c", 130 * 100 + 17, (256, 100), 4) == ((1, 8, 0), (1, 2, 0))
    assert layout.place_for("forward_v2", "c", 130 * cols + 17, (rows, cols), 4) == ((1, 8, 0), (1, 2, 0))


# -- the cuda stage --------------------------------------------------------------------------


@needs_nvcc
@pytest.mark.skipif(HAS_GPU, reason="the no-GPU verdict is for machines without a GPU")
def test_cuda_stage_compiles_for_both_dtypes_without_spills() -> None:
    rows = compile_only("matmul")
    assert [(r.check, r.verdict) for r in rows] == [("compile", NOT_RUN)]
    kernels = {k["kernel"]: k for k in rows[0].extras["kernels"]}
    v5 = {f"vectorised_matmul_kernel<float, {ak}, {bk}, {vec}>"
          for ak, bk, vec in (("true", "false", "true"), ("true", "true", "true"), ("false", "false", "true"),
                              ("true", "false", "false"))}
    v5 |= {f"vectorised_matmul_kernel<{t}, true, false, false>" for t in ("__half", "__nv_bfloat16")}
    assert {"naive_matmul_kernel<float>", "naive_matmul_kernel<double>", "tiled_matmul_kernel<float>",
            "tiled_matmul_kernel<double>", "blocked_matmul_kernel", "prefetched_matmul_kernel"} | v5 <= set(kernels)
    assert all(k["spill_stores"] == 0 and k["spill_loads"] == 0 for name, k in kernels.items() if name not in KNOWN_SPILLS)
    # Two 16x16 tiles: 2 KiB of shared memory for float, 4 KiB for double.
    assert kernels["tiled_matmul_kernel<float>"]["shared_bytes"] == 2048
    assert kernels["tiled_matmul_kernel<double>"]["shared_bytes"] == 4096
    # v3: A's 8 x (128 + 4) tile and B's 8 x 128 one, in floats.
    assert kernels["blocked_matmul_kernel"]["shared_bytes"] == (8 * 132 + 8 * 128) * 4
    assert kernels["naive_matmul_kernel<float>"]["shared_bytes"] == 0


def test_cuda_boundary_tile_that_is_not_zero_filled_fails(mutant, small_cpu_sizes: None) -> None:
    """The stale-tile bug of the numba test, in kernel.cu's 16x16 kernel (v2), which runs every float64
    size, and float32's in forward_v2: deterministic on a GPU and on the CPU, since each thread's slot keeps
    its own previous tile's value (K = 65 leaves 15 stale slots in the last tile)."""
    op = mutant("matmul", "cuda_no_zero_fill_v2")
    bad = failed(validate(op, "cuda"))
    assert ("cuda", "forward_v2", "float32") in bad and ("cuda", "forward", "float64") in bad
    assert ("cuda", "forward", "float32") not in bad  # float32's forward runs v5
    assert "size (33, 65, 17)" in bad[("cuda", "forward", "float64")].detail
    assert "size (33, 65, 17)" in bad[("cuda", "forward_v2", "float32")].detail


@pytest.mark.parametrize("bug, check", [("cuda_no_zero_fill_v5", "forward"), ("cuda_no_zero_fill_v4", "forward_v4"),
                                        ("cuda_no_zero_fill_v3", "forward_v3")])
def test_cuda_128_kernels_k_tail_that_is_not_zero_filled_fails(mutant, bug: str, check: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bug in the 128x128 kernels, which only float32 outputs of 128-multiple rows and
    columns run: v5 (forward's element loads, k-steps of 16), v4 (forward_v4's) and v3 (forward_v3's,
    k-steps of 8). At (128, 131, 256) the last k-step holds 3 k, and each thread's other slots keep its
    own values from the step before, so c picks up those products twice. float64 never runs any."""
    cpu_sizes_up_to(monkeypatch, 1 << 16)  # up to (128, 131, 256), named below; the two larger repeat it
    bad = failed(validate(mutant("matmul", bug), "cuda"))
    assert "size (128, 131, 256)" in bad[("cuda", check, "float32")].detail
    assert ("cuda", check, "float64") not in bad
    # The worst element is named with the version's own thread (1-D blocks of 256), not a 16x16 kernel's.
    w = bad[("cuda", check, "float32")].worst
    r, c = w.index
    assert w.shape[0] % 128 == 0 and w.shape[1] % 128 == 0
    if check == "forward":  # v5: warps 4 x 2 over 32 x 64, lanes 4 x 8
        thread = (r % 128 // 32) * 64 + (c % 128 // 64) * 32 + (r % 16 // 4) * 8 + c % 32 // 4
    else:
        thread = (r % 64 // 4) * 16 + c % 64 // 4
    assert w.block == (c // 128, r // 128, 0) and w.thread == (thread, 0, 0)


@gpu
def test_cuda_earlier_versions_match_torch() -> None:
    """forward_v1 (naive), forward_v2 (16x16 tiles), forward_v3 and _v4 are what `brrr bench` times beside forward;
    validate never calls them, so they are checked here, on the validated sizes and K = 0."""
    from brrr_kernels.cuda import builder

    op = load_op("matmul")
    ext = getattr(torch.ops, builder.build_extension(op).namespace)
    gen = torch.Generator().manual_seed(0)
    cuda = torch.device("cuda")
    for dtype in (torch.float32, torch.float64):
        cases = [op.spec.make_inputs(size, dtype, cuda, gen) for size in op.spec.gpu_sizes]
        cases.append(op.spec.edge_cases["K=0, empty sum"](dtype, cuda))
        for a, b in cases:
            want = a.double() @ b.double()
            for version in (ext.forward_v1, ext.forward_v2, ext.forward_v3, ext.forward_v4):
                torch.testing.assert_close(version(a, b).double(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bug, checks, dtypes, array", [
    ("cuda_no_barrier_after_loads", ("forward",), ("float64",), "_tile["),  # v2
    ("cuda_v3_no_barrier_after_loads", ("forward_v3",), ("float32",), "_tile["),
    # v4 and v5 (one k loop) store into the buffer they read
    ("cuda_one_buffer", ("forward", "forward_v4"), ("float32",), "_buf[")])
def test_cuda_missing_barrier_after_the_tile_loads_fails_forward(mutant, bug: str, checks: tuple[str, ...],
                                                                  dtypes: tuple[str, ...], array: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads read tile elements other threads have not stored yet (or overwrite ones they still
    read): the poison on the CPU."""
    # (128, 5, 128) and (128, 131, 256) run the 128x128 kernels, nine k-steps through v4's two buffers:
    # the race shows there; (256, 384, 128) and (257, 511, 129) would repeat it at four times the cost.
    cpu_sizes_up_to(monkeypatch, 1 << 16)
    bad = failed(validate(mutant("matmul", bug), "cuda"))
    for check in checks:
        for dtype in dtypes:
            detail = bad[("cuda", check, dtype)].detail
            if HAS_GPU:
                assert "c:" in detail, detail
            else:  # the CPU execution's checks name the race on a tile element
                assert "race on shared memory:" in detail and array in detail, detail
