"""The macros a source's #ifdef / #ifndef branches need defined for one of its lines to compile: a .cu
that is a test program by default and a torch extension only under a macro its build passes
(LeetCUDA: `#ifndef NO_MMA_HGEMM_BIN` around main(), the torch wrappers in its `#else`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..cuda.tokens import masked

_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif)\b[ \t]*(\w*)")


@dataclass(frozen=True)
class Selecting:
    """A macro that must be defined, and the directive that says so (for a spec.py comment)."""

    macro: str
    directive: str
    line: int


def selecting_macros(text: str, line: int) -> list[Selecting]:
    """The macros `line` of `text` needs defined: X of an enclosing `#ifdef X` it is in the first branch
    of, or `#ifndef X` it is in the #else of. Branches of `#if` expressions are not judged."""
    open_: list[tuple[str, str, int, bool]] = []  # (directive, macro, line, in the #else)
    for n, code in enumerate(masked(text).splitlines()[:max(0, line - 1)], 1):
        m = _DIRECTIVE.match(code)
        if not m:
            continue
        kind, name = m.groups()
        if kind in ("ifdef", "ifndef", "if"):
            open_.append((kind, name, n, False))
        elif kind in ("else", "elif") and open_:
            open_[-1] = (*open_[-1][:3], True)
        elif kind == "endif" and open_:
            open_.pop()
    return [Selecting(name, f"#{kind} {name}", n) for kind, name, n, in_else in open_
            if name and (kind, in_else) in (("ifdef", False), ("ifndef", True))]
