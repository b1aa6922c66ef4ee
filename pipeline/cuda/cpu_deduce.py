"""Template kernels launched without template arguments, for the CPU execution.

`kernel<<<grid, block>>>(w, k, y)` with `template <typename F> __global__ void kernel(const F* w, ...)`
deduces F from the arguments, as any call does. The CPU's launch takes the kernel as a function
pointer (brrr_cpu.h: launch), and C++ deduces nothing from a template's bare name there. So for each
template kernel of a file, a declaration of the same template parameters and function parameters is
added after the kernel, whose return type carries the specialization a call would pick:

    template <typename F> auto __brrr_deduce_kernel(const F* w, ...)
        -> ::std::integral_constant<decltype(&kernel<F>), &kernel<F>>;

and the launch passes `decltype(__brrr_deduce_kernel(w, k, y))::value`: the same deduction as the
GPU's, from the same parameters (never evaluated, never defined). One per kernel name, from its first
declaration, on the line where that declaration ends, so every later line keeps its number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .tokens import matching, split_top

PREFIX = "__brrr_deduce_"  # a shim's name is this and its kernel's (builder.compiler_errors takes it off)
_TEMPLATE = re.compile(r"\btemplate\s*<")
_CALLED = re.compile(r"\b(\w+)\s*\(")
_ATTRIBUTE = re.compile(r"__\w+__")


@dataclass(frozen=True)
class Shim:
    kernel: str
    name: str  # the declaration's name: what a launch's decltype calls
    at: int  # where it goes: just past the kernel's declaration or definition
    text: str


def _flat(text: str) -> str:
    return " ".join(text.split())


def _argument_names(template_params: str) -> list[str] | None:
    """`F`, `N`, `Ts...` for `typename F, int N = 4, typename... Ts`; None where one has no name."""
    names = []
    for part in split_top(template_params, angles=True):
        head = part.split("=")[0].strip()
        m = re.search(r"(\w+)\s*$", head)
        if not m or m.group(1) in ("typename", "class"):
            return None
        names.append(m.group(1) + ("..." if "..." in head else ""))
    return names


def _declaration(mask: str, after: int) -> tuple[str, int, int, int] | None:
    """The kernel declared after a template header: (name, its parameter list's '(' and ')', and
    where the declaration ends), or None where what follows is no __global__ function."""
    stop = min([p for p in (mask.find("{", after), mask.find(";", after)) if p >= 0], default=-1)
    if stop < 0 or not re.search(r"\b__global__\b", mask[after:stop]):
        return None
    at = after
    while (m := _CALLED.search(mask, at, stop)) is not None:
        paren = m.end() - 1
        close = matching(mask, paren)
        if close < 0:
            return None
        if not _ATTRIBUTE.fullmatch(m.group(1)):
            end = stop if mask[stop] == ";" else matching(mask, stop, "{}")
            return (m.group(1), paren, close, end + 1) if end >= 0 else None
        at = close + 1  # __launch_bounds__(...), __cluster_dims__(...): not the name
    return None


def deducing_shims(mask: str) -> list[Shim]:
    """One shim per template kernel of the (comment-masked) source, in order."""
    shims: dict[str, Shim] = {}
    for m in _TEMPLATE.finditer(mask):
        open_at = m.end() - 1
        close_at = matching(mask, open_at, "<>")
        found = _declaration(mask, close_at + 1) if close_at > 0 else None
        if found is None or found[0] in shims:
            continue
        kernel, paren, close, end = found
        template_params = _flat(mask[open_at + 1:close_at])
        names = _argument_names(template_params)
        if names is None:
            continue
        name = f"{PREFIX}{kernel}"
        specialization = f"&{kernel}<{', '.join(names)}>"
        text = (f" template <{template_params}> auto {name}({_flat(mask[paren + 1:close])}) -> "
                f"::std::integral_constant<decltype({specialization}), {specialization}>;")
        shims[kernel] = Shim(kernel, name, end, text)
    return list(shims.values())
