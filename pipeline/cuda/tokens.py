"""The one reader of CUDA C++ source (kernel.cu, its headers, inline asm): comments and literals masked
with positions kept, the bracket that closes one, tokens, top-level splits, and the kernels a file
defines. The CPU build, brrr mutate and the gdb debugger all read kernel.cu through it, so they agree
on what is code."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal


def masked(text: str) -> str:
    """`text` with comments, string and character literals blanked (newlines kept): positions match."""
    out = list(text)
    i, n = 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                i += 1
                continue
            close = ")" + m.group(1) + '"'
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            blank(i + 1, j)
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000'000
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            blank(i + 1, min(j, n))
            i = j + 1
        else:
            i += 1
    return "".join(out)


TokenKind = Literal["number", "ident", "op"]

# Over masked text: literals are blank between their quotes, comments are blank.
_TOKEN = re.compile(r"""
   (?P<pre>^[ \t]*\#[^\n]*(?:\\\n[^\n]*)*)
  |(?P<string>"[^"\n]*"|'[^'\n]*')
  |(?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[fFlLuU]*)
  |(?P<ident>[A-Za-z_]\w*)
  |(?P<op><<<|>>>|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|::|[^\s\w])
  |(?P<space>\s+)
""", re.M | re.X)


@dataclass(frozen=True)
class Token:
    kind: TokenKind
    text: str
    start: int  # offsets into the source
    end: int


def matching(mask: str, open_at: int, pair: str = "()") -> int:
    """Index of the bracket closing the one at `open_at`, or -1."""
    depth = 0
    for k in range(open_at, len(mask)):
        if mask[k] == pair[0]:
            depth += 1
        elif mask[k] == pair[1]:
            depth -= 1
            if depth == 0:
                return k
    return -1


def tokens(text: str) -> list[Token]:
    """C++ tokens, without comments, preprocessor lines, string or character literals, or white space."""
    return [Token(m.lastgroup, m.group(), m.start(), m.end())  # type: ignore[arg-type]
            for m in _TOKEN.finditer(masked(text)) if m.lastgroup in ("number", "ident", "op")]


def split_top(text: str, sep: str = ",", angles: bool = False) -> list[str]:
    """`text` split at `sep` outside brackets ((), [], {}, and <> with `angles`), string literals and
    comments. With ':' (an asm statement's sections) every colon splits: `::` is two empty sections there."""
    mask = masked(text)
    opening, closing = ("([{<", ")]}>") if angles else ("([{", ")]}")
    parts, depth, start = [], 0, 0
    for k, c in enumerate(mask):
        if c in opening:
            depth += 1
        elif c in closing:
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return parts


_ATTRIBUTE = re.compile(r"__\w+__")


def kernel_names(source: str) -> list[str]:
    """The __global__ functions a file defines or declares, by name, in order of first appearance."""
    toks, found = tokens(source), []
    for i, t in enumerate(toks):
        if t.text != "__global__":
            continue
        depth, j = 0, i + 1
        while j < len(toks):
            u = toks[j].text
            if _ATTRIBUTE.fullmatch(u) and j + 1 < len(toks) and toks[j + 1].text == "(":
                # __launch_bounds__(...), __cluster_dims__(...), __attribute__((...)): skipped whole
                parens, j = 0, j + 1
                while j < len(toks):
                    parens += {"(": 1, ")": -1}.get(toks[j].text, 0)
                    if parens == 0:
                        break
                    j += 1
            elif u == "<":
                depth += 1
            elif u in (">", ">>"):
                depth -= len(u)
            elif u == "(" and depth <= 0:
                if toks[j - 1].kind == "ident":
                    found.append(toks[j - 1].text)
                break
            elif u in (";", "{"):
                break
            j += 1
    return list(dict.fromkeys(found))
