"""The pytest plugin: a user's project gets brrr's verdict as ordinary tests, one per op and check."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import copy_op, plant

PLANTED = ("numba_kernel.py", "y[i] = e / (1.0 + e)", "y[i] = e / (2.0 + e)")


def run_pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=project,
                          capture_output=True, text=True, env=env, timeout=900)


def _op(project: Path, name: str) -> Path:
    folder = copy_op("sigmoid", project / "ops")
    folder = folder.rename(project / "ops" / name)
    return plant(folder, "spec.py", 'name="sigmoid"', f'name="{name}"')


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A user's project: two op folders (one with a planted bug), an ini naming them, a test of its own
    and a test file using the one-line helper."""
    root = tmp_path_factory.mktemp("user-project")
    _op(root, "clean")
    plant(_op(root, "buggy"), *PLANTED)
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\nbrrr_ops = ["ops"]\nbrrr_stages = ["numba"]\n'
                                         'testpaths = ["tests"]\n')
    (root / "tests").mkdir()
    (root / "tests" / "test_mine.py").write_text("def test_mine():\n    assert 1 + 1 == 2\n")
    (root / "tests" / "test_helper.py").write_text(
        "from brrr_kernels.pytest_plugin import op_tests\n\n"
        "test_clean = op_tests('../ops/clean', stages=['numba'])\n")
    return root


@pytest.fixture(scope="module")
def junit_run(project: Path) -> tuple[subprocess.CompletedProcess[str], ET.Element]:
    proc = run_pytest(project, "-q", "-rA", "--junitxml=report.xml")
    return proc, ET.parse(project / "report.xml").getroot()


def _cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    return {(c.get("classname", ""), c.get("name", "")): c for c in root.iter("testcase")}


def test_the_planted_bug_fails_with_brrrs_reason_and_debug_command(junit_run) -> None:
    proc, _ = junit_run
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "FAILED brrr/buggy::numba-forward-float32" in out
    assert "brrr: buggy numba forward [float32] failed" in out and "elements out of tolerance" in out
    assert "debug it: brrr debug" in out and "--index" in out
    assert "Traceback" not in out and "pytest_plugin.py" not in out  # the reason, not the plugin's stack
    assert "FAILED brrr/clean" not in out and "FAILED tests/test_helper.py" not in out


def test_junitxml_names_each_check_of_each_op(junit_run) -> None:
    _, root = junit_run
    cases = _cases(root)
    checks = ["numba-forward-float32", "numba-backward-float64", "numba-edge_forward-float32", "numba-inputs_unchanged-all",
              "numba-gradcheck-float64"]
    for name in checks:
        assert ("brrr.clean", name) in cases and ("brrr.buggy", name) in cases
        assert cases[("brrr.clean", name)].find("failure") is None
        assert cases[("tests.test_helper", f"test_clean[{name}]")].find("failure") is None
    assert cases[("brrr.buggy", "numba-forward-float32")].find("failure") is not None
    assert cases[("brrr.buggy", "numba-gradcheck-float64")].find("failure") is None  # the bug is in forward only
    assert ("tests.test_mine", "test_mine") in cases


def test_a_flag_names_an_op_and_k_selects_its_checks(project: Path) -> None:
    proc = run_pytest(project, "-q", "-o", "brrr_ops=", "--brrr", "ops/clean", "--brrr-stage", "numba",
                      "-k", "clean and gradcheck")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "2 passed" in proc.stdout  # brrr/clean's and the helper's gradcheck rows


def test_a_folder_that_cannot_load_is_one_failing_test(project: Path, tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "spec.py").write_text("SPEC = 1 +\n")
    proc = run_pytest(project, "-q", "-o", "brrr_ops=", "--brrr", str(tmp_path / "broken"), "tests/test_mine.py")
    assert proc.returncode == 1 and "FAILED brrr/broken::load" in proc.stdout
    assert "brrr cannot validate" in proc.stdout and "spec.py" in proc.stdout


def test_the_plugin_loads_without_torch_or_brrr_when_unused(tmp_path: Path) -> None:
    (tmp_path / "test_light.py").write_text(
        "import sys\n\n"
        "def test_light():\n"
        "    assert 'brrr_kernels.pytest_plugin' in sys.modules\n"
        "    assert 'torch' not in sys.modules and 'numba' not in sys.modules and 'brrr_kernels.api' not in sys.modules\n")
    proc = run_pytest(tmp_path, "-q", "test_light.py")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_op_tests_follows_the_stage_and_seed_flags_and_the_ini(project: Path) -> None:
    """op_tests() with no stages: --brrr-stage narrows it, else the ini's brrr_stages (numba here)."""
    (project / "tests" / "test_plain_helper.py").write_text(
        "from brrr_kernels.pytest_plugin import op_tests\n\ntest_clean = op_tests('../ops/clean')\n")
    try:
        flagged = run_pytest(project, "-q", "-rA", "-o", "brrr_ops=", "--brrr-stage", "reference", "--brrr-seed", "7",
                             "tests/test_plain_helper.py")
        assert flagged.returncode == 0, flagged.stdout[-3000:] + flagged.stderr[-3000:]
        names = [ln.split("[", 1)[1] for ln in flagged.stdout.splitlines() if ln.startswith("PASSED ")]
        assert names and all(n.startswith("reference-") for n in names), flagged.stdout[-3000:]
        from_ini = run_pytest(project, "-q", "-rA", "-o", "brrr_ops=", "tests/test_plain_helper.py", "-k", "forward")
        assert from_ini.returncode == 0, from_ini.stdout[-3000:] + from_ini.stderr[-3000:]
        names = [ln.split("[", 1)[1] for ln in from_ini.stdout.splitlines() if ln.startswith("PASSED ")]
        assert names and all(n.startswith("numba-") for n in names), from_ini.stdout[-3000:]
    finally:
        (project / "tests" / "test_plain_helper.py").unlink()


@pytest.mark.parametrize("how", ["flag", "ini"])
def test_a_path_with_no_op_fails_the_run_naming_it(tmp_path: Path, how: str) -> None:
    empty = tmp_path / "no_ops_here"
    (empty / "notes").mkdir(parents=True)
    (tmp_path / "test_mine.py").write_text("def test_mine():\n    assert True\n")
    if how == "ini":
        (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nbrrr_ops = ["no_ops_here"]\n')
        proc = run_pytest(tmp_path, "-q", "test_mine.py")
    else:
        proc = run_pytest(tmp_path, "-q", "--brrr", str(empty), "test_mine.py")
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]  # pytest's usage error
    assert "no_ops_here: no op folder here" in proc.stderr and "1 passed" not in proc.stdout
