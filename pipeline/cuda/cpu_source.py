"""kernel.cu as C++ the host compiler can build for the CPU execution of the cuda stage.

Only what CUDA's syntax needs is rewritten; everything else is compiled as written, against the
stand-in headers in include/cpu/ (see brrr_cpu.h):

- `kernel<<<grid, block, smem, stream>>>(args)` becomes `::brrr_cpu::launch(config, site, kernel, args)`;
  `cudaLaunchKernel((void*)kernel, ...)` loses the cast (the CPU needs the kernel's type);
- a `__shared__` declaration becomes a reference to per-block storage (`extern __shared__`, a
  pointer to the launch's dynamic shared memory);
- an `asm` statement with a PTX instruction brrr knows becomes the same computation in C++;
- `__cluster_dims__(...)` and `__launch_bounds__(max_threads, ...)` on a kernel add a first statement
  telling the runtime the cluster shape, or checking the block against the bound (a GPU refuses more).

Every line keeps its number and a `#line` directive names the original kernel.cu, so compiler
errors, runtime faults and gdb all point at kernel.cu. A construct brrr cannot rewrite is a
CpuSourceError naming kernel.cu and the line, never a silently different program.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import BuildError
from ..base.files import shown
from .cpu_deduce import deducing_shims
from .cpu_ptx import SCALAR, UnsupportedPtx, translate
from .cpu_ptx import operands as ptx_operands
from .tokens import masked, matching, split_top

# A macro's line continued: a backslash just before the line break.
_SPLICE = re.compile(r"\\\r?\n")
_STRING_MACRO = re.compile(r'^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+((?:"(?:[^"\\\n]|\\.)*"[ \t]*)+)$', re.M)
_LINE_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*line[ \t]+(\d+)[^\n]*\n", re.M)


class CpuSourceError(BuildError):
    """kernel.cu uses something the CPU execution does not support (exit 1, like a compile error)."""


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str


def _c_string(text: str) -> str:
    flat = " ".join(text.split())
    return '"' + flat.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Rewriter:
    def __init__(self, text: str, path: Path) -> None:
        self.text = text
        self.mask = masked(text)
        self.path = path
        self.edits: list[_Edit] = []
        self.counter = 0
        # Template kernels a launch may name without template arguments (cpu_deduce.py).
        self.deduce: dict[str, str] = {}
        # `#define NAME "text"`: names an asm template may paste between its literals.
        self.string_macros = {m.group(1): "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(2)))
                              for m in _STRING_MACRO.finditer(text)}

    def line_of(self, pos: int) -> int:
        """The line a compiler would name for `pos`: after a `#line N` directive (a wrapper's prelude ends
        with one, module_source.on_the_cpu), counted from N."""
        directive = next(reversed(list(_LINE_DIRECTIVE.finditer(self.mask, 0, pos))), None)
        if directive is None:
            return self.text.count("\n", 0, pos) + 1
        return int(directive.group(1)) + self.text.count("\n", directive.end(), pos)

    def error(self, pos: int, what: str, hint: str | None = None) -> CpuSourceError:
        return CpuSourceError(f"{shown(self.path)}:{self.line_of(pos)}: not supported on the CPU: {what}", hint=hint)

    def keep_lines(self, start: int, end: int, replacement: str) -> _Edit:
        """Replace text[start:end], padding with the newlines it had so that later lines keep their numbers;
        inside a macro (its lines continued by a backslash) the padding continues the macro too."""
        missing = self.text.count("\n", start, end) - replacement.count("\n")
        assert missing >= 0, "a rewrite must not add lines"
        splice = "\\\n" if _SPLICE.search(self.text, start, end) else "\n"
        return _Edit(start, end, replacement + splice * missing)

    # -- kernel<<<...>>>(...) --------------------------------------------------------------------

    def launches(self) -> None:
        for m in re.finditer(r"<<<", self.mask):
            start = m.start()
            close = self.mask.find(">>>", m.end())
            if close < 0:
                raise self.error(start, "a '<<<' without its '>>>'")
            config = self.text[m.end():close]
            # The config on the launch's first line, its line breaks after it: the arguments keep their
            # lines. In a macro (`KERNEL<T> \\` then `<<<grid, block>>>(...)` on the next line), the breaks
            # are the macro's continued lines, padded as such after the call (keep_lines).
            in_macro = bool(_SPLICE.search(self.text, self._kernel_start(start), close))
            config = " ".join(_SPLICE.sub(" ", config).split()) + ")" + ("" if in_macro else "\n" * config.count("\n"))
            paren = close + 3
            while paren < len(self.mask) and self.mask[paren].isspace():
                paren += 1
            if paren >= len(self.mask) or self.mask[paren] != "(":
                raise self.error(start, "a kernel launch without an argument list after '>>>'")
            end = matching(self.mask, paren)
            if end < 0:
                raise self.error(start, "a kernel launch whose argument list is not closed")
            kstart = self._kernel_start(start)
            kernel = " ".join(_SPLICE.sub(" ", self.text[kstart:start]).split())
            if not kernel:
                raise self.error(start, "a kernel launch whose kernel is not a name (a function pointer or an expression)",
                                 hint="launch a kernel by its name: name<<<grid, block>>>(...) or name<T><<<...>>>(...)")
            args = self.text[paren + 1:end]
            shown_args = _c_string(_SPLICE.sub(" ", args))
            site = f"::brrr_cpu::Site{{__FILE__, {self.line_of(kstart)}, {_c_string(kernel)}, {shown_args}}}"
            pointer = kernel
            # A template kernel by its bare name, or with its first template arguments only: the rest
            # deduced from the arguments (cpu_deduce.py).
            named = re.fullmatch(r"(\w+)\s*(<.*>)?", " ".join(_SPLICE.sub(" ", self.mask[kstart:start]).split()), re.S)
            if named and named.group(1) in self.deduce:
                pointer = (f"decltype({self.deduce[named.group(1)]}{named.group(2) or ''}"
                           f"({' '.join(_SPLICE.sub(' ', self.mask[paren + 1:end]).split())}))::value")
            call = (f"::brrr_cpu::launch(::brrr_cpu::LaunchConfig({config}, {site}, {pointer}"
                    + (f", {args})" if args.strip() else ")"))
            self.edits.append(self.keep_lines(kstart, end + 1, call))

    # -- cudaLaunchKernel((void*)kernel, ...) ---------------------------------------------------
    # The CPU unpacks the argument array by the kernel's own type (brrr_cpu.h: launch_with_array), so
    # a cast of the kernel to void* in a launch call's first argument is taken off.
    _VOID_CAST = re.compile(r"\(\s*(?:const\s+)?void\s*\*\s*\)|(?:reinterpret|static)_cast\s*<\s*(?:const\s+)?void\s*\*\s*>")

    def void_kernels(self) -> None:
        for m in re.finditer(r"\bcudaLaunch(?:Cooperative)?Kernel\s*\(\s*", self.mask):
            cast = self._VOID_CAST.match(self.mask, m.end())
            if cast:
                self.edits.append(_Edit(cast.start(), cast.end(), " " * (cast.end() - cast.start())))

    def _back_over_space(self, k: int) -> int:
        """Back from k over white space and a macro's continued lines (a backslash before a line break)."""
        while k > 0 and (self.mask[k - 1].isspace() or (self.mask[k - 1] == "\\" and self.mask[k:k + 1] in "\r\n")):
            k -= 1
        return k

    def _kernel_start(self, lt: int) -> int:
        """Where the kernel expression before '<<<' begins: a qualified name with template arguments."""
        k = self._back_over_space(lt)
        while True:
            if k > 0 and self.mask[k - 1] == ">":
                depth = 0
                j = k - 1
                while j >= 0:
                    if self.mask[j] == ">":
                        depth += 1
                    elif self.mask[j] == "<":
                        depth -= 1
                        if depth == 0:
                            break
                    elif self.mask[j] in ";{}":
                        return lt
                    j -= 1
                k = self._back_over_space(j)
            j = k
            while j > 0 and (self.mask[j - 1].isalnum() or self.mask[j - 1] == "_"):
                j -= 1
            if j == k:
                return k
            k = j
            # A name pasted in a macro (NAME_##type##_kernel<<<...>>>): the pasted parts belong to it.
            if k >= 2 and self.mask[k - 2:k] == "##":
                k -= 2
                continue
            if k >= 2 and self.mask[k - 2:k] == "::":
                k -= 2
                continue
            return k

    # -- __cluster_dims__(x, y, z) -------------------------------------------------------------------
    # Not C++: taken off the declaration, and the kernel's body starts by telling the runtime its shape
    # (brrr_cpu::cluster_dims_declared: a launch without a cluster shape learns it there and runs again).
    _ATTRIBUTE = re.compile(r"__\w+__")

    def cluster_dims(self) -> None:
        for m in re.finditer(r"\b__cluster_dims__\s*\(", self.mask):
            close = matching(self.mask, m.end() - 1)
            if close < 0:
                raise self.error(m.start(), "a __cluster_dims__( without its ')'")
            parts = [p.strip() for p in split_top(self.text[m.end():close])]
            if not 1 <= len(parts) <= 3 or not all(parts):
                raise self.error(m.start(), "__cluster_dims__ takes one to three dimensions",
                                 hint="__cluster_dims__(x), (x, y) or (x, y, z), as CUDA takes it")
            dims = f"dim3({', '.join(parts)})"
            self.edits.append(self.keep_lines(m.start(), close + 1, ""))
            params = self._declared_function(close + 1)
            if params < 0:
                raise self.error(m.start(), "__cluster_dims__ not on a kernel's declaration brrr can read",
                                 hint="write it as CUDA's samples do: __global__ void __cluster_dims__(2, 1, 1) name(...)")
            end = params + 1
            while end < len(self.mask) and self.mask[end] not in "{;":
                end += 1
            if end < len(self.mask) and self.mask[end] == "{":
                self.edits.append(_Edit(end + 1, end + 1,
                                        f" ::brrr_cpu::cluster_dims_declared({dims}, __FILE__, __LINE__);"))

    # -- __launch_bounds__(max_threads, ...) -----------------------------------------------------------
    # Defined away for g++ (brrr_cpu_host.h); the kernel's body starts by checking its block against the
    # bound (brrr_cpu::launch_bounds_declared), as a GPU refuses a larger block.
    def launch_bounds(self) -> None:
        for m in re.finditer(r"\b__launch_bounds__\s*\(", self.mask):
            close = matching(self.mask, m.end() - 1)
            parts = [p.strip() for p in split_top(self.text[m.end():close])] if close > 0 else []
            params = self._declared_function(close + 1) if parts and parts[0] else -1
            if params < 0:
                continue  # in a macro, or not on a declaration brrr reads: a GPU still checks it
            end = params + 1
            while end < len(self.mask) and self.mask[end] not in "{;":
                end += 1
            if end < len(self.mask) and self.mask[end] == "{":
                self.edits.append(_Edit(end + 1, end + 1, f" ::brrr_cpu::launch_bounds_declared(static_cast<unsigned "
                                                          f"long long>({parts[0]}), __FILE__, __LINE__);"))

    def _declared_function(self, at: int) -> int:
        """Where the parameter list of the function declared after `at` closes (other __attributes__(...)
        skipped); -1 if there is none."""
        while True:
            paren = self.mask.find("(", at)
            if paren < 0 or any(c in self.mask[at:paren] for c in ";{}"):
                return -1
            name = re.search(r"([A-Za-z_]\w*)\s*$", self.mask[at:paren])
            if not name:
                return -1
            close = matching(self.mask, paren)
            if not self._ATTRIBUTE.fullmatch(name.group(1)):
                return close
            at = close + 1

    # -- __shared__ --------------------------------------------------------------------------------

    def shared(self) -> None:
        for m in re.finditer(r"\b__shared__\b", self.mask):
            self._shared_declaration(m.start())

    def _in_code(self, pos: int) -> bool:
        """Inside a function body (not at namespace or class scope)."""
        kinds: list[str] = []
        for k in range(pos):
            c = self.mask[k]
            if c == "{":
                before = self.mask[max(0, k - 200):k]
                if re.search(r"\bnamespace\b[\w\s:]*$", before) or re.search(r'extern\s*$', before):
                    kinds.append("namespace")
                elif re.search(r"\b(struct|class|union|enum)\b[^;{}()]*$", before):
                    kinds.append("class")
                else:
                    kinds.append("code")
            elif c == "}" and kinds:
                kinds.pop()
        return "code" in kinds

    def _shared_declaration(self, pos: int) -> None:
        start = max(self.mask.rfind(c, 0, pos) for c in ";{}") + 1
        # A preprocessor line before the declaration is not part of it.
        line_start = self.mask.rfind("\n", 0, pos) + 1
        if self.mask[start:line_start].lstrip().startswith("#"):
            start = line_start
        end = self.mask.find(";", pos)
        # A struct or union defined in the declaration (`__shared__ union { typename A::TempStorage a;
        # typename B::TempStorage b; } temp;`): its members' ';' are not the declaration's.
        body = self.mask.find("{", pos)
        if 0 <= body < end:
            close = matching(self.mask, body, "{}")
            end = self.mask.find(";", close) if close >= 0 else -1
        if end < 0:
            raise self.error(pos, "a __shared__ declaration without its ';'")
        while start < pos and self.mask[start].isspace():
            start += 1
        if not self._in_code(pos):
            raise self.error(pos, "a __shared__ variable outside a function body",
                             hint="declare __shared__ variables inside the kernel (or a __device__ function)")
        decl = self.mask[start:end]
        if "=" in decl:
            raise self.error(pos, "a __shared__ variable with an initializer (CUDA does not allow one either)")
        source = decl  # comments blanked: a declaration has no string literals
        is_extern = re.search(r"\bextern\b", source) is not None
        align = "0"
        am = re.search(r"(__align__|alignas)\s*\(([^()]*)\)", source) or re.search(
            r"__attribute__\s*\(\(\s*aligned\s*\(([^()]*)\)\s*\)\)", source)
        if am:
            align = am.group(am.lastindex or 1)
            source = source[:am.start()] + source[am.end():]
        source = re.sub(r"\b(__shared__|extern|static)\b", " ", source)
        parts = split_top(source, angles=True)
        first = re.match(r"^(?P<type>.*?[\w>*&\s])\s*\b(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\]\s*)*)$",
                         parts[0].strip(), re.S)
        if not first or not first.group("type").strip():
            raise self.error(pos, f"this form of __shared__ declaration ({' '.join(self.text[start:end].split())})",
                             hint="write it as: __shared__ TYPE NAME[N]...;")
        base = " ".join(first.group("type").split())
        declarators = [(first.group("name"), first.group("dims"))]
        for extra in parts[1:]:
            dm = re.match(r"^\s*(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\]\s*)*)$", extra)
            if not dm:
                raise self.error(pos, f"this __shared__ declarator ({extra.strip()})")
            declarators.append((dm.group("name"), dm.group("dims")))
        out = []
        for name, dims in declarators:
            self.counter += 1
            alias = f"brrr_shared_t{self.counter}"
            dims = " ".join(dims.split())
            if is_extern and not dims:  # `extern __shared__ Tiles s;`: a struct over the dynamic shared memory
                out.append(f"using {alias} = {base}; {alias}& {name} = "
                           f"*::brrr_cpu::dynamic_shared<{alias}>(__FILE__, __LINE__);")
            elif is_extern:
                if not dims.startswith("[]"):
                    raise self.error(pos, "an extern __shared__ array of a fixed size (declare it [] or as a struct)")
                # A reference to an array of unknown bound, as on a GPU: it decays to a pointer where one is
                # wanted, and `reinterpret_cast<TempStorage&>(smem)` names the memory, not a pointer variable.
                out.append(f"using {alias} = std::remove_extent_t<{base} {dims}>; {alias} (&{name})[] = "
                           f"*reinterpret_cast<{alias} (*)[]>(::brrr_cpu::dynamic_shared<{alias}>(__FILE__, __LINE__));")
            else:
                site = f"brrr_shared_site{self.counter}"
                out.append(f"using {alias} = {base} {dims}; static char {site}; {alias}& {name} = "
                           f"::brrr_cpu::shared_at<{alias}>(&{site}, {align}, {_c_string(name)}, __FILE__, __LINE__);")
        self.edits.append(self.keep_lines(start, end + 1, " ".join(out)))

    # -- asm ---------------------------------------------------------------------------------------

    def asm(self) -> None:
        for m in re.finditer(r"\b(asm|__asm__|__asm)\b(\s*(volatile|__volatile__))?\s*\(", self.mask):
            open_at = m.end() - 1
            close = matching(self.mask, open_at)
            if close < 0:
                raise self.error(m.start(), "an asm statement that is not closed")
            end = close + 1
            while end < len(self.mask) and self.mask[end].isspace():
                end += 1
            in_define = self._in_define(m.start())
            if end < len(self.mask) and self.mask[end] == ";":
                self.edits.append(self.keep_lines(m.start(), end + 1, self._asm_statement(m.start(), open_at, close, in_define)))
            elif in_define and self._ends_its_line(close + 1):
                # `#define CP_ASYNC_COMMIT_GROUP() asm volatile("cp.async.commit_group;" ::)`: the macro's
                # use site writes the `;`, so the statement is one that takes it.
                call = self._asm_statement(m.start(), open_at, close, in_define)
                self.edits.append(self.keep_lines(m.start(), close + 1, f"do {{ {call} }} while (0)"))
            else:
                raise self.error(m.start(), "an asm expression that is not a statement of its own")

    def _asm_statement(self, pos: int, open_at: int, close: int, in_define: bool) -> str:
        """The asm's C++. In a #define, PTX brrr cannot run is an error only where the macro is used: a
        header of PTX wrappers (LeetCUDA's CP_ASYNC_BULK, STMATRIX, ...) defines more than a kernel uses."""
        try:
            return self._ptx(pos, open_at, close)
        except CpuSourceError as e:
            if not in_define:
                raise
            said = " ".join(str(e).replace("\\", "/").replace('"', "'").split())
            return f'_Pragma("GCC error \\"{said}\\"");'

    def _ends_its_line(self, pos: int) -> bool:
        """Whether only blanks and continued lines stand between `pos` and the line break that ends its
        (logical) line: the end of a #define's body."""
        end = pos
        while (nl := self.mask.find("\n", end)) >= 0 and self._continued(nl):
            end = nl + 1
        return not _SPLICE.sub(" ", self.mask[pos:len(self.mask) if nl < 0 else nl]).strip()

    def _in_define(self, pos: int) -> bool:
        """Whether `pos` is in a #define (on its line, or on one the #define continues)."""
        begin = pos
        while (nl := self.mask.rfind("\n", 0, begin)) >= 0 and self._continued(nl):
            begin = nl
        return bool(re.match(r"[ \t]*#[ \t]*define\b", self.mask[nl + 1:]))

    def _continued(self, newline: int) -> bool:
        """Whether the line break at `newline` continues a macro (a backslash just before it)."""
        return self.mask[max(0, newline - 2):newline].rstrip("\r").endswith("\\")

    def _template(self, pos: int, section: str) -> str:
        """The asm template: its string literals joined, and a name among them (`"cvt.rn." TY "x2.f32 ..."`)
        replaced by its #define in this file when that is string literals too."""
        parts = []
        for m in re.finditer(r'//[^\n]*|/\*.*?\*/|"((?:[^"\\]|\\.)*)"|([A-Za-z_]\w*)', section, re.S):
            if m.group(1) is not None:
                parts.append(m.group(1))
            elif m.group(2):
                if m.group(2) not in self.string_macros:
                    raise self.error(pos, f"an asm template that pastes {m.group(2)}",
                                     hint="brrr reads an asm template made of string literals, and of names this file "
                                          "#defines as string literals; write the instruction out")
                parts.append(self.string_macros[m.group(2)])
        return "".join(parts)

    def _ptx(self, pos: int, open_at: int, close: int) -> str:
        body = _SPLICE.sub(" ", self.text[open_at + 1:close])  # an asm over a macro's continued lines
        sections = split_top(body, ":")
        template = self._template(pos, sections[0]).replace("\\n", " ").replace("\\t", " ")
        template = " ".join(template.split()).rstrip("; ")
        if not template and not ptx_operands(sections):
            return ";"  # asm volatile("" ::: "memory"): a compiler barrier, nothing to do on the CPU
        try:  # tensor cores and asynchronous copies (cpu_ptx)
            call = translate(template, sections)
        except UnsupportedPtx as e:
            raise self.error(pos, e.what, hint=e.hint) from None
        if call is None:
            raise self._unknown(pos, template)
        checks = self._operand_checks(pos, sections)
        return f"{{ {checks} {call} }}" if checks else call

    def _operand_checks(self, pos: int, sections: list[str]) -> str:
        """A static_assert an operand that nvcc would refuse for its constraint (operand_fits)."""
        checks = []
        for op in ptx_operands(sections):
            letter = op.constraint.lstrip("=+&")
            if letter in _REGISTERS:
                said = (f'{shown(self.path)}:{self.line_of(pos)}: the asm operand "{letter}"({op.expr}) is not '
                        f"{_REGISTERS[letter]}, as nvcc requires of that constraint")
                checks.append(f"static_assert(::brrr_cpu::ptx::operand_fits<'{letter}', decltype({op.expr})>(), "
                              f"{_c_string(said)});")
        return " ".join(checks)

    def _unknown(self, pos: int, template: str) -> CpuSourceError:
        return self.error(pos, f'inline PTX "{template}"',
                          hint="use CUDA's C++ functions and intrinsics; brrr translates the PTX instructions it "
                               "knows, alone or in a block of them: ld, st, mov, cvt, integer and float arithmetic, "
                               "setp/selp, atom/red, the warp (shfl/vote/redux/elect.sync) and barrier ones, the "
                               "tensor-core, async-copy and cluster families, and "
                               + ", ".join(sorted(n.replace("_", ".") for n in SCALAR if not n.startswith("mov"))))

    def result(self) -> str:
        out, at = [], 0
        for e in sorted(self.edits, key=lambda e: e.start):
            if e.start < at:
                raise self.error(e.start, "overlapping CUDA constructs brrr cannot rewrite one by one")
            out.append(self.text[at:e.start])
            out.append(e.text)
            at = e.end
        out.append(self.text[at:])
        return "".join(out)


_REGISTERS = {"h": "a 16-bit integer", "r": "a 32-bit integer", "l": "a 64-bit integer or a pointer", "f": "a float",
              "d": "a double"}

# The runtime's headers in one (include/cpu/brrr_cpu_prelude.h), first in every rewritten file: the CPU
# build precompiles it (cpu_build.prelude_job).
PRELUDE = "brrr_cpu_prelude.h"


def rewrite(text: str, path: Path, headers: Sequence[Path] = ()) -> str:
    """kernel.cu's text as C++ for the CPU execution; raises CpuSourceError naming what is unsupported.
    `headers`: the op folder's own, rewritten the same way, whose template kernels it may launch."""
    r = _Rewriter(text, path)
    for shim in deducing_shims(r.mask):
        r.deduce[shim.kernel] = shim.name
        r.edits.append(_Edit(shim.at, shim.at, shim.text))
    for header in headers:
        if header != path:
            for shim in deducing_shims(masked(header.read_text(errors="replace"))):
                r.deduce.setdefault(shim.kernel, shim.name)
    r.cluster_dims()
    r.launch_bounds()
    r.launches()
    r.void_kernels()
    r.shared()
    r.asm()
    body = r.result()
    # The runtime first, then kernel.cu as it is, numbered as it is.
    quoted = str(path.resolve()).replace("\\", "\\\\").replace('"', '\\"')
    return f'#include "{PRELUDE}"\n#line 1 "{quoted}"\n{body}'
