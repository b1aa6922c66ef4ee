"""Ops brought with their own kernels (tests/cuda/byok_ops): forward-only, int64 targets, and the
spec naming a torch extension's functions, on the reference stage and through torch.library."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

import brrr_kernels
from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.op.loaders import load_op, load_reference
from brrr_kernels.validation.torch_library import define
from brrr_kernels.verdict.report import FAIL, PASS

OPS = Path(__file__).resolve().parent.parent / "cuda" / "byok_ops"


def test_a_forward_only_op_shows_its_backward_rows_as_not_applicable_with_the_reason() -> None:
    report = brrr_kernels.validate(str(OPS / "quantize"), stages=["reference"], seed=1)
    assert not report.failed
    na = [r for r in report.rows if r.verdict == "n/a"]
    assert {r.check for r in na} == {"gradcheck", "backward vs oracle"}
    assert all("rounding has a zero gradient" in r.detail for r in na)
    assert report.row("reference", "opcheck", "float64").verdict == "pass"


def test_int64_targets_go_through_gradcheck_opcheck_and_compile() -> None:
    report = brrr_kernels.validate(str(OPS / "xent"), stages=["reference"], seed=2)
    assert not report.failed, report
    for check in ("gradcheck", "opcheck", "compile fullgraph"):
        assert report.row("reference", check, "float64").verdict == "pass"


def test_registered_op_with_int64_targets_takes_gradients_of_the_logits_only() -> None:
    op = load_op(str(OPS / "xent"))
    ref = load_reference(op)
    fn = define(op, "brrr_test_byok_xent", {"CPU": (ref.forward, ref.backward)}, ref)
    logits = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 6, (4,))
    fn(logits, targets).sum().backward()
    want = torch.softmax(logits.detach(), 1) - torch.nn.functional.one_hot(targets, 6)
    torch.testing.assert_close(logits.grad, want)


def _copy(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(OPS / name, folder)
    return folder


def test_a_cu_with_its_own_wrapper_and_no_torch_module_in_the_spec_says_what_to_add(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "xent")
    spec = folder / "spec.py"
    spec.write_text(spec.read_text().replace('    torch_module=TorchModule(forward="forward", backward="backward"),\n', ""))
    with pytest.raises(OpLoadError) as e:
        load_op(str(folder))
    assert "xent.cu:3: this file holds its own torch wrapper" in e.value.message
    assert "torch_module=TorchModule" in (e.value.hint or "") and "forward, backward" in (e.value.hint or "")


def test_a_torch_module_without_backward_needs_forward_only(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "quantize")
    spec = folder / "spec.py"
    spec.write_text("\n".join(ln for ln in spec.read_text().splitlines() if "forward_only=" not in ln))
    with pytest.raises(OpLoadError, match=r"spec.py:\d+: SPEC.torch_module names no backward"):
        load_op(str(folder))


def test_no_grad_must_name_inputs(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "xent")
    spec = folder / "spec.py"
    spec.write_text(spec.read_text().replace('    saved=(', '    no_grad=("target",),\n    saved=('))
    with pytest.raises(OpLoadError, match=r"spec.py:\d+: SPEC.no_grad names \['target'\], which are not inputs"):
        load_op(str(folder))


def test_a_torch_library_project_runs_on_the_cpu_as_written() -> None:
    """PyTorch's custom-op tutorial layout: wrappers in a namespace registered with TORCH_LIBRARY_IMPL
    for CUDA, device-type assertions, CUDAContext.h, and a schema .cpp with a Python.h module stub."""
    from brrr_kernels.cuda.module_build import build_cpu_module

    built = build_cpu_module(load_op(str(OPS / "registered")))
    a, b = torch.randn(3, 70), torch.randn(3, 70)
    torch.testing.assert_close(built.forward(a, b, 0.25), a * b + 0.25)
    grads = built.backward(torch.ones(3, 70), a, b, 0.25)
    torch.testing.assert_close(grads[0], b)
    torch.testing.assert_close(grads[1], a)


def test_a_cooperative_kernel_with_a_grid_wide_barrier_validates_on_the_cpu() -> None:
    """gridnorm's kernel.cu launches by cudaLaunchCooperativeKernel((void*)kernel, ...), sized by the
    occupancy calculator, and meets at this_grid().sync(): as public code writes a grid-wide reduction."""
    report = brrr_kernels.validate(str(OPS / "gridnorm"), stages=["cuda"], seed=3)
    assert not report.failed, report
    assert report.row("cuda", "forward", "float32").verdict == "pass"
    assert report.row("cuda", "non-contiguous fwd", "float64").verdict == "pass"


def test_a_block_that_returns_before_the_grid_barrier_is_a_fail_row_naming_the_barrier(tmp_path: Path) -> None:
    folder = _copy(tmp_path, "gridnorm")
    kernel = folder / "kernel.cu"
    text = kernel.read_text()
    kernel.write_text(text.replace("    grid.sync();\n", "    if (blockIdx.x == 1) return;\n    grid.sync();\n"))
    line = next(n for n, t in enumerate(kernel.read_text().splitlines(), 1) if t == "    grid.sync();")
    report = brrr_kernels.validate(str(folder), stages=["cuda"], seed=3)
    failed = [r for r in report.rows if r.failed]
    assert failed, report
    detail = failed[0].detail
    assert f"kernel.cu:{line} in gridnorm_kernel" in detail and "deadlock" in detail, detail
    assert "grid-wide barrier" in detail, detail


TWICE_SCRIPT = '''\
from torch.utils.cpp_extension import load_inline

cuda_source = """
__global__ void twice_kernel(const float* x, float* y, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

torch::Tensor twice(torch::Tensor x) {
    auto y = torch::empty_like(x);
    twice_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
"""
twice = load_inline(name="twice", cpp_sources="torch::Tensor twice(torch::Tensor x);",
                    cuda_sources=cuda_source, functions=["twice"])
'''
REFUSING = '''

def forward_checked(m, x):
    if not x.is_contiguous():
        raise RuntimeError("x must be contiguous")
    return m.twice(x)
'''


def test_a_load_inline_script_validates_on_the_cpu_and_its_layout_bug_is_named_then_refused(tmp_path: Path) -> None:
    """A GPU MODE-style script, adopted as written: its wrapper reads x's memory as if contiguous,
    which the non-contiguous row fails naming x; a wrapper that refuses such an x passes, listed as refused."""
    from brrr_kernels.commands.adopt import adopt

    (tmp_path / "script.py").write_text(TWICE_SCRIPT)
    folder, _, _ = adopt(tmp_path / "script.py", tmp_path / "twice", None)
    (folder / "reference.py").write_text("def forward(x):\n    return 2 * x\n")
    spec = folder / "spec.py"
    spec.write_text(spec.read_text().replace('forward_only="TODO', 'forward_only="an example'))
    report = brrr_kernels.validate(str(folder), stages=["cuda"], seed=4)
    assert report.row("cuda", "forward", "float32").verdict == "pass", report
    row = report.row("cuda", "non-contiguous fwd", "float32")
    assert row.verdict == FAIL and row.detail.startswith("[non-contiguous, size (2, 300)] cause: x read as if "
                                                           "contiguous"), row.detail
    text = spec.read_text().replace('TorchModule(forward="twice"', "TorchModule(forward=forward_checked")
    spec.write_text(text.replace("SPEC = OpSpec(", REFUSING.lstrip("\n") + "\n\nSPEC = OpSpec("))
    report = brrr_kernels.validate(str(folder), stages=["cuda"], seed=4)
    row = report.row("cuda", "non-contiguous fwd", "float32")
    assert row.verdict == PASS and row.cases == ["misaligned, size (2, 300)", "misaligned, size (64, 1000)"], row
    assert any("refused by the stage: x must be contiguous" in n for n in row.notes), row.notes


# vLLM's way: a wrapper that writes its result into a tensor it is given, bound in another file.
RMS_NORM = """\
#include <torch/all.h>

__global__ void rms_norm_kernel(float* __restrict__ out, const float* __restrict__ input,
                                const float* __restrict__ weight, float epsilon, int64_t rows, int64_t hidden) {
  const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float squares = 0.0f;
  for (int64_t i = 0; i < hidden; ++i) squares += input[r * hidden + i] * input[r * hidden + i];
  const float scale = 1.0f / sqrtf(squares / hidden + epsilon);
  for (int64_t i = 0; i < hidden; ++i) out[r * hidden + i] = input[r * hidden + i] * scale * weight[i];
}

void rms_norm(torch::Tensor& out,     // [..., hidden]
              torch::Tensor& input,   // [..., hidden]
              torch::Tensor& weight,  // [hidden]
              double epsilon) {
  TORCH_CHECK(out.is_contiguous() && input.is_contiguous() && weight.is_contiguous(), "rms_norm: contiguous tensors");
  const int64_t hidden = input.size(-1), rows = input.numel() / hidden;
  rms_norm_kernel<<<(rows + 127) / 128, 128>>>(out.data_ptr<float>(), input.data_ptr<float>(),
                                               weight.data_ptr<float>(), (float)epsilon, rows, hidden);
}
"""
RMS_NORM_INPUTS = """\
    x = torch.randn(size, dtype=dtype, generator=gen)
    return x.to(device), torch.rand(x.shape[-1], dtype=dtype, generator=gen).to(device) + 0.5
"""


def test_an_adopted_void_forward_validates_through_the_adapter_adopt_wrote(tmp_path: Path) -> None:
    """spec.py's adapter (allocate out, call rms_norm, return out) and reference.py's signature are kept as
    adopt wrote them: only make_inputs, epsilon, forward_only and the reference's body are filled in."""
    from brrr_kernels.commands.adopt import adopt

    (tmp_path / "rms_norm.cu").write_text(RMS_NORM)
    folder, _, _ = adopt(tmp_path / "rms_norm.cu", tmp_path / "op", None)
    spec = folder / "spec.py"
    text = spec.read_text()
    made = "    return tuple(torch.randn(size, dtype=dtype, generator=gen).to(device) for _ in range(2))\n"
    assert made in text and "def forward_from_module(m, input, weight, epsilon):" in text
    text = text.replace(made, RMS_NORM_INPUTS).replace("{'epsilon': 0.5}", "{'epsilon': 1e-6}")
    spec.write_text(text.replace('forward_only="TODO', 'forward_only="an example'))
    reference = (folder / "reference.py").read_text()
    body = '    raise NotImplementedError("brrr adopt: write forward in PyTorch: what rms_norm computes")'
    (folder / "reference.py").write_text(reference.replace(
        body, "    return input * torch.rsqrt(input.pow(2).mean(-1, keepdim=True) + epsilon) * weight"))
    report = brrr_kernels.validate(str(folder), stages=["cuda"], seed=4)
    assert report.row("cuda", "forward", "float32").verdict == PASS, report
    assert report.row("cuda", "inputs unchanged", "all").verdict == PASS, report
    assert not report.failed, report
