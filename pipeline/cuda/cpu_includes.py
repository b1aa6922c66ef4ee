"""What a CPU build includes besides brrr's stand-ins: the op folder's own headers, rewritten as
kernel.cu is (a `__shared__` in a template of common.h, a launch in a helper), and an empty
stand-in for each header brrr cannot provide (<cublas_v2.h>) so that a file which includes one
but never calls it builds. Where the kernels do call into such a header, the compiler's
"not declared" is told as what it is: the include line, and what brrr does provide on the CPU.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..base.assets import CPU_INCLUDE
from ..base.files import shown, write_atomic
from . import builder
from .cpu_source import masked, rewrite

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]', re.M)


@dataclass(frozen=True)
class Includes:
    """The folders a CPU build puts first on its include path, and the headers stood in for."""

    folders: tuple[Path, ...]
    stubbed: dict[str, str]  # header -> "file:line" of the first include of it
    # Of those, the ones included only in a branch a HIP (ROCm) build takes: never read by this build,
    # so never the reason a name is undeclared.
    hip_only: frozenset[str] = frozenset()

    @property
    def flags(self) -> list[str]:
        return [f"-I{f}" for f in self.folders]


def local_headers(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in builder.HEADER_SUFFIXES and p.is_file())


@lru_cache(maxsize=1)
def _system_dirs() -> tuple[Path, ...]:
    """The host compiler's own include folders (where <vector> and <math.h> are found)."""
    proc = subprocess.run([builder.find_cxx(), "-xc++", "-E", "-v", "-"], input="", capture_output=True, text=True,
                          check=False)
    lines = proc.stderr.splitlines()
    try:
        start = lines.index("#include <...> search starts here:") + 1
        end = lines.index("End of search list.")
    except ValueError:
        return ()
    return tuple(Path(line.strip()) for line in lines[start:end])


def _findable(header: str, quoted_from: Path | None, dirs: list[Path]) -> bool:
    if quoted_from is not None and (quoted_from.parent / header).is_file():
        return True
    return any((d / header).exists() for d in dirs)


def prepare(op_folder: Path, sources: list[Path], name: str, extra_dirs: list[Path]) -> Includes:
    """Rewrite the folder's headers and stand in for unknown ones, into the cache: a folder named by
    what it holds (the headers' content, the stand-ins' names), never by the sources' text, so an
    edit of one source leaves the others' include path, compile command and object as they were."""
    headers = local_headers(op_folder)
    stubbed, reached = _stood_in(sources, headers, [CPU_INCLUDE, op_folder, *extra_dirs, *_system_dirs()])
    digest = hashlib.sha256()
    for h in headers:
        digest.update(str(h.relative_to(op_folder)).encode())
        digest.update(h.read_bytes())
    for header in sorted(stubbed):
        digest.update(f"stand-in {header}\0".encode())
    root = builder.cache_root() / "cpu-include" / f"{name}-{digest.hexdigest()[:16]}"
    rewritten, stubs = root / "local", root / "stubs"
    for h in headers:
        _write(rewritten / h.relative_to(op_folder), rewrite(h.read_text(errors="replace"), h, headers))
    for header in stubbed:
        _write(stubs / header, _note(header))
    # A stand-in an earlier brrr wrote for a header now found (brrr_kernel.cuh, before brrr's include
    # folder was searched) would still shadow the real one from this cached folder: removed.
    for old in [p for p in stubs.rglob("*") if p.is_file()] if stubs.is_dir() else []:
        if old.relative_to(stubs).as_posix() not in stubbed:
            old.unlink(missing_ok=True)
    return Includes((rewritten, stubs), stubbed, frozenset(stubbed) - reached)


def _stood_in(sources: list[Path], headers: list[Path], dirs: list[Path]) -> tuple[dict[str, str], set[str]]:
    """The headers the sources and the folder's headers include that no folder holds, each with
    "file:line" of its first include; and every header a CUDA build reads an include of."""
    stubbed: dict[str, str] = {}
    reached: set[str] = set()
    for source in [*sources, *headers]:
        text = source.read_text(errors="replace")
        mask = masked(text)
        for m in _INCLUDE.finditer(text):
            if mask[m.start():m.end()].lstrip()[:1] != "#":
                continue  # inside a comment
            header = m.group(2).strip()
            if not hip_branch(mask, m.start()):
                reached.add(header)
            if header in stubbed or _findable(header, source if m.group(1) == '"' else None, dirs):
                continue
            stubbed[header] = f"{shown(source)}:{text.count(chr(10), 0, m.start()) + 1}"
    return stubbed, reached


def _note(header: str) -> str:
    """A stand-in's text. It names no include line (explain does): the folder is named by what it
    holds, and a line that moved with an edit would rename it."""
    return (f"// brrr: <{header}> is not provided on the CPU (the op's sources include it). Empty, so a\n"
            f"// file that includes it but calls nothing of it builds.\n#pragma once\n")


def _write(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:
        write_atomic(path, text)


# Macros only a HIP (ROCm) build defines: the branch they select is never read by a CUDA build.
_HIP = {"USE_ROCM", "USE_HIP", "__HIPCC__", "__HIP__", "__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__",
        "__HIP_DEVICE_COMPILE__"}
_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b([^\n]*)", re.M)


def hip_branch(mask: str, pos: int) -> bool:
    """Whether `pos` lies in a branch only a HIP build takes: under `#ifdef USE_ROCM`, `#if
    defined(__HIPCC__) && ...`, or the #else of `#ifndef USE_ROCM`. Conditions of other macros (or a
    HIP one under ||) are not judged: their branch counts as read."""
    frames: list[list[bool]] = []  # per open #if: [this branch is HIP-only, the #else would be]
    for m in _CONDITIONAL.finditer(mask, 0, pos):
        kind, cond = m.group(1), m.group(2)
        hip = bool(set(re.findall(r"\w+", cond)) & _HIP) and "||" not in cond
        negated = kind == "ifndef" or "!" in cond
        if kind in ("if", "ifdef", "ifndef"):
            frames.append([hip and not negated, hip and negated and "&&" not in cond])
        elif kind == "elif" and frames:
            frames[-1] = [hip and not negated, False]
        elif kind == "else" and frames:
            frames[-1] = [frames[-1][1], False]
        elif kind == "endif" and frames:
            frames.pop()
    return any(f[0] for f in frames)


def provided() -> str:
    """The CUDA headers brrr's CPU build provides, for messages."""
    names = sorted(str(p.relative_to(CPU_INCLUDE)) for p in CPU_INCLUDE.rglob("*")
                   if p.is_file() and not p.name.startswith("brrr_") and p.suffix in ("", ".h", ".cuh"))
    return ", ".join(names)


# brrr's partial stand-ins, by the prefix of the names they leave out.
_PARTIAL_HEADERS = {"cublasLt": "cublasLt.h", "cublas": "cublas_v2.h"}
_PARTIAL = re.compile(r"['‘]((cublasLt|cublas)\w*)['’] was not declared")
_MISSING = re.compile(r"fatal error: ([^:\s]+): No such file or directory")


def explain(message: str, includes: Includes) -> str:
    """A compile error about a name the kernels use from a header brrr stood in for, or a header no
    folder holds (reached through another header): said as such, with what brrr provides."""
    if missing := _MISSING.search(message):
        return (f"{message}\nbrrr's CPU build does not provide <{missing.group(1)}> (the include chain above names the "
                f"line that pulls it in). brrr provides: {provided()}")
    if partial := _PARTIAL.search(message):
        return (f"{message}\nbrrr's CPU stand-in for <{_PARTIAL_HEADERS[partial.group(2)]}> declares its handles, types and "
                f"setup calls only: {partial.group(1)} is not provided on the CPU (a library routine, "
                f"not a kernel brrr can execute). brrr provides: {provided()}")
    if not includes.stubbed or not re.search(r"was not declared|does not name a type|has not been declared|"
                                             r"is not a member of", message):
        return message
    listed = "; ".join(f"<{h}> ({where})" for h, where in includes.stubbed.items() if h not in includes.hip_only)
    if not listed:
        return message
    return (f"{message}\nbrrr does not provide {listed} on the CPU, so what the code uses from it is undeclared. "
            f"brrr provides: {provided()}")
