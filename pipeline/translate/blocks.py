"""Which block kernel.cu launches. numba_kernel.py's block (BLOCK = 16, say) is sized for the
simulator, where every thread is a Python thread; spec.py names kernel.cu's own as CUDA_<NAME> for
numba's <NAME> (CUDA_BLOCK for BLOCK, CUDA_TILE for TILE), and its cuda layout and sim sizes are
chosen for that one. The translation takes spec.py's value where the launches name the constant
plainly; where it cannot (a launch block computed some other way, a constant derived from it), it
keeps numba's, writes a comment into both files and warns, naming what must agree."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from ..op.spec import Op
from .device import Device
from .host import Host

SPEC_PREFIX = "CUDA_"


@dataclass(frozen=True)
class BlockChoice:
    """What the translation did about the block: a line to print, and comment lines for both files."""

    message: str | None = None
    comment: tuple[str, ...] = ()


def module_int(path: Path, name: str) -> int | None:
    """A module-level `NAME = <int>` of a stage file, read without running it."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return node.value.value if isinstance(node.value, ast.Constant) and type(node.value.value) is int else None
    return None


def _plain_names(block: ast.expr) -> list[str] | None:
    """The constants a launch block is made of (BLOCK, or (TILE, TILE)); None if it is anything else."""
    parts = block.elts if isinstance(block, ast.Tuple) else [block]
    if all(isinstance(p, ast.Name) for p in parts):
        return [p.id for p in parts]  # type: ignore[attr-defined]
    return None


def _derived(tree: ast.Module, names: set[str]) -> list[str]:
    """Module-level constants computed from the block's (HALF = BLOCK // 2): the translation copies
    their values, so they would keep numba's block's."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and not isinstance(node.value, ast.Constant):
            if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node.value)):
                out += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return out


def choose_block(op: Op, dev: Device, host: Host) -> BlockChoice:
    """Set the launch block's constants in `dev` and `host` to spec.py's CUDA_ values, or say why not."""
    spec_py = op.folder / "spec.py"
    blocks = host.launch_blocks
    plain = [_plain_names(b) for b in blocks]
    names = sorted({n for p in plain if p for n in p})
    wanted = {n: module_int(spec_py, SPEC_PREFIX + n) for n in names}
    numba = {n: vars(host.module).get(n) for n in names}
    if not blocks or (all(v is None for v in wanted.values()) and module_int(spec_py, SPEC_PREFIX + "BLOCK") is None):
        return BlockChoice()  # spec.py names no CUDA block: nothing to agree with
    derived = _derived(ast.parse(host.source), set(names))
    simple = all(p is not None for p in plain) and all(type(numba[n]) is int and wanted[n] for n in names) \
        and not derived
    if simple:
        changed = [n for n in names if numba[n] != wanted[n]]
        for n in changed:
            decl = (f"constexpr int64_t {n} = {wanted[n]};  // spec.py's {SPEC_PREFIX}{n}; numba_kernel.py's {n} = "
                    f"{numba[n]} is the simulator's")
            for constants in (dev.constants, host.constants):
                if n in constants:
                    constants[n] = decl
        if not changed:
            return BlockChoice()
        said = ", ".join(f"{n} = {wanted[n]} (spec.py's {SPEC_PREFIX}{n}; numba_kernel.py's is {numba[n]})"
                         for n in changed)
        return BlockChoice(f"kernel.cu's launches take the block from spec.py: {said}")
    launched = ", ".join(sorted({ast.unparse(b) for b in blocks}))
    spec_names = ", ".join(f"{SPEC_PREFIX}{n} = {v}" for n, v in wanted.items() if v) or \
        f"{SPEC_PREFIX}BLOCK = {module_int(spec_py, SPEC_PREFIX + 'BLOCK')}"
    why = f"{', '.join(derived)} computed from it" if derived else "a launch block that is not a plain constant"
    text = (f"kernel.cu launches numba_kernel.py's block ({launched}) as it is ({why}), and spec.py says "
            f"{spec_names}: they must agree, in binding.cpp's launches and kernel.cu's shared arrays, and in "
            "spec.py's cuda layout and sim sizes")
    return BlockChoice(f"warning: {text}", ("// brrr translate: " + text,))
