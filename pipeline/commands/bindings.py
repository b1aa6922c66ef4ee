"""The Python names an extension's module binds, read from its PYBIND11_MODULE / TORCH_LIBRARY blocks.

Most authors write `m.def("name", &function)` where brrr adopt's regular expressions read it. Some
bind through a macro of their own (`#define BIND(f) m.def(#f, &f)`, a registration macro for many
dtypes): those calls are read after the C preprocessor has expanded them, with the macros of the
project's own files (the source and the headers it includes by quotes) and nothing else, so no
torch or CUDA header is needed and it takes milliseconds. What is still a macro call afterwards (a
macro from a header outside the project) is returned as unread, so adopt can say so by line.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..cuda.builder import find_cxx
from ..cuda.tokens import masked

# m.def("name", &function) in a PYBIND11_MODULE, m.impl("name", &function) or TORCH_FN(function) in
# a TORCH_LIBRARY(_IMPL).
DEFINED = re.compile(r'\.\s*def\s*\(\s*"(\w+)"')
# The function may be wrapped: TORCH_FN(f), torch::wrap_pybind_function(f) (a GIL release, as
# flash-attention-minimal binds its forward).
BOUND = re.compile(r'\.\s*(def|impl)\s*\(\s*"(\w+)"\s*,\s*(?:(?:TORCH_FN|(?:torch::)?wrap_pybind_function)\s*\(\s*)?'
                   r'&?\s*([\w:]+)')
_MODULE = re.compile(r"\b(PYBIND11_MODULE|TORCH_LIBRARY|TORCH_LIBRARY_IMPL|TORCH_LIBRARY_FRAGMENT)\s*\(")
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(?:define|undef)\b(?:[^\n]*\\\n)*[^\n]*", re.M)
# A macro's call: an upper-case name and its parenthesis (a function of the author's is lower or mixed case).
_MACRO_CALL = re.compile(r"\b([A-Z_][A-Z0-9_]{2,})\s*\(")
# Macros a binding may hold that BOUND reads as they are, or that name no function.
_KNOWN = {"TORCH_FN", "TORCH_SELECTIVE_NAME", "TORCH_SELECTIVE_SCHEMA", "TORCH_EXTENSION_NAME"}
EXPAND_TIMEOUT_S = 30


@dataclass(frozen=True)
class Block:
    """One module declaration: where it starts, and its text through its closing brace."""

    line: int
    text: str


def module_blocks(text: str) -> list[Block]:
    """The PYBIND11_MODULE / TORCH_LIBRARY* blocks of a source, outside comments and strings."""
    mask = masked(text)
    blocks = []
    for m in _MODULE.finditer(mask):
        open_at = mask.find("{", m.end())
        if open_at < 0:
            continue
        depth = 0
        for end in range(open_at, len(mask)):
            depth += (mask[end] == "{") - (mask[end] == "}")
            if depth == 0:
                blocks.append(Block(text.count("\n", 0, m.start()) + 1, text[m.start():end + 1]))
                break
    return blocks


def macro_calls(block: str) -> list[str]:
    """The macro calls that are statements of a block's body (a TORCH_CHECK inside a bound lambda is
    not one), other than those BOUND reads."""
    body = masked(block[block.find("{"):])
    found, parens, braces, at = [], 0, 0, 0
    for m in _MACRO_CALL.finditer(body):
        for c in body[at:m.start()]:
            parens += (c == "(") - (c == ")")
            braces += (c == "{") - (c == "}")
        at = m.start()
        if parens == 0 and braces == 1 and m.group(1) not in _KNOWN:
            found.append(m.group(1))
    return found


def directives(files: list[Path]) -> str:
    """The #define and #undef lines of the files, in order (continuation lines kept)."""
    return "\n".join(m.group(0) for f in files for m in _DIRECTIVE.finditer(f.read_text(errors="replace")))


def expanded(block: Block, defines: str) -> str | None:
    """The block after the preprocessor, with the project's macros; None where no compiler could run it."""
    # -undef: none of the compiler's own macros; the block's #line keeps its own line numbers.
    text = f"{defines}\n#line {block.line}\n{block.text}\n"
    try:
        proc = subprocess.run([find_cxx(), "-E", "-P", "-undef", "-x", "c++", "-"], input=text, capture_output=True,
                              text=True, timeout=EXPAND_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


@dataclass(frozen=True)
class Bindings:
    """What the macro calls of a source's module blocks bind, through the preprocessor: (def or impl,
    Python name, C++ function) for each binding read, the names bound to a lambda, and each macro
    call still unread after it, as "FILE:LINE: MACRO(...)"."""

    bound: list[tuple[str, str, str]]
    lambdas: list[str]
    unread: list[str]


def macro_bindings(source: Path, headers: list[Path]) -> Bindings:
    """The bindings made by macro calls in `source`'s module blocks (those written out are read from
    the text itself), expanded with the project's own macros."""
    text = source.read_text(errors="replace")
    bound, lambdas, unread = [], [], []
    for block in module_blocks(text):
        if not macro_calls(block.text):
            continue
        body = expanded(block, directives([*headers, source])) or block.text
        for name in dict.fromkeys(macro_calls(body)):
            at = block.line + block.text[:block.text.find(name, block.text.find("{"))].count("\n")
            unread.append(f"{source.name}:{at}: {name}(...)")
        bound += [(m.group(1), m.group(2), m.group(3)) for m in _in_code(BOUND, body)]
        lambdas += [m.group(1) for m in _in_code(DEFINED, body)]
    return Bindings(bound, lambdas, unread)


def _in_code(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    mask = masked(text)
    return [m for m in pattern.finditer(text) if mask[m.start():m.end()].strip()[:1] == "."]
