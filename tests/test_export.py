"""`brrr export`: a standalone package that builds with pip and imports without brrr."""

from __future__ import annotations

import os
import py_compile
import subprocess
import sys
from pathlib import Path

from conftest import brrr, gpu


def test_export_writes_a_complete_package(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    proc = brrr("export", "sigmoid", str(out))
    assert proc.returncode == 0, proc.stderr
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert files == {"setup.py", "pyproject.toml", "tests/test_sigmoid.py", "brrr_sigmoid/__init__.py",
                     "brrr_sigmoid/reference.py", "brrr_sigmoid/csrc/kernel.cu", "brrr_sigmoid/csrc/binding.cpp",
                     "brrr_sigmoid/csrc/brrr.cuh", "brrr_sigmoid/csrc/brrr_kernel.cuh"}
    for py in ("setup.py", "brrr_sigmoid/__init__.py", "tests/test_sigmoid.py"):
        py_compile.compile(str(out / py), doraise=True)
    init = (out / "brrr_sigmoid" / "__init__.py").read_text()
    assert "brrr_kernels" not in init and "pipeline" not in init
    assert '_lib.define("sigmoid(Tensor x) -> Tensor")' in init
    assert "-DBRRR_NAMESPACE=brrr_sigmoid_export" in (out / "setup.py").read_text()


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
    check = subprocess.run([sys.executable, "-c", "import brrr_sigmoid, sys; assert 'brrr_kernels' not in sys.modules"],
                           capture_output=True, text=True, cwd=tmp_path, env=env)
    assert check.returncode == 0, check.stderr
