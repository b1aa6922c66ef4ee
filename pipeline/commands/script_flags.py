"""The macros a setup.py or a load() script defines for its extension, read for `brrr adopt`.

A kernel may need them to compile at all (RWKV's `-DTmax=1024` sizes its per-thread arrays), so
adopt copies each `-DNAME[=VALUE]` of `extra_cuda_cflags`, `extra_cflags` and `extra_compile_args`
(a list, or a dict of lists by compiler) into spec.py's `defines`. The script is read, never run: a
flag written as an f-string is resolved from the script's module-level constants (`T_MAX = 1024`),
and one that cannot be (a value computed at run time) is reported, as is every other flag brrr's
own build does not take (`--use_fast_math`, `-maxrregcount`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

_FLAG_KEYWORDS = ("extra_cuda_cflags", "extra_cflags", "extra_compile_args")


@dataclass
class ScriptFlags:
    """What the script's compile flags come to: macros by name, and the flags not carried over."""

    defines: dict[str, str] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)


def run_from(py: Path) -> list[Path]:
    """Where a script's relative file names may be meant from: a script assumes the folder it is run
    from, its own, a folder above it (RWKV's src/model.py names "cuda/wkv_op.cpp" beside src/), or
    wherever brrr runs. In that order."""
    here = py.parent.resolve()
    return list(dict.fromkeys([here, *here.parents, Path.cwd().resolve()]))


def module_constants(tree: ast.Module) -> dict[str, object]:
    """The script's module-level NAME = constant assignments (the last one of each name)."""
    found: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value.value
    return found


def literal_text(node: ast.AST, constants: dict[str, object]) -> str | None:
    """A flag's text: a string constant, or an f-string of the module's constants; None otherwise."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif (isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name)
                  and value.value.id in constants and value.format_spec is None and value.conversion == -1):
                parts.append(str(constants[value.value.id]))
            else:
                return None
        return "".join(parts)
    return None


def _flag_nodes(node: ast.AST) -> list[ast.AST]:
    """The elements of a flags list, or of every list of a {compiler: [flags]} dict."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return list(node.elts)
    if isinstance(node, ast.Dict):
        return [e for v in node.values if isinstance(v, (ast.List, ast.Tuple)) for e in v.elts]
    return [node]


# nvcc's options whose value is the next item even where it starts with '-' ("-Xptxas", "-O3").
_TAKES_VALUE = {"-Xptxas", "-Xcompiler", "-Xlinker", "-Xcudafe", "-Xnvlink", "--ptxas-options", "--compiler-options",
                "--linker-options", "-gencode", "--generate-code", "-arch", "--gpu-architecture", "-ccbin"}


def _add(flags: list[str], into: ScriptFlags) -> None:
    i = 0
    while i < len(flags):
        flag = flags[i]
        # "-D", "NAME=VALUE" as two items, or "-DNAME=VALUE" as one.
        if flag == "-D" and i + 1 < len(flags):
            flag, i = "-D" + flags[i + 1], i + 1
        elif flag in _TAKES_VALUE and i + 1 < len(flags):
            flag, i = f"{flag} {flags[i + 1]}", i + 1
        if flag.startswith("-D") and len(flag) > 2:
            name, _, value = flag[2:].partition("=")
            if name.isidentifier():
                into.defines[name] = value
            else:
                into.dropped.append(flag)
        elif flag.startswith("-") or not into.dropped:
            into.dropped.append(flag)
        else:  # an option's value ("--maxrregcount 60"): reported with its option
            into.dropped[-1] += " " + flag
        i += 1


def script_flags(py: Path) -> ScriptFlags:
    """The macros (and the dropped flags) of every extension call in the script `py`."""
    tree = ast.parse(py.read_text(errors="replace"), str(py))
    constants = module_constants(tree)
    found = ScriptFlags()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            if kw.arg not in _FLAG_KEYWORDS:
                continue
            texts: list[str] = []
            for element in _flag_nodes(kw.value):
                text = literal_text(element, constants)
                if text is None:
                    found.dropped.append(f"{kw.arg} at line {element.lineno}: {ast.unparse(element)} "
                                         "(not a constant brrr can read without running the script)")
                else:
                    texts.extend(text.split())
            _add(texts, found)
    return found
