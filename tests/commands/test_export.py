"""`brrr export`: a standalone package that builds with pip and imports without brrr."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
from pathlib import Path

from conftest import REPO, brrr, gpu

from brrr_kernels.validation import native_library

BYOK = REPO / "tests" / "cuda" / "byok_ops"


def test_export_writes_a_complete_package(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    proc = brrr("export", "sigmoid", str(out))
    assert proc.returncode == 0, proc.stderr
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert files == {"setup.py", "pyproject.toml", "tests/test_sigmoid.py", "brrr_sigmoid/__init__.py",
                     "brrr_sigmoid/reference.py", "brrr_sigmoid/csrc/kernel.cu", "brrr_sigmoid/csrc/binding.cpp",
                     "brrr_sigmoid/csrc/brrr.cuh", "brrr_sigmoid/csrc/brrr_kernel.cuh",
                     "brrr_sigmoid/csrc/brrr_library.cpp"}
    for py in ("setup.py", "brrr_sigmoid/__init__.py", "tests/test_sigmoid.py"):
        py_compile.compile(str(out / py), doraise=True)
    init = (out / "brrr_sigmoid" / "__init__.py").read_text()
    assert "brrr_kernels" not in init and "pipeline" not in init
    assert '_lib.define("sigmoid(Tensor x) -> Tensor")' in init
    setup = (out / "setup.py").read_text()
    assert "-DBRRR_NAMESPACE=brrr_sigmoid_export" in setup and "-DBRRR_NATIVE_NAMESPACE=brrr_sigmoid_export_native" in setup


def test_export_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    proc = brrr("export", "sigmoid", str(tmp_path / "pkg"))
    assert proc.returncode == 1 and "never overwrites" in proc.stderr


@gpu
def test_exported_package_builds_offline_and_passes_its_test(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert brrr("export", "sigmoid", str(out)).returncode == 0
    target = tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                            "--target", str(target), str(out)], capture_output=True, text=True, timeout=900)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(target)}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(out / "tests")],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # Both of kernel.cu's ops are called from C++ (brrr_library.cpp's route), nothing through Python.
    code = "import brrr_sigmoid, sys; assert 'brrr_kernels' not in sys.modules; assert not brrr_sigmoid.ROUTE_REFUSED"
    check = subprocess.run([sys.executable, "-c", code],
                           capture_output=True, text=True, cwd=tmp_path, env=env)
    assert check.returncode == 0, check.stderr


def run_as_if_built(out: Path, name: str, kernels: tuple[str, ...], body: str) -> None:
    """Import the exported package brrr_NAME in a fresh interpreter as if its extension were built (no GPU
    here) and run `body` there: brrr_library.cpp built under the package's namespace as its setup.py
    builds it, kernel.cu's ops defined by the schemas in `kernels` (only CUDA tensors would reach them),
    then load_library a no-op."""
    native = native_library.build(f"brrr_{name}_export_native")
    (out / f"brrr_{name}" / "_C.so").write_text("")
    defines = "".join(f"lib.define({schema!r})\n" for schema in kernels)
    code = f"""
import sys, torch
torch.ops.load_library({str(native)!r})
torch.ops.load_library = lambda path: None
lib = torch.library.Library("brrr_{name}_export", "DEF")
{defines}sys.path.insert(0, {str(out)!r})
import brrr_{name}
{body}
print("cpu ok")
"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=out.parent, env=env,
                         timeout=300)
    assert run.returncode == 0 and "cpu ok" in run.stdout, run.stderr[-3000:]


def test_exported_package_hints_the_real_signature_and_runs_the_reference_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    proc = brrr("export", "layernorm", str(out))
    assert proc.returncode == 0, proc.stderr
    hint = "y, mean, rstd = brrr_layernorm.layernorm(x, weight, bias)  # eps=1e-05 unless given"
    assert hint in (out / "brrr_layernorm" / "__init__.py").read_text() and hint in proc.stdout
    # kernel.cu's ops under schemas other than the contract's: the C++ route refuses both, and the
    # package keeps Python's call for them, saying why.
    run_as_if_built(out, "layernorm", ("forward(Tensor x) -> Tensor", "backward(Tensor x) -> Tensor"), """
assert sorted(brrr_layernorm.ROUTE_REFUSED) == ["layernorm", "layernorm_backward"], brrr_layernorm.ROUTE_REFUSED
assert "takes 1 arguments, not 4" in brrr_layernorm.ROUTE_REFUSED["layernorm"]
x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
w = torch.randn(8, dtype=torch.float64, requires_grad=True)
b = torch.randn(8, dtype=torch.float64, requires_grad=True)
y, mean, rstd = brrr_layernorm.layernorm(x, w, b)
assert y.grad_fn.name() == "BrrrBackward(brrr_layernorm_export::layernorm_backward)", y.grad_fn.name()
assert not mean.requires_grad  # a stat: no gradient
want = torch.nn.functional.layer_norm(x, (8,), w, b, 1e-5)
torch.testing.assert_close(y, want)
gy = torch.randn_like(y)
got = torch.autograd.grad(y, (x, w, b), gy)
expected = torch.autograd.grad(want, (x, w, b), gy)
for g, e in zip(got, expected):
    torch.testing.assert_close(g, e)
""")


def test_a_forward_only_op_exports_without_a_backward(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    assert brrr("export", str(BYOK / "rowsum"), str(out)).returncode == 0
    init = (out / "brrr_rowsum" / "__init__.py").read_text()
    assert "FORWARD_ONLY = True" in init
    # kernel.cu's forward takes the contract's arguments: routed in C++, nothing refused, no backward op.
    run_as_if_built(out, "rowsum", ("forward(Tensor x) -> Tensor",), """
assert brrr_rowsum.ROUTE_REFUSED == {}, brrr_rowsum.ROUTE_REFUSED
assert not hasattr(torch.ops.brrr_rowsum_export, "rowsum_backward")
x = torch.randn(3, 5, dtype=torch.float64)
torch.testing.assert_close(brrr_rowsum.rowsum(x), brrr_rowsum.reference.forward(x))
""")
