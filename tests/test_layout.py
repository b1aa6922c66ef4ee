"""The shape of pipeline/ itself: every module named in the README's Layout, no function with more than 6 parameters."""

from __future__ import annotations

import importlib.util
import re

from conftest import REPO

SIZES = REPO / "benchmarks" / "sizes.py"


def _sizes_module():
    spec = importlib.util.spec_from_file_location("sizes", SIZES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_pipeline_function_takes_more_than_six_parameters() -> None:
    sizes = _sizes_module()
    wide = [w for f in sorted((REPO / "pipeline").glob("*.py")) for w in sizes.wide_functions(f)]
    assert not wide, "\n".join(wide)


def test_the_readme_layout_names_every_module() -> None:
    readme = (REPO / "README.md").read_text()
    layout = readme[readme.index("## Layout"):]
    named = set(re.findall(r"\b([a-z_]+)\b", layout))
    modules = {p.stem for p in (REPO / "pipeline").glob("*.py")} - {"__init__", "__main__"}
    assert modules <= named, f"not in the README's Layout: {sorted(modules - named)}"


def test_sizes_script_prints_each_module(capsys) -> None:
    import sys

    argv, sys.argv = sys.argv, ["sizes.py"]
    try:
        _sizes_module().main()
    finally:
        sys.argv = argv
    out = capsys.readouterr().out
    assert "pipeline/validate.py" in out and "total" in out
