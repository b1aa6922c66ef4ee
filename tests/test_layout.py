"""The shape of pipeline/ itself: subpackages by concern, each with a layer map that names its modules;
imports that point down the layers, with no circle and no private name taken across modules; no
function with more than 6 parameters."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest
from conftest import REPO

PIPELINE = REPO / "pipeline"
SIZES = REPO / "benchmarks" / "sizes.py"
# Each layer imports only from layers below it (or its own); the ways in sit on top.
LAYERS = {"base": 0, "sim": 1, "op": 2, "cuda": 3, "translate": 3, "verdict": 4, "validation": 5, "debugger": 5,
          "mutate": 6, "commands": 6, "": 7}
SUBPACKAGES = sorted(name for name in LAYERS if name)


def _sizes_module():
    spec = importlib.util.spec_from_file_location("sizes", SIZES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def modules() -> dict[str, Path]:
    """Dotted name inside brrr_kernels -> file, for every module of the package (not the op folders)."""
    found = {}
    for path in PIPELINE.rglob("*.py"):
        if {"include", "templates"} & set(path.parts):
            continue
        parts = path.relative_to(PIPELINE).with_suffix("").parts
        found[".".join(p for p in parts if p != "__init__")] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, list[str], int]]:
    """(module imported, names taken from it, line) for every import of brrr's own modules, also those
    inside functions: a circle hidden in a function is a circle."""
    package = name.split(".")[:-1] if path.name != "__init__.py" else name.split(".") if name else []
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[:len(package) - node.level + 1]
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names = [a.name for a in node.names]
            if target in known:
                # `from . import x` where x is a module imports x itself
                submodules = [f"{target}.{n}".lstrip(".") for n in names if f"{target}.{n}".lstrip(".") in known]
                found += [(s, [], node.lineno) for s in submodules]
                rest = [n for n in names if f"{target}.{n}".lstrip(".") not in known]
                if rest and target:
                    found.append((target, rest, node.lineno))
            else:
                found += [(f"{target}.{n}".lstrip("."), [], node.lineno) for n in names
                          if f"{target}.{n}".lstrip(".") in known]
    return found


def layer(name: str) -> str:
    return name.split(".")[0] if "." in name or name in SUBPACKAGES else ""


def test_no_pipeline_function_takes_more_than_six_parameters() -> None:
    sizes = _sizes_module()
    wide = [w for f in sorted(modules().values()) for w in sizes.wide_functions(f)]
    assert not wide, "\n".join(wide)


def test_pipeline_is_subpackages_and_the_ways_in() -> None:
    top = {p.stem for p in PIPELINE.glob("*.py")}
    assert top == {"__init__", "__main__", "api", "cli", "ops", "pytest_plugin"}, sorted(top)
    assert {p.name for p in PIPELINE.iterdir() if (p / "__init__.py").exists()} == set(SUBPACKAGES)


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_each_subpackage_opens_with_a_layer_map_of_its_modules(package: str) -> None:
    doc = ast.get_docstring(ast.parse((PIPELINE / package / "__init__.py").read_text())) or ""
    mapped = set(re.findall(r"^\s{2,}([a-z_]+)\s{2,}\S", doc, flags=re.M))
    present = {p.stem for p in (PIPELINE / package).glob("*.py")} - {"__init__"}
    assert mapped == present, f"{package}/__init__.py's layer map: missing {sorted(present - mapped)}, " \
                              f"stale {sorted(mapped - present)}"


def test_imports_point_down_the_layers() -> None:
    known = modules()
    upward = [f"{known[name].relative_to(REPO)}:{line} imports {target}"
              for name, path in known.items() for target, _, line in imports_of(name, path, known)
              if LAYERS[layer(target)] > LAYERS[layer(name)]]
    assert not upward, "\n".join(upward)


def test_no_import_circle() -> None:
    known = modules()
    graph = {name: {t for t, _, _ in imports_of(name, path, known) if t != name and not name.startswith(f"{t}.")}
             for name, path in known.items()}
    graph = {n: {t for t in ts if t} for n, ts in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (circle := visit(nxt)):
                return circle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (circle := visit(node)):
            pytest.fail("import circle: " + " -> ".join(circle))


def test_no_private_name_is_imported_across_modules() -> None:
    known = modules()
    private = [f"{known[name].relative_to(REPO)}:{line} takes {n} from {target}"
               for name, path in known.items() for target, names, line in imports_of(name, path, known)
               for n in names if n.startswith("_") and not n.startswith("__")]
    assert not private, "\n".join(private)


def test_the_readme_layout_names_every_subpackage() -> None:
    readme = (REPO / "README.md").read_text()
    layout = readme[readme.index("## Layout"):]
    missing = [p for p in SUBPACKAGES if f"{p}/" not in layout]
    assert not missing, f"not in the README's Layout: {missing}"


def test_sizes_script_prints_each_module(capsys) -> None:
    import sys

    argv, sys.argv = sys.argv, ["sizes.py"]
    try:
        _sizes_module().main()
    finally:
        sys.argv = argv
    out = capsys.readouterr().out
    assert "pipeline/validation/executor.py" in out and "total" in out
