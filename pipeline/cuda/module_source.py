"""A torch extension as its author wrote it (one .cu holding kernels, the torch wrapper and
PYBIND11_MODULE), made ready for brrr to build and load, without touching the kernel code:

- each `PYBIND11_MODULE(name, m) { ... }` becomes a plain function `brrr_user_module_K(m)` with the
  same body, so two modules never clash with each other or with brrr's, and a module declared twice
  is reported naming both lines (nvcc and g++ would refuse the second anyway);
- a host function named as a kernel is (nvcc tells them apart by execution space; C++ cannot) is
  renamed `NAME__host` wherever it is used, launches and kernel definitions keep NAME;
- brrr's own module is appended: it runs each user module's body and binds the functions the spec
  names that no module binds.

Every line keeps its number, so messages, faults and gdb name the .cu's own lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import BuildError
from ..base.files import shown
from .cpu_source import masked
from .tokens import kernel_names as declared_kernels

_MODULE = re.compile(r"\bPYBIND11_MODULE\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")


@dataclass(frozen=True)
class Module:
    """One PYBIND11_MODULE declaration: the name it gives, its module variable, where its header is."""

    name: str
    variable: str
    start: int
    end: int
    line: int


def modules(text: str) -> list[Module]:
    mask = masked(text)
    return [Module(m.group(1), m.group(2), m.start(), m.end(), mask.count("\n", 0, m.start()) + 1)
            for m in _MODULE.finditer(mask)]


def duplicated_module(text: str, path: Path) -> str | None:
    """The seed's own bug where a file declares its module twice: the message naming both lines, or None."""
    found = modules(text)
    if len(found) < 2:
        return None
    first, again = found[0], found[1]
    return (f"{shown(path)}:{again.line}: PYBIND11_MODULE({again.name}, {again.variable}) declares the module a second "
            f"time (first at line {first.line}): nvcc and g++ refuse the file as written (redefinition of "
            f"PyInit_{again.name}); delete one of them. brrr binds the functions itself, so the checks below still run")


def kernel_names(text: str) -> set[str]:
    return set(declared_kernels(text))


def _definition_heads(mask: str, name: str) -> list[int]:
    """Positions of `name(` that begin a function declaration or definition at namespace scope."""
    found, depth = [], 0
    depth_at = []
    for c in mask:
        depth_at.append(depth)
        depth += (c == "{") - (c == "}")
    for m in re.finditer(rf"(?<![\w:.>]){re.escape(name)}\s*\(", mask):
        before = mask[max(0, m.start() - 80):m.start()].rstrip()
        # A declaration's name follows its type: an identifier, '*', '&' or '>' (not an operator or '(' of a call).
        if depth_at[m.start()] == 0 and before and (before[-1].isalnum() or before[-1] in "_*&>"):
            if not before.endswith(("return", "<<<")):
                found.append(m.start())
    return found


def host_twins(text: str) -> set[str]:
    """Kernel names that a host function of the same file also has (nvcc accepts it; C++ sees one overload set)."""
    mask = masked(text)
    twins = set()
    for name in kernel_names(text):
        heads = _definition_heads(mask, name)
        if any(not re.search(r"\b__global__\b[^;{}]*$", mask[max(0, h - 300):h]) for h in heads):
            twins.add(name)
    return twins


def _launch_sites(mask: str, name: str) -> set[int]:
    """Where `name` (with template arguments) is launched: name<...><<<."""
    return {m.start() for m in re.finditer(rf"(?<![\w:.]){re.escape(name)}\s*(<[^;{{}}]*?>)?\s*<<<", mask)}


def rename_host_twins(text: str) -> tuple[str, dict[str, str]]:
    """Rename every use of a host function named as a kernel to NAME__host, except the kernel's own
    declarations and its launches; the map from old to new names."""
    twins = host_twins(text)
    if not twins:
        return text, {}
    mask = masked(text)
    spans = []
    for name in sorted(twins):
        keep = _launch_sites(mask, name)
        for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\b", mask):
            if m.start() in keep or re.search(r"\b__global__\b[^;{}]*$", mask[max(0, m.start() - 300):m.start()]):
                continue
            spans.append((m.start(), m.end(), f"{name}__host"))
    out, at = [], 0
    for start, end, new in sorted(spans):
        out += [text[at:start], new]
        at = end
    return "".join(out) + text[at:], {n: f"{n}__host" for n in twins}


_NAMESPACE_OPEN = re.compile(r"\bnamespace\s+([\w:]+)\s*\{|\bnamespace\s*\{")


def defining_namespace(mask: str, name: str) -> str:
    """The namespace prefix ("extension_cpp::", or "") of the first definition of function `name` in
    `mask`, so a spec may name a function by its bare name wherever the author put it (TORCH_LIBRARY
    projects keep their wrappers in a namespace). An anonymous namespace needs no prefix."""
    head = re.search(rf"(?<![\w:.>]){re.escape(name)}\s*\([^;{{}}]*\)\s*(const\s*)?(noexcept\s*)?\{{", mask)
    if head is None:
        return ""
    opens = {m.end() - 1: m.group(1) or "" for m in _NAMESPACE_OPEN.finditer(mask, 0, head.start())}
    stack: list[str | None] = []  # one entry an open brace: its namespace's name, None for other braces
    for k, c in enumerate(mask[:head.start()]):
        if c == "{":
            stack.append(opens.get(k))
        elif c == "}" and stack:
            stack.pop()
    return "".join(f"{n}::" for n in stack if n)


def module_text(text: str, path: Path, module_name: str, functions: tuple[str, ...]) -> str:
    """The .cu's text as brrr builds it: user modules as functions, host twins renamed, brrr's module appended.
    `functions` are the names the spec gives that brrr must bind (those no user module defines)."""
    text, renamed = rename_host_twins(text)
    found = modules(text)
    out, at = [], 0
    for k, m in enumerate(found):
        out += [text[at:m.start], f"[[maybe_unused]] static void brrr_user_module_{k}(::pybind11::module_& {m.variable})"]
        at = m.end
    body = "".join(out) + text[at:]
    defined = set(re.findall(r'\.\s*def\s*\(\s*"(\w+)"', body))
    calls = [f"brrr_user_module_{k}(m);" for k in range(min(len(found), 1))]  # a second module is the seed's bug
    for name in functions:
        bare = name.rsplit("::", 1)[-1]  # a function in a namespace is bound by its own name
        if bare in defined:
            continue
        if not re.search(rf"\b{re.escape(renamed.get(bare, bare))}\s*\(", masked(body)):
            raise BuildError(f"{shown(path)}: the spec names {name}, which this file neither defines nor binds",
                             hint="name a function of the file, or one its PYBIND11_MODULE defines with m.def(\"NAME\", ...)")
        qualified = name[: -len(bare)] or defining_namespace(masked(body), renamed.get(bare, bare))
        qualified += renamed.get(bare, bare)
        calls.append(f'm.def("{bare}", &{qualified});')
    # torch/extension.h for pybind11: a TORCH_LIBRARY project's .cu includes torch/library.h alone.
    glue = (f'\n#include <torch/extension.h>\n#line 1 "brrr: the module brrr binds"\n'
            f'PYBIND11_MODULE({module_name}, m) {{ {" ".join(calls)} }}\n')
    return body + glue


def on_the_cpu(text: str, path: Path, torch: bool = True) -> str:
    """module_text for the CPU execution: torch first, then `x.is_cuda()` reads true for the CPU tensors
    that stand for device memory there, so a wrapper's TORCH_CHECK(x.is_cuda(), ...) passes as on a GPU,
    and `torch::RestrictPtrTraits` names an accessor's pointer traits as nvcc's torch does. `torch`
    False: a source that reaches no torch header (uses_torch) is compiled without them (a minute of
    parsing on 2 cores, for kernels that never name a tensor)."""
    quoted = str(path.resolve()).replace("\\", "\\\\").replace('"', '\\"')
    # torch declares RestrictPtrTraits (packed_accessor's __restrict__ pointers) for nvcc only; on the
    # CPU the default traits are the same accessor without the aliasing promise.
    prelude = ("#include <torch/extension.h>\n" if torch else "") + \
        "#define is_cuda() is_cpu()\n#define RestrictPtrTraits DefaultPtrTraits\n"
    return f'{prelude}#line 1 "{quoted}"\n{cuda_device_as_cpu(text)}'


_TORCH_HEADER = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](torch/|ATen/|c10/|pybind11/|Python\.h)', re.M)


def uses_torch(text: str) -> bool:
    """Whether `text` includes a header of torch, ATen, c10, pybind11 or Python."""
    mask = masked(text)
    return any(mask[m.start():m.end()].lstrip().startswith("#") for m in _TORCH_HEADER.finditer(text))


# The device type a wrapper compares against or allocates on, in code (not in strings or comments).
_CUDA_DEVICE = re.compile(r"\b(?:DeviceType::CUDA|kCUDA)\b")
# `x.type().is_cuda()`, older extensions' check (the deprecated type properties have no is_cpu()).
_TYPE_IS_CUDA = re.compile(r"\.\s*type\s*\(\s*\)\s*\.\s*is_cuda\s*\(\s*\)")


def cuda_device_as_cpu(text: str) -> str:
    """`DeviceType::CUDA` and `kCUDA` as their CPU counterparts, for the same reason as `is_cuda()`: a
    wrapper's `TORCH_CHECK(x.device().type() == at::DeviceType::CUDA)` or `x.device() == torch::kCUDA`
    holds of the CPU tensors standing for device memory, and an output it allocates on `kCUDA` lands
    where the kernels run; `x.type().is_cuda()` becomes `x.is_cuda()`, which reads true there too.
    No line break is added or removed, so every line keeps its number."""
    mask = masked(text)
    spans = [(m.start(), m.end(), text[m.start():m.end()].replace("CUDA", "CPU")) for m in _CUDA_DEVICE.finditer(mask)]
    spans += [(m.start(), m.end(), ".is_cuda()") for m in _TYPE_IS_CUDA.finditer(mask) if "\n" not in m.group(0)]
    out, at = [], 0
    for start, end, new in sorted(spans):
        out += [text[at:start], new]
        at = end
    return "".join(out) + text[at:]
