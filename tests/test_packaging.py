"""The installed distribution: `pip install .` into a fresh venv adds one import package,
brrr_kernels, with the built-in ops and brrr's headers inside, and it works from there."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import REPO


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A fresh venv with this repository pip-installed (not editable) from a copy of its files:
    (its python, its site-packages). Dependencies come from this test run's own environment
    on PYTHONPATH where a test runs it, so nothing is downloaded."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # What `pip install .` does, in its two steps: build the wheel here (this environment has
    # setuptools; the bare venv has not), then install it into the venv.
    wheels = root / "wheels"
    pip = [sys.executable, "-m", "pip"]
    _run(*pip, "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(source))
    (wheel,) = wheels.glob("brrr_kernels-*.whl")
    _run(*pip, "--python", str(python), "install", "-q", "--no-deps", str(wheel))
    return python, site


def _run(*command: str) -> None:
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]


def _record(site: Path) -> list[str]:
    (info,) = site.glob("brrr_kernels-*.dist-info")
    with open(info / "RECORD", newline="") as f:
        return [row[0] for row in csv.reader(f)]


def test_pip_install_adds_one_top_level_import_package(installed: tuple[Path, Path]) -> None:
    _, site = installed
    (info,) = site.glob("brrr_kernels-*.dist-info")
    assert (info / "top_level.txt").read_text().split() == ["brrr_kernels"]
    inside = {p.split("/")[0] for p in _record(site) if not p.startswith(("..", "brrr_kernels-"))}
    assert inside == {"brrr_kernels"}  # not pipeline, not stages
    assert sorted(p.name for p in site.iterdir() if not p.name.endswith(".dist-info")) == ["brrr_kernels"]


def test_the_package_carries_the_ops_headers_templates_and_command(installed: tuple[Path, Path]) -> None:
    record = set(_record(installed[1]))
    for path in ("brrr_kernels/stages/sigmoid/kernel.cu", "brrr_kernels/stages/sigmoid/binding.cpp",
                 "brrr_kernels/include/brrr.cuh", "brrr_kernels/templates/kernel.cu.tmpl", "brrr_kernels/__main__.py"):
        assert path in record
    assert any(p.endswith("/bin/brrr") for p in record)


def test_validate_works_from_the_installed_package(installed: tuple[Path, Path], tmp_path: Path) -> None:
    python, _ = installed
    code = ("import brrr_kernels; assert 'site-packages' in brrr_kernels.__file__, brrr_kernels.__file__; "
            "r = brrr_kernels.validate('sigmoid', stages=['reference','numba']); assert r.passed; print(r.summary())")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = sysconfig.get_paths()["purelib"]  # torch, numba, ... of this run (no .pth files: not brrr)
    proc = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "sigmoid: 19 passed, 0 failed" in proc.stdout
