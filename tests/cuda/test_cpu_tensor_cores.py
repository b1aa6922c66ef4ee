"""Tensor cores on the CPU (include/cpu/brrr_cpu_mma.h, mma.h; pipeline/cpu_ptx.py): mma.sync,
ldmatrix and nvcuda::wmma give C + A B of the rounded inputs to float32 accumulation error, lanes get
the elements the PTX ISA's fragment layouts say, and misuse is a fault naming the line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cpu_programs import build, line_in, run

from brrr_kernels.cuda.cpu_source import CpuSourceError, rewrite
from brrr_kernels.op.tolerances import tensor_core_bound

CASES = Path(__file__).with_name("tensor_core_cases.cu")
SOURCE = CASES.resolve()

# case: (M, N, K) of its product
PRODUCTS = {
    "mma_bf16_k16": (16, 8, 16), "mma_f16_k16": (16, 8, 16), "mma_bf16_k8": (16, 8, 8), "mma_f16_k8": (16, 8, 8),
    "mma_tf32_k8": (16, 8, 8), "mma_tf32_k4": (16, 8, 4), "ldmatrix_gemm": (16, 8, 16),
    "wmma_half_16x16x16": (16, 16, 16), "wmma_bf16_16x16x16": (16, 16, 16), "wmma_half_32x8x16": (32, 8, 16),
    "wmma_bf16_32x8x16": (32, 8, 16), "wmma_half_8x32x16": (8, 32, 16), "wmma_bf16_8x32x16": (8, 32, 16),
    "wmma_tf32_16x16x8": (16, 16, 8), "wmma_gemm": (32, 32, 64),
}


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(CASES, tmp_path_factory.mktemp("cpu-tensor-cores"))


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cases with the memory checks, as `brrr validate` builds kernel.cu."""
    return build(CASES, tmp_path_factory.mktemp("cpu-tensor-cores-checked"), checked=True)


def matrices(out: str, m: int, n: int, k: int) -> dict[str, np.ndarray]:
    rows = {line.split()[0]: np.array([float(v) for v in line.split()[1:]]) for line in out.splitlines()}
    shapes = {"A": (m, k), "B": (k, n), "C": (m, n), "D": (m, n), "X": (m, k)}
    return {name: values.reshape(shapes[name]) for name, values in rows.items()}


def excess(mats: dict[str, np.ndarray], k: int, extra_ulps: float = 0.0) -> float:
    """The largest |D - (C + A B)| in float64 over the bound; > 1 fails."""
    a, b, c, d = mats["A"], mats["B"], mats["C"], mats["D"]
    exact = c + a @ b
    magnitude = np.abs(c) + np.abs(a) @ np.abs(b)
    bound = tensor_core_bound(k) * magnitude + extra_ulps * np.abs(exact) + 1e-30
    return float(np.max(np.abs(d - exact) / bound))


def line_of(text: str) -> int:
    return line_in(CASES, text)


@pytest.mark.parametrize("case", sorted(PRODUCTS))
def test_products_equal_float64_of_the_rounded_inputs(program: Path, case: str) -> None:
    m, n, k = PRODUCTS[case]
    mats = matrices(run(program, case), m, n, k)
    assert excess(mats, k) <= 1.0
    # Not vacuous: the products are far from C alone.
    assert np.max(np.abs(mats["D"] - mats["C"])) > 1.0


def test_f16_accumulators_round_once_to_half(program: Path) -> None:
    mats = matrices(run(program, "mma_f16_acc"), 16, 8, 16)
    assert excess(mats, 16, extra_ulps=2.0**-11) <= 1.0


@pytest.mark.parametrize("case", ["mma_tf32_k8", "mma_tf32_k4"])
def test_tf32_inputs_are_rounded_to_10_bits_ties_away(program: Path, case: str) -> None:
    k = PRODUCTS[case][2]
    mats = matrices(run(program, case), 16, 8, k)
    x = mats["X"].astype(np.float32)
    bits = x.view(np.uint32)
    rounded = ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)
    assert np.array_equal(mats["A"].astype(np.float32), rounded)
    assert np.any(mats["A"] != mats["X"])  # the rounding did something


def ldmatrix_expected(lane: int, j: int, trans: bool) -> int:
    def m(r: int, c: int) -> int:  # the case's matrices: element (r, c) of matrix j is 256 j + 8 r + c
        return 256 * j + 8 * r + c
    g, t = lane // 4, lane % 4
    lo, hi = (m(2 * t, g), m(2 * t + 1, g)) if trans else (m(g, 2 * t), m(g, 2 * t + 1))
    return lo | hi << 16


@pytest.mark.parametrize("case, count, trans", [("ldmatrix_x1", 1, False), ("ldmatrix_x2_trans", 2, True),
                                                ("ldmatrix_x4", 4, False), ("ldmatrix_x4_trans", 4, True)])
def test_ldmatrix_gives_each_lane_the_ptx_isa_elements(program: Path, case: str, count: int, trans: bool) -> None:
    got = [int(v) for v in run(program, case).split()[1:]]
    for lane in range(32):
        for j in range(4):
            want = ldmatrix_expected(lane, j, trans) if j < count else 0
            assert got[lane * 4 + j] == want, (lane, j)


@pytest.mark.parametrize("case, count", [("stmatrix_x1", 1), ("stmatrix_x2_trans", 2), ("stmatrix_x4", 4),
                                         ("stmatrix_x4_trans", 4)])
def test_stmatrix_stores_what_ldmatrix_would_load(program: Path, case: str, count: int) -> None:
    """Each lane holds ldmatrix's elements of v = 256 j + 8 r + c (tensor_core_cases.cu writes these
    through LeetCUDA-style macros, qualifiers in its order); stmatrix puts every one back in its place."""
    got = [int(v) for v in run(program, case).split()[1:]]
    want = [256 * j + 8 * r + c if j < count else 0 for j in range(4) for r in range(8) for c in range(8)]
    assert got == want


def sm80_accumulator(lane: int, i: int) -> tuple[int, int]:
    """The m16n16k16 accumulator element observed on sm_80+: mma.m16n8k16's C layout, twice side by side."""
    g, t = lane // 4, lane % 4
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


@pytest.mark.parametrize("case, rows, cols", [("wmma_mapping_16x16x16", 16, 16), ("wmma_mapping_32x8x16", 32, 8),
                                              ("wmma_mapping_8x32x16", 8, 32)])
def test_wmma_accumulator_elements_map_one_to_one(program: Path, case: str, rows: int, cols: int) -> None:
    d = [int(float(v)) for v in run(program, case).split()[1:]]
    held = sorted((v // 100, v % 100) for v in d)
    assert held == sorted((lane, i) for lane in range(32) for i in range(8))  # every (lane, x[i]) exactly once
    for lane in range(32):
        for i in range(8):
            r, c = accumulator_on_h100(rows, cols, lane, i)
            assert d[r * cols + c] == 100 * lane + i


def test_wmma_m8n32k16_b_is_m32n8k16_a_transposed(program: Path) -> None:
    """As on an H100 (benchmarks/results/2026-11-25-h100-tensor-cores): lane l's b.x[i] of m8n32k16 holds
    B[k, n] where lane l's a.x[i] of m32n8k16 holds A[n, k]; each operand holds its own index."""
    b = [int(float(v)) for v in run(program, "wmma_b_mapping_8x32x16").split()[1:]]
    a = [int(float(v)) for v in run(program, "wmma_a_mapping_32x8x16").split()[1:]]
    assert len(a) == len(b) == 32 * 16
    for held_b, held_a in zip(b, a):
        k, n = divmod(held_b, 32)  # B is 16 x 32
        m, k_a = divmod(held_a, 16)  # A is 32 x 16
        assert (k, n) == (k_a, m)
    assert len(set(b)) == 16 * 32  # every element of B held by one lane, once


def accumulator_on_h100(rows: int, cols: int, lane: int, i: int) -> tuple[int, int]:
    """Where an H100 stores a lane's acc.x[i] (benchmarks/results/2026-11-25-h100-tensor-cores): m16n16 the
    PTX ISA's m16n8 layout twice side by side, m32n8 two of its m16 tiles stacked, m8n32 that transposed."""
    g, t = lane // 4, lane % 4
    if rows == cols:
        return sm80_accumulator(lane, i)
    stacked = (g + 8 * (i >> 1), 2 * t + (i & 1))
    return stacked if rows == 32 else stacked[::-1]


def test_planted_wrong_layout_fails_the_comparison(program: Path) -> None:
    """B stored row-major but loaded as a col_major fragment: the result is B's transpose's product."""
    mats = matrices(run(program, "wmma_wrong_layout"), 16, 16, 16)
    assert excess(mats, 16) > 1e3
    transposed = dict(mats, B=mats["B"].T)
    assert excess(transposed, 16) <= 1.0  # and exactly that: the layout, not the arithmetic


@pytest.mark.parametrize("case, marker, below, detail", [
    ("wmma_divergent", "if (threadIdx.x < 16) {", 1,
     "lane 0 waits at wmma::mma_sync with mask 0xffffffff for lane 16, which is at wmma::mma_sync at "),
    ("mma_after_return", "if (threadIdx.x >= 24) return;", 3,
     "wait at mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 with mask 0xffffffff for lane 24, which returned"),
    ("wmma_misaligned", "wmma::load_matrix_sync(fa, a + 8, 16);", 0, "must be 256-bit (32-byte) aligned"),
])
def test_planted_misuse_is_a_fault_naming_the_line(program: Path, case: str, marker: str, below: int,
                                                   detail: str) -> None:
    out = run(program, case)
    assert out.startswith(f"FAULT: {SOURCE}:{line_of(marker) + below}: "), out
    assert detail in out, out


@pytest.mark.parametrize("asm, named", [
    ('asm volatile("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0}, {%1}, {%2}, {%3};"\n'
     '    : "=f"(d) : "r"(a), "r"(b), "f"(c));',
     'inline PTX "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32'),
    ('asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f16 {%0}, {%1}, {%2}, {%3};"\n'
     '    : "=f"(d) : "r"(a), "r"(b), "f"(c));',
     "bf16.bf16.f16"),
    ('asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1}, [%2];" : "=r"(d), "=r"(d) : "r"(a));',
     "ldmatrix.sync.aligned.m8n8.x4"),
    ('asm volatile("cp.async.bulk.shared::cluster.global [%0], [%1], 16;" :: "r"(a), "l"(p));', "cp.async.bulk"),
    # wgmma with A from registers (brrr emulates both operands in shared memory), too few accumulators,
    # float16 accumulators
    ('asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, 1, '
     '1, 1, 0;" : "+f"(d), "+f"(d), "+f"(d), "+f"(d) : "r"(a), "r"(a), "r"(a), "r"(a), "l"(q));',
     "A from registers"),
    ('asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;" '
     ': "+f"(d), "+f"(d), "+f"(d), "+f"(d) : "l"(q), "l"(q));', "takes 8 destination registers"),
    ('asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16 {%0, %1}, %2, %3, 1, 1, 1, 0, 0;" '
     ': "+r"(a), "+r"(b) : "l"(q), "l"(q));', "wgmma.mma_async.sync.aligned.m64n8k16.f16"),
])
def test_tensor_core_ptx_brrr_does_not_emulate_is_an_error_naming_line_and_instruction(asm: str, named: str) -> None:
    source = ("__global__ void k(float* p) {\n    unsigned a = 0, b = 0; float c = 0, d = 0; unsigned long long q = 0;\n    "
              + asm + "\n}\n")
    with pytest.raises(CpuSourceError) as e:
        rewrite(source, Path("kernel.cu"))
    assert "kernel.cu:3: not supported on the CPU" in str(e.value) and named in str(e.value)


def test_wgmma_in_cutlass_predicated_block_becomes_one_call_on_its_line() -> None:
    """The `{ .reg .pred p; setp.ne.b32 p, %N, 0; wgmma ... p, ...; }` block Hopper kernels pass scale-d in:
    one call with the accumulators by address (written at the wait), scale-d from operand N, on the
    asm's own line; the fence, commit and wait beside it."""
    regs = ", ".join(f"%{i}" for i in range(4))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(4))
    source = ("__global__ void k(float* d, unsigned long long x, unsigned long long y, int s) {\n"
              '    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");\n'
              f'    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %6, 0;\\n"\n'
              f'    "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {{{regs}}}, %4, %5, p, 1, 1, 0, 1;\\n}}\\n"\n'
              f'                 : {outs} : "l"(x), "l"(y), "r"(s));\n'
              '    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");\n'
              '    asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(0) : "memory");\n'
              '    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");\n}\n')
    lines = rewrite(source, Path("kernel.cu")).splitlines()
    text = "\n".join(lines)
    assert "wgmma_fence(" in text and "wgmma_commit_group(" in text and "fence_proxy_async(" in text
    assert "wgmma_wait_group((0)," in text
    call = next(i for i, line in enumerate(lines) if "wgmma_mma_async<8," in line)
    assert "&(d[0])" in lines[call] and "&(d[3])" in lines[call] and "(s)" in lines[call], lines[call]
    assert ", 1, 1, 0, 1, __FILE__" in lines[call], lines[call]
    asm_line = next(i for i, line in enumerate(source.splitlines()) if "wgmma.mma_async" in line) - 1  # its asm(
    assert lines[1].startswith("#line 1") and call - 2 == asm_line, "on the asm statement's own line of kernel.cu"


@pytest.mark.parametrize("case", ["mma_bf16_k16", "mma_tf32_k8", "ldmatrix_gemm", "wmma_half_32x8x16", "wmma_gemm"])
def test_the_checked_build_reports_nothing_and_computes_the_same(program: Path, checked: Path, case: str) -> None:
    assert run(checked, case) == run(program, case)


def test_planted_ldmatrix_without_syncwarp_races_on_the_tile(checked: Path) -> None:
    out = run(checked, "ldmatrix_no_syncwarp")
    write, read = line_of("// writes another lane's row"), line_of("// no __syncwarp above")
    assert out.startswith(f"FAULT: {SOURCE}:{write}: race on shared memory"), out
    assert f"read at {SOURCE}:{read} with no __syncthreads or __syncwarp" in out, out


def test_cvt_packs_two_floats_rounded_to_nearest_even_first_on_top(program: Path) -> None:
    lines = dict(line.split(" ", 1) for line in run(program, "pack_pairs").splitlines())
    x = np.array([float(v) for v in lines["X"].split()], dtype=np.float32)
    got = [int(v) for v in lines["D"].split()]
    u = x.view(np.uint32).astype(np.uint64)
    bf16 = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint64)
    f16 = x.astype(np.float16).view(np.uint16).astype(np.uint64)
    for i in range(32):
        assert got[2 * i] == int(bf16[2 * i] << 16 | bf16[2 * i + 1])
        assert got[2 * i + 1] == int(f16[2 * i] << 16 | f16[2 * i + 1])


MBARRIER_FORMS = [
    ('asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(b));',
     "mbarrier_init(::brrr_cpu::ptx::shared_address((a)), (b),"),
    ('asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(a), "r"(b));',
     "(void)::brrr_cpu::ptx::mbarrier_arrive(::brrr_cpu::ptx::shared_address((a)), 1, (b),"),
    ('asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 %0, [%1], %2;" : "=l"(q) : "r"(a), "r"(b));',
     "(q) = ::brrr_cpu::ptx::mbarrier_arrive(::brrr_cpu::ptx::shared_address((a)), (b), 0,"),
    ('asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" :: "r"(a), "r"(b));', "mbarrier_expect_tx("),
    ('asm volatile("{\\n.reg .pred P1;\\nLAB_WAIT:\\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\\n'
     '@P1 bra DONE;\\nbra LAB_WAIT;\\nDONE:\\n}" :: "r"(a), "r"(b));',
     "mbarrier_wait_parity(::brrr_cpu::ptx::shared_address((a)), (b),"),
    ('asm volatile("{\\n.reg .pred p;\\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\\nselp.b32 %0, 1, 0, p;\\n}" '
     ': "=r"(a) : "r"(b), "r"(a));', "(a) = ::brrr_cpu::ptx::mbarrier_test_parity("),
    ('asm volatile("{\\n.reg .pred p;\\nmbarrier.try_wait.shared::cta.b64 p, [%1], %2;\\nselp.u32 %0, 1, 0, p;\\n}" '
     ': "=r"(a) : "r"(b), "l"(q));', "(a) = ::brrr_cpu::ptx::mbarrier_test_token("),
    ('asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"'
     ' :: "r"(a), "l"(q), "r"(a), "r"(b), "r"(b) : "memory");', "tensor_load<2>("),
    ('asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"'
     ' :: "r"(a), "l"(q), "r"(a), "r"(b), "r"(b), "r"(b));', "tensor_load<3>("),
    ('asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"'
     ' :: "r"(a), "l"(q), "r"(b), "r"(a) : "memory");', "bulk_load(::brrr_cpu::ptx::shared_address((a)), "),
    ('asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];" '
     ':: "l"(q), "r"(a), "r"(b), "r"(a));', "tensor_store<2>(::brrr_cpu::ptx::global_address((q)), brrr_c, "),
    ('asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(q), "r"(a), "r"(b));',
     "bulk_store(::brrr_cpu::ptx::global_address((q)), ::brrr_cpu::ptx::shared_address((a)), "),
    ('asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");', "no_op("),
    ('asm volatile("prefetch.tensormap [%0];" :: "l"(q) : "memory");', "no_op("),
    ('asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");', "no_op("),
    ('asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\\n" ::);', "no_op("),
    ('asm volatile("griddepcontrol.wait;" ::: "memory");', "no_op("),
    ('asm volatile("griddepcontrol.launch_dependents;");', "no_op("),
    ('asm("cvta.to.shared.u64 %0, %1;" : "=l"(q) : "l"(p));',
     "(q) = __cvta_generic_to_shared(reinterpret_cast<const void*>((p)))"),
    ('asm("cvta.shared.u64 %0, %1;" : "=l"(q) : "l"(q));', "(q) = reinterpret_cast<uintptr_t>(__cvta_shared_to_generic("),
]


@pytest.mark.parametrize("asm, call", MBARRIER_FORMS)
def test_mbarrier_and_tensor_copy_ptx_become_one_runtime_call_on_their_line(asm: str, call: str) -> None:
    """The forms Hopper kernels write mbarrier and TMA in (CUTLASS's wait loop, selp of a predicate, a
    state token or `_`), each one call of brrr_cpu_tma.h on the asm statement's own line."""
    source = ("__global__ void k(float* p) {\n    unsigned a = 0, b = 0; unsigned long long q = 0;\n    " + asm + "\n}\n")
    lines = rewrite(source, Path("kernel.cu")).splitlines()
    assert call in lines[4], lines[4]


@pytest.mark.parametrize("asm, named", [
    ('asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster'
     ' [%0], [%1, {%2, %3}], [%4], %5;" :: "r"(a), "l"(q), "r"(a), "r"(b), "r"(b), "h"(m));', "multicast"),
    ('asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2}], [%3];"'
     ' :: "r"(a), "l"(q), "r"(a), "r"(b));', "takes 2 coordinates"),
    ('asm volatile("mbarrier.arrive.noComplete.shared::cta.b64 _, [%0], %1;" :: "r"(a), "r"(b));', "mbarrier.arrive.noComplete"),
])
def test_tma_and_mbarrier_forms_brrr_does_not_emulate_are_errors_naming_the_line(asm: str, named: str) -> None:
    source = ("__global__ void k(float* p) {\n    unsigned a = 0, b = 0; unsigned long long q = 0; unsigned short m = 1;\n    "
              + asm + "\n}\n")
    with pytest.raises(CpuSourceError) as e:
        rewrite(source, Path("kernel.cu"))
    assert "kernel.cu:3: not supported on the CPU" in str(e.value) and named in str(e.value), str(e.value)
