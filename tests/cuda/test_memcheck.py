"""Memory checks of the CPU execution (pipeline/memcheck.py, include/cpu/brrr_cpu_memcheck.cpp):
planted out-of-bounds accesses and missing barriers are reported as facts, with kernel.cu's
lines, the block and the threads; the built-in ops report nothing. No GPU needed."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from conftest import REPO, copy_op, plant

from brrr_kernels.cuda import builder, cpu_build, memcheck
from brrr_kernels.cuda.cpu_source import rewrite
from brrr_kernels.op.contract import call_forward, forward_backward, visible
from brrr_kernels.op.loaders import load_op

CASES = (REPO / "tests" / "cuda" / "memcheck_cases.cu").resolve()


def line_of(path: Path, text: str, after: str = "") -> int:
    """The 1-based line of kernel.cu holding `text` (the first after the line holding `after`)."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i for i, line in enumerate(lines) if i >= start and text in line) + 1


def checked(folder: Path) -> cpu_build.Extension:
    return cpu_build.build_cpu_extension(load_op(str(folder)), cpu_build.CHECKED)


def fault_of(call: Callable[[], object]) -> str:
    with pytest.raises(RuntimeError) as info:
        call()
    return str(info.value).splitlines()[0]


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """memcheck_cases.cu rewritten for the CPU, instrumented, linked with the runtime and the checks."""
    runtime = builder.compile_job(cpu_build.runtime_job())
    checks = builder.compile_job(memcheck.memcheck_job())
    folder = tmp_path_factory.mktemp("memcheck")
    source = folder / "cases.cpp"
    source.write_text(rewrite(CASES.read_text(), CASES))
    exe = folder / "cases"
    subprocess.run([builder.find_cxx(), "-std=c++20", "-O1", "-ffp-contract=off", f"-I{cpu_build.CPU_INCLUDE}",
                    *memcheck.CHECK_FLAGS, str(source), str(runtime.path), str(checks.path), "-o", str(exe),
                    "-lpthread", "-ldl"], check=True)
    return exe


def run_case(program: Path, case: str) -> str:
    return subprocess.run([str(program), case], capture_output=True, text=True, check=True, timeout=60).stdout.strip()


def cases_line(text: str) -> int:
    return next(i for i, line in enumerate(CASES.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize(("case", "expected"), [
    ("shared_atomics", "96 96 0 0"),      # atomics on one shared element: no race
    ("warp_synced", "10 0 30 20"),       # lanes of a warp ordered by __syncwarp: no race
])
def test_no_race_where_the_threads_are_ordered(program: Path, case: str, expected: str) -> None:
    assert run_case(program, case) == expected


def test_lanes_of_one_warp_race_without_syncwarp(program: Path) -> None:
    out = run_case(program, "warp_unsynced")
    read, write = cases_line("out[threadIdx.x] = slot[threadIdx.x ^ 1];"), cases_line("slot[threadIdx.x] = static_cast")
    assert out.startswith(f"FAULT: {CASES}:{write}: race on shared memory in warp_exchange<false>, block (0, 0, 0), "
                          f"thread (1, 0, 0): writes slot[1], which thread (0, 0, 0) read at {CASES}:{read} "
                          "with no __syncthreads or __syncwarp between the two"), out


def test_a_syncwarp_does_not_order_two_warps(program: Path) -> None:
    out = run_case(program, "across_warps")
    assert "race on shared memory in across_warps" in out, out
    assert out.endswith("with no __syncthreads between the two"), out  # two warps: no __syncwarp could do


def test_a_barrier_in_a_branch_is_named_divergence_beside_its_race(program: Path) -> None:
    """The second warp skips the first warp's __syncthreads and races on its writes; the race is held
    until the phase's barrier would complete, which it never can: divergence, the race named after it."""
    sync = cases_line("if (!kBranch || threadIdx.x < 32) __syncthreads();")
    out = run_case(program, "barrier_in_branch")
    assert out.startswith(f"FAULT: {CASES}:{sync}: barrier divergence in barrier_in_branch<true>, block (0, 0, 0)"), out
    assert "returned without reaching it" in out, out
    full = subprocess.run([str(program), "barrier_in_branch"], capture_output=True, text=True, timeout=60).stdout
    assert "the race it leaves unordered: " in full and "race on shared memory" in full, full
    assert run_case(program, "barrier_for_all") == "63 62 61 60"  # the same code, every thread at the barrier


def test_shared_overrun_names_the_array(program: Path) -> None:
    out = run_case(program, "shared_overrun")
    line = cases_line("buf[threadIdx.x + 1] = 1;")
    assert out.startswith(f"FAULT: {CASES}:{line}: out-of-bounds write in shared_overrun, block (0, 0, 0), "
                          "thread (31, 0, 0): 4 bytes at buf[32], 1 element past the last element of "
                          "__shared__ buf (32 elements)"), out


def test_out_of_bounds_write_names_the_tensor_and_how_far(tmp_path: Path) -> None:
    # the thread of the last, partial pack writes each element one further on: y[n] at the end
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu",
                   "for (int64_t i = base; i < n; ++i) y[i] = stable_sigmoid(x[i]);",
                   "for (int64_t i = base; i < n; ++i) y[i + 1] = stable_sigmoid(x[i]);")
    ext = checked(folder)
    line = line_of(folder / "kernel.cu", "y[i + 1] = stable_sigmoid(x[i])")
    message = fault_of(lambda: ext.forward(torch.randn(1001)))
    assert message.endswith(
        f"kernel.cu:{line}: out-of-bounds write in sigmoid_forward_kernel<float, 4>, block (0, 0, 0), "
        "thread (250, 0, 0): 4 bytes at y[1001], 1 element past the last element of y (1001 elements)"), message
    # float64 packs of 2: the last pack's thread is in the second block
    message = fault_of(lambda: ext.forward(torch.randn(1001, dtype=torch.float64)))
    assert message.endswith(
        f"kernel.cu:{line}: out-of-bounds write in sigmoid_forward_kernel<double, 2>, block (1, 0, 0), "
        "thread (244, 0, 0): 8 bytes at y[1001], 1 element past the last element of y (1001 elements)"), message


def test_out_of_bounds_read_before_the_start(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu",
                   "for (int64_t i = base; i < n; ++i) y[i] = stable_sigmoid(x[i]);",
                   "for (int64_t i = base; i < n; ++i) y[i] = stable_sigmoid(x[i - 1003]);")
    ext = checked(folder)
    line = line_of(folder / "kernel.cu", "x[i - 1003]")
    message = fault_of(lambda: ext.forward(torch.randn(1001)))
    assert f"kernel.cu:{line}: out-of-bounds read in sigmoid_forward_kernel<float, 4>" in message, message
    assert "4 bytes 3 elements before the start of x (1001 elements)" in message, message


def with_struct_argument(folder: Path) -> Path:
    """sigmoid's forward kernel taking its pointers and size in one struct passed by value."""
    plant(folder, "kernel.cu", "__global__ void sigmoid_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n) {",
          "__global__ void sigmoid_forward_kernel(Io<T> io) {\n    const T* x = io.x;\n    T* y = io.y;\n"
          "    const int64_t n = io.n;")
    plant(folder, "kernel.cu", "template <typename T, int W>\n__global__ void sigmoid_forward_kernel",
          "template <typename T>\nstruct Io {\n    const T* x;\n    T* y;\n    int64_t n;\n};\n\n"
          "template <typename T, int W>\n__global__ void sigmoid_forward_kernel")
    path = folder / "kernel.cu"
    path.write_text(path.read_text().replace("0, stream>>>(x, y, n);", "0, stream>>>(Io<T>{x, y, n});"))
    return folder


@pytest.mark.parametrize("planted", [False, True], ids=["in bounds", "one past the end"])
def test_pointers_inside_a_struct_argument_are_bounded_by_their_tensors(tmp_path: Path, planted: bool) -> None:
    folder = with_struct_argument(copy_op("sigmoid", tmp_path))
    if planted:
        plant(folder, "kernel.cu", "for (int64_t i = base; i < n; ++i) y[i] = stable_sigmoid(x[i]);",
              "for (int64_t i = base; i < n; ++i) y[i + 1] = stable_sigmoid(x[i]);")
    ext = checked(folder)
    x = torch.randn(1001)
    if not planted:
        torch.testing.assert_close(ext.forward(x), torch.sigmoid(x))
        return
    line = line_of(folder / "kernel.cu", "y[i + 1] = stable_sigmoid(x[i])")
    message = fault_of(lambda: ext.forward(x))
    assert message.endswith(f"kernel.cu:{line}: out-of-bounds write in sigmoid_forward_kernel<float, 4>, "
                            "block (0, 0, 0), thread (250, 0, 0): 4 bytes at io@8[4004], 1 byte past the last "
                            "byte of io@8 (4004 bytes)"), message


def test_a_loop_one_past_a_local_pack_faults_at_its_line(tmp_path: Path) -> None:
    """`k < W -> k <= W` over a local Pack<T, W> reads and writes v[W]: the fiber's own stack, which
    the address checks let pass, so only the bounds check (-fsanitize=bounds) names it."""
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu",
                   "for (int k = 0; k < W; ++k) p.v[k] = stable_sigmoid(p.v[k]);",
                   "for (int k = 0; k <= W; ++k) p.v[k] = stable_sigmoid(p.v[k]);")
    ext = checked(folder)
    line = line_of(folder / "kernel.cu", "for (int k = 0; k <= W; ++k) p.v[k]")
    message = fault_of(lambda: ext.forward(torch.randn(1001)))
    assert f"kernel.cu:{line}: out-of-bounds index in sigmoid_forward_kernel<float, 4>, block (0, 0, 0), " in message, message
    assert ": index 4 into a local float [4] " in message, message


@dataclass(frozen=True)
class MissingBarrier:
    """A built-in op with one __syncthreads taken out, the call that reaches it, and what the
    report must say: the line that writes the shared element and the line that reads it."""

    op: str
    barrier: str  # the text replaced, a __syncthreads and enough around it to be unique
    without: str
    writes: str   # a kernel.cu line that writes the shared element
    reads: str    # and the one that reads it
    element: str  # the shared variable
    call: Callable[[cpu_build.Extension], object]
    kernel: str = ""  # where several kernels hold those lines: the one the launcher runs


def _backward(ext: cpu_build.Extension, op: str, *inputs: torch.Tensor) -> object:
    spec = load_op(op).spec
    upstream = tuple(torch.randn_like(r) for r in visible(spec, call_forward(spec, ext, inputs)))
    return forward_backward(spec, ext, inputs, upstream)


MISSING_BARRIERS = [
    # The backward the launcher runs (v5, staged by cp.async) only: its row group 0 adds up the other
    # groups' sums, which thread (0, 1, 0) has not even zeroed yet when the fibers run in order.
    MissingBarrier("bias_gelu", "(staged));\n        } else {\n            backward_tile_scalar<T>(grad_y, x, bias, grad_x, "
                   "cols, t, sums[threadIdx.y]);\n        }\n    }\n    __syncthreads();\n",
                   "(staged));\n        } else {\n            backward_tile_scalar<T>(grad_y, x, bias, grad_x, "
                   "cols, t, sums[threadIdx.y]);\n        }\n    }\n",
                   "sums[threadIdx.y][c][threadIdx.x] = 0.0;", "total += sums[r][j * kVec<T> + k]",
                   "sums", lambda ext: _backward(ext, "bias_gelu", torch.randn(9, 17), torch.randn(17)),
                   kernel="bias_gelu_backward_v5_kernel("),
    MissingBarrier("layernorm", "    __syncthreads();\n    if (threadIdx.y == 0 && c < cols) {",
                   "    if (threadIdx.y == 0 && c < cols) {",
                   "partial_w[threadIdx.y][threadIdx.x] = gw;", "gw += partial_w[k][threadIdx.x];", "partial_w",
                   lambda ext: _backward(ext, "layernorm", torch.randn(5, 70), torch.randn(70), torch.randn(70))),
    MissingBarrier("matmul", "__syncthreads();  // tiles loaded: every thread reads elements others wrote\n#pragma unroll\n"
                   "            for (int kk = 0; kk < kTile; ++kk) {",
                   "\n#pragma unroll\n            for (int kk = 0; kk < kTile; ++kk) {",
                   "a_tile[ty][tx] = a[row * a_rs + ka * a_cs];",
                   "acc += brrr::to_acc(a_tile[ty][kk]) * brrr::to_acc(b_tile[kk][tx]);", "a_tile",
                   lambda ext: ext.forward(torch.randn(6, 5).double(), torch.randn(5, 7).double())),  # v2: float64
    MissingBarrier("softmax", "    __syncthreads();\n    A r = part[first];\n    for (int w = 1; w < tpr / 32; ++w) r = max(",
                   "    A r = part[first];\n    for (int w = 1; w < tpr / 32; ++w) r = max(",
                   "if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = v;", "A r = part[first];", "part_max",
                   lambda ext: ext.forward(torch.randn(2, 1100))),  # rows over 1024: several warps a row
]


@pytest.mark.parametrize("case", MISSING_BARRIERS, ids=lambda c: c.op)
def test_missing_barrier_is_a_race_with_both_lines(tmp_path: Path, case: MissingBarrier) -> None:
    folder = plant(copy_op(case.op, tmp_path), "kernel.cu", case.barrier, case.without)
    ext = checked(folder)
    kernel = folder / "kernel.cu"
    writes, reads = line_of(kernel, case.writes, case.kernel), line_of(kernel, case.reads, case.kernel)
    message = fault_of(lambda: case.call(ext))
    # reported at the second access, naming the first: one writes, the other reads, both lines
    head, _, rest = message.partition(": race on shared memory in ")
    assert rest, message
    at = int(head.rsplit(":", 1)[1])
    assert head.endswith(f"kernel.cu:{at}") and at in (writes, reads), message
    other = reads if at == writes else writes
    assert f"kernel.cu:{other} with no __syncthreads" in message, message
    assert f" {case.element}[" in message and "which thread (" in message, message


@pytest.mark.parametrize("op", ["sigmoid", "mul", "square", "bias_gelu", "softmax", "layernorm", "matmul"])
def test_builtin_ops_report_nothing(op: str) -> None:
    """Zero false positives: every op's checked build runs forward and backward on its simulator
    sizes, in both dtypes, and gives the plain CPU build's results bit for bit."""
    spec = load_op(op).spec
    ext = cpu_build.build_cpu_extension(load_op(op), cpu_build.CHECKED)
    plain = cpu_build.build_cpu_extension(load_op(op))
    for dtype in (torch.float32, torch.float64):
        for size in spec.sim_sizes:
            inputs = spec.make_inputs(size, dtype, torch.device("cpu"), torch.Generator().manual_seed(1))
            upstream = tuple(torch.randn_like(r) for r in visible(spec, call_forward(spec, plain, inputs)))
            got, want = forward_backward(spec, ext, inputs, upstream), forward_backward(spec, plain, inputs, upstream)
            for g, w in zip([*got[0], *got[1]], [*want[0], *want[1]]):
                assert g is None and w is None or torch.equal(g, w)


def test_a_write_into_a_0_element_output_names_that_tensor(tmp_path: Path) -> None:
    # a 0-element tensor's data_ptr() is null: the write through it is named after it, not measured
    # from whichever tensor lies nearest in memory
    folder = plant(copy_op("sigmoid", tmp_path), "binding.cpp", "if (xc.numel() == 0) return y;", "")
    plant(folder, "kernel.cu", "void sigmoid_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {",
          "void sigmoid_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {\n"
          "    if (n == 0) { sigmoid_forward_kernel<T, 1><<<1, 32, 0, stream>>>(x, y, 1); return; }")
    plant(folder, "kernel.cu", "T* __restrict__ y, int64_t n) {\n",
          "T* __restrict__ y, int64_t n) {\n    if (x == nullptr) y[0] = T(0);\n")
    message = fault_of(lambda: checked(folder).forward(torch.randn(0)))
    assert "out-of-bounds write" in message, message
    assert "at element 0 of x or y (0 elements: a 0-element tensor's data_ptr() is null)" in message, message
