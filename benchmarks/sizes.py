"""Lines per module of pipeline/, largest first, so growth shows in review.

    python benchmarks/sizes.py            # pipeline/*.py (and its headers and templates with --all)
    python benchmarks/sizes.py --all

Counts non-blank lines that are not only a comment; docstrings count (they are the module's
explanation). Also names the functions with more than 6 parameters, which the project avoids.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIPELINE = ROOT / "pipeline"


def code_lines(path: Path) -> int:
    comment = "//" if path.suffix in (".cuh", ".cu", ".cpp", ".h") else "#"
    return sum(1 for line in path.read_text().splitlines() if line.strip() and not line.strip().startswith(comment))


def wide_functions(path: Path, limit: int = 6) -> list[str]:
    """Functions of a Python file taking more than `limit` parameters (self and cls not counted)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, *filter(None, (a.vararg, a.kwarg)))]
            names = [n for n in names if n not in ("self", "cls")]
            if len(names) > limit:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}() takes {len(names)} parameters")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="also the headers and templates")
    args = parser.parse_args()
    files = sorted(p for p in PIPELINE.rglob("*.py") if not {"include", "templates"} & set(p.parts))
    if args.all:
        files += sorted(p for p in PIPELINE.rglob("*") if p.is_file() and p.suffix in (".cuh", ".tmpl"))
    sizes = sorted(((code_lines(f), f) for f in files), key=lambda pair: -pair[0])
    width = max(len(str(f.relative_to(ROOT))) for _, f in sizes)
    for lines, f in sizes:
        print(f"{str(f.relative_to(ROOT)):<{width}}  {lines:5d}")
    print(f"{'total':<{width}}  {sum(n for n, _ in sizes):5d}")
    for line in (w for f in files if f.suffix == ".py" for w in wide_functions(f)):
        print(f"wide: {line}")


if __name__ == "__main__":
    main()
