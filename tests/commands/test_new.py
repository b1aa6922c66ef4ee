"""`brrr new`: a skeleton that validates at once, says what is unfinished, and never overwrites."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import HAS_GPU, HAS_NVCC, brrr

from brrr_kernels.op.loaders import load_op

SWISH_REFERENCE = '''
import torch


def forward(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(x)


def backward(grad_y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    s = torch.sigmoid(x)
    return grad_y * (s + x * s * (1 - s))
'''

SWISH_NUMBA = '''
import math

import torch

from brrr_kernels.sim.numba_env import cdiv, import_cuda, launch

cuda = import_cuda()
BLOCK = 128


@cuda.jit(device=True)
def sigmoid(v):
    if v >= 0:
        return 1.0 / (1.0 + math.exp(-v))
    e = math.exp(v)
    return e / (1.0 + e)


@cuda.jit
def swish_forward_kernel(x, y, n):
    i = cuda.grid(1)
    if i >= n:
        return
    y[i] = x[i] * sigmoid(x[i])


@cuda.jit
def swish_backward_kernel(grad_y, x, grad_x, n):
    i = cuda.grid(1)
    if i >= n:
        return
    s = sigmoid(x[i])
    grad_x[i] = grad_y[i] * (s + x[i] * s * (1.0 - s))


def forward(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    y = torch.empty_like(x)
    if x.numel():
        launch(swish_forward_kernel, cdiv(x.numel(), BLOCK), BLOCK, x.view(-1), y.view(-1), x.numel())
    return y


def backward(grad_y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    grad_y, x = grad_y.contiguous(), x.contiguous()
    grad_x = torch.empty_like(x)
    if x.numel():
        launch(swish_backward_kernel, cdiv(x.numel(), BLOCK), BLOCK, grad_y.view(-1), x.view(-1), grad_x.view(-1), x.numel())
    return grad_x
'''

SWISH_KERNEL = '''
#include "brrr_kernel.cuh"

template <typename T>
__device__ T stable_sigmoid(T v) {
    if (v >= 0) return T(1) / (T(1) + exp(-v));
    const T e = exp(v);
    return e / (T(1) + e);
}

template <typename T>
__global__ void swish_forward_kernel(const T* x, T* y, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * stable_sigmoid(x[i]);
}

template <typename T>
__global__ void swish_backward_kernel(const T* g, const T* x, T* gx, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) {
        const T s = stable_sigmoid(x[i]);
        gx[i] = g[i] * (s + x[i] * s * (T(1) - s));
    }
}

template <typename T>
void swish_forward(const T* x, T* y, int64_t n, cudaStream_t stream) {
    swish_forward_kernel<T><<<brrr::blocks_for(n, 256), 256, 0, stream>>>(x, y, n);
}

template <typename T>
void swish_backward(const T* g, const T* x, T* gx, int64_t n, cudaStream_t stream) {
    swish_backward_kernel<T><<<brrr::blocks_for(n, 256), 256, 0, stream>>>(g, x, gx, n);
}

template void swish_forward(const float*, float*, int64_t, cudaStream_t);
template void swish_forward(const double*, double*, int64_t, cudaStream_t);
template void swish_backward(const float*, const float*, float*, int64_t, cudaStream_t);
template void swish_backward(const double*, const double*, double*, int64_t, cudaStream_t);
'''

SWISH_BINDING = '''
#include "brrr.cuh"

template <typename T> void swish_forward(const T* x, T* y, int64_t n, cudaStream_t stream);
template <typename T> void swish_backward(const T* g, const T* x, T* gx, int64_t n, cudaStream_t stream);

at::Tensor forward(at::Tensor x) {
    brrr::check_input(x, "x");
    auto xc = x.contiguous();
    auto y = at::empty_like(xc);
    if (xc.numel() == 0) return y;
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "swish_forward", [&] {
        swish_forward(brrr::data<scalar_t>(xc), brrr::data<scalar_t>(y), xc.numel(), brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return y;
}

at::Tensor backward(at::Tensor grad_y, at::Tensor x) {
    brrr::check_input(grad_y, "grad_y");
    brrr::check_same(grad_y, x, "grad_y", "x");
    auto gc = grad_y.contiguous();
    auto xc = x.contiguous();
    auto gx = at::empty_like(xc);
    if (xc.numel() == 0) return gx;
    AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "swish_backward", [&] {
        swish_backward(brrr::data<scalar_t>(gc), brrr::data<scalar_t>(xc), brrr::data<scalar_t>(gx), xc.numel(),
                       brrr::stream());
    });
    BRRR_CHECK_LAUNCH();
    return gx;
}

BRRR_BIND(m) {
    m.def("forward", &forward);
    m.def("backward", &backward);
}
'''


def test_new_then_validate_reports_unfinished_stages_by_file_and_function(tmp_path: Path) -> None:
    made = brrr("new", "swish", "--inputs", "x", "--dir", str(tmp_path))
    assert made.returncode == 0, made.stderr
    proc = brrr("validate", str(tmp_path / "swish"), cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    out = proc.stdout
    assert "swish/reference.py:7 in forward" in out and "write forward(x) in reference.py" in out
    numba = (tmp_path / "swish" / "numba_kernel.py").read_text().splitlines()
    raised = next(n for n, line in enumerate(numba, 1) if "raise NotImplementedError" in line)  # forward's, the first
    assert f"numba_kernel.py:{raised} in forward" in out and "write forward(x) in numba_kernel.py" in out
    assert "write the kernels in swish/kernel.cu and forward() and backward() in swish/binding.cpp" in out
    assert [ln.split()[1] for ln in out.splitlines() if " FAIL " in ln] == ["unfinished"] * 3


def test_new_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "swish").mkdir()
    (tmp_path / "swish" / "mine.txt").write_text("keep")
    proc = brrr("new", "swish", "--dir", str(tmp_path))
    assert proc.returncode == 1 and "never overwrites" in proc.stderr
    assert [p.name for p in (tmp_path / "swish").iterdir()] == ["mine.txt"]


def test_new_rejects_a_bad_name(tmp_path: Path) -> None:
    proc = brrr("new", "my-op", "--dir", str(tmp_path))
    assert proc.returncode == 2 and "not a Python identifier" in proc.stderr
    assert not any(tmp_path.iterdir())


def test_new_with_two_inputs_loads(tmp_path: Path) -> None:
    assert brrr("new", "fma2", "--inputs", "a,b", "--dir", str(tmp_path)).returncode == 0
    proc = brrr("validate", str(tmp_path / "fma2"), "--stage", "reference")
    assert proc.returncode == 1 and "write forward(a, b) in reference.py" in proc.stdout


def test_written_stages_pass(tmp_path: Path) -> None:
    assert brrr("new", "swish", "--dir", str(tmp_path)).returncode == 0
    folder = tmp_path / "swish"
    (folder / "reference.py").write_text(SWISH_REFERENCE)
    (folder / "numba_kernel.py").write_text(SWISH_NUMBA)
    (folder / "kernel.cu").write_text(SWISH_KERNEL)
    (folder / "binding.cpp").write_text(SWISH_BINDING)
    spec = folder / "spec.py"
    spec.write_text(spec.read_text().replace("oracle=None,", "oracle=torch.nn.functional.silu,"))
    stages = ["--stage", "reference", "--stage", "numba"] + (["--stage", "cuda"] if HAS_NVCC else [])
    proc = brrr("validate", str(folder), *stages)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 failed" in proc.stdout and "forward vs oracle" in proc.stdout


@pytest.mark.parametrize("inputs", ["", "x,x", "y"])
def test_bad_inputs_are_refused(tmp_path: Path, inputs: str) -> None:
    proc = brrr("new", "op", "--inputs", inputs, "--dir", str(tmp_path))
    assert proc.returncode == 2 and not (tmp_path / "op").exists()


# rmsnorm written into the rowwise template: each "brrr: fill in: WHAT" line, by WHAT, per file.
RMSNORM_NUMBA = {
    "what the op sums over the row": "total += v * v",
    "the row's statistic from the sum, cols and eps": "r = 1.0 / math.sqrt(block_sum(total, partial, t) / cols + eps)",
    "the output element": "y[row, c] = float(x[row, c]) * r * float(weight[c])",
    "what backward sums over the row": "total += g * float(x[row, c]) * r",
    "the gradient element": "grad_x[row, c] = r * (g - float(x[row, c]) * r * row_sum / cols)",
    "one row's term": "total += float(grad_y[row, c]) * float(x[row, c]) * rstd[row]",
}
RMSNORM_CUDA = {
    "what the op sums over the row": "total += v * v;",
    "the row's statistic from the sum, cols and eps": "const double r = 1.0 / sqrt(block_sum(total, partial) / cols + eps);",
    "the output element": "yr[c] = static_cast<T>(v * r * static_cast<double>(weight[c]));",
    "what backward sums over the row": "total += g * static_cast<double>(xr[c]) * r;",
    "the gradient element": "grad_x[row * cols + c] = static_cast<T>(r * (g - static_cast<double>(xr[c]) * r * row_sum / cols));",
    "one row's term": "total += static_cast<double>(grad_y[i]) * static_cast<double>(x[i]) * rstd[row];",
}
RMSNORM_REFERENCE = '''
import torch


def forward(x: torch.Tensor, weight: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    rstd = torch.rsqrt(x.double().square().mean(dim=-1) + eps)
    return (x.double() * rstd[:, None] * weight.double()).to(x.dtype), rstd


def backward(grad_y: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, rstd: torch.Tensor,
             eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    g, xhat = grad_y.double(), x.double() * rstd[:, None]
    gw = g * weight.double()
    grad_x = rstd[:, None] * (gw - xhat * (gw * xhat).mean(dim=-1, keepdim=True))
    return grad_x.to(x.dtype), (g * xhat).sum(dim=0).to(weight.dtype)
'''


def fill_in(path: Path, lines: dict[str, str]) -> None:
    """Replace each "brrr: fill in: WHAT" line of a template by lines[WHAT], keeping its indentation."""
    out = []
    for line in path.read_text().splitlines():
        marker = re.search(r"(?://|#) brrr: fill in: (.+)$", line)
        if marker:
            indent = line[: len(line) - len(line.lstrip())]
            line = indent + lines.pop(marker.group(1))
        out.append(line)
    assert not lines, f"template lines not found in {path.name}: {list(lines)}"
    path.write_text("\n".join(out) + "\n")


def test_rowwise_template_is_unfinished_then_validates_as_rmsnorm(tmp_path: Path) -> None:
    assert brrr("new", "rn", "--kind", "rowwise", "--dir", str(tmp_path)).returncode == 0
    folder = tmp_path / "rn"
    unfinished = brrr("validate", str(folder), cwd=tmp_path)
    assert unfinished.returncode == 1, unfinished.stdout + unfinished.stderr
    assert [ln.split()[1] for ln in unfinished.stdout.splitlines() if " FAIL " in ln] == ["unfinished"] * 3
    assert "write forward(x, weight, eps) in reference.py" in unfinished.stdout
    spec = load_op(str(folder)).spec  # the default rowwise shape: a weight, and rstd saved for backward
    assert spec.stats == ("rstd",) and spec.inputs == ("x", "weight")

    (folder / "reference.py").write_text(RMSNORM_REFERENCE)
    fill_in(folder / "numba_kernel.py", dict(RMSNORM_NUMBA))
    numba = folder / "numba_kernel.py"
    numba.write_text(re.sub(r'    raise NotImplementedError\("fill in.*?"\)\n', "", numba.read_text(), flags=re.S))
    fill_in(folder / "kernel.cu", dict(RMSNORM_CUDA))
    kernel = folder / "kernel.cu"
    kernel.write_text(re.sub(r"// brrr: unfinished.*\n", "", kernel.read_text()))
    spec = folder / "spec.py"
    spec.write_text(spec.read_text().replace(
        "oracle=None,", "oracle=lambda x, w, eps: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps),"))

    stages = ["--stage", "reference", "--stage", "numba"] + (["--stage", "cuda"] if HAS_NVCC else [])
    proc = brrr("validate", str(folder), *stages, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 failed" in proc.stdout and "forward vs oracle" in proc.stdout and "edge forward" in proc.stdout
    assert "(zero rows)" in proc.stdout or "(large values)" in proc.stdout
    if HAS_NVCC and not HAS_GPU:
        assert re.search(r"^cuda@cpu +gradcheck ", proc.stdout, re.M), proc.stdout  # no GPU: executed on the CPU


# block_sum with a warp shuffle, one shared slot a warp and barriers, in place of the template's tree.
SHUFFLE_BLOCK_SUM = """__device__ double block_sum(double value, double* partial) {
    for (int offset = 16; offset > 0; offset /= 2) value += __shfl_xor_sync(0xffffffffu, value, offset);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
    __syncthreads();
    double result = 0.0;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) result += partial[w];
    __syncthreads();  // nobody may overwrite `partial` before every thread has read it
    return result;
}
"""


@pytest.mark.skipif(HAS_GPU, reason="runs the cuda stage executed on the CPU, as on a machine without a GPU")
def test_a_user_op_with_shared_memory_barriers_and_a_warp_shuffle_validates_on_the_cpu(tmp_path: Path) -> None:
    assert brrr("new", "rn", "--kind", "rowwise", "--dir", str(tmp_path)).returncode == 0
    folder = tmp_path / "rn"
    (folder / "reference.py").write_text(RMSNORM_REFERENCE)
    fill_in(folder / "numba_kernel.py", dict(RMSNORM_NUMBA))
    numba = folder / "numba_kernel.py"
    numba.write_text(re.sub(r'    raise NotImplementedError\("fill in.*?"\)\n', "", numba.read_text(), flags=re.S))
    fill_in(folder / "kernel.cu", dict(RMSNORM_CUDA))
    kernel = folder / "kernel.cu"
    text = re.sub(r"// brrr: unfinished.*\n", "", kernel.read_text())
    text, swapped = re.subn(r"__device__ double block_sum\(.*?\n}\n", SHUFFLE_BLOCK_SUM, text, count=1, flags=re.S)
    assert swapped == 1
    kernel.write_text(text)
    proc = brrr("validate", str(folder), "--stage", "cuda", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("cuda")]
    assert rows and all(ln.startswith("cuda@cpu ") and " pass " in ln for ln in rows), proc.stdout
    for check in ("forward ", "backward ", "forward vs numba", "edge forward", "gradcheck"):
        assert f"cuda@cpu  {check}" in proc.stdout, proc.stdout


def test_rowwise_refuses_other_inputs(tmp_path: Path) -> None:
    proc = brrr("new", "rn", "--kind", "rowwise", "--inputs", "a,b,c", "--dir", str(tmp_path))
    assert proc.returncode == 2 and "--kind rowwise takes x [rows, cols], and weight [cols]" in proc.stderr
