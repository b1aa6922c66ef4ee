"""Build an op's cuda stage for execution on the CPU: the op's own kernel.cu and binding.cpp,
compiled with the host compiler, linked with brrr's scheduler into a library torch loads.

- kernel.cu is rewritten where CUDA's syntax needs it (cpu_source) and compiled against the
  stand-in CUDA headers in include/cpu/, with -ffp-contract=off (no fused multiply-adds the
  source does not ask for) and -g, so gdb shows kernel.cu;
- binding.cpp is compiled with BRRR_CPU defined, against torch's CPU headers (brrr.cuh's CPU
  branch: CPU tensors, no streams);
- include/cpu/brrr_cpu_runtime.cpp (fibers, barriers, warp intrinsics, shared memory) is
  compiled once per content and linked into every op's library.

Each object is cached as the GPU build's are (builder.compile_job: a key over what it is made
from, a lock, an atomic rename), so editing kernel.cu recompiles kernel.cu alone and relinks.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..base.assets import CPU_INCLUDE
from ..base.errors import BuildError
from ..base.files import write_atomic
from ..op.spec import Op
from . import builder, cpu_includes, cpu_source, memcheck
from .builder import INCLUDE_DIR, Extension, Job
from .cpu_source import rewrite
from .module_source import rename_host_twins
from .tokens import masked

RUNTIME_SOURCE = CPU_INCLUDE / "brrr_cpu_runtime.cpp"
PRELUDE = CPU_INCLUDE / cpu_source.PRELUDE  # what each rewritten kernel.cu includes first
# The crash reporter (a signal handler on an alternate stack), installed only where isolated.py runs the library.
CRASH_SOURCE = CPU_INCLUDE / "brrr_cpu_crash.cpp"
# -Bsymbolic: each op's library uses its own copy of the runtime, whatever else is loaded.
CPU_LINK_LIBS = ("-lc10", "-ltorch_cpu", "-ltorch", "-lpthread", "-Wl,-Bsymbolic")


def link_libs() -> tuple[str, ...]:
    """CPU_LINK_LIBS, with gold where it is installed: it links against libtorch_cpu in a third of
    the time ld.bfd takes (0.5 s against 1.3 s on 2 cores), which a kernel edit waits for."""
    return (*CPU_LINK_LIBS, builder.GOLD) if shutil.which("ld.gold") else CPU_LINK_LIBS


@dataclass(frozen=True)
class Flavour:
    """How the kernel side is compiled. `name` goes into the library's namespace; `kernel_flags`
    are optimisation and debug information; `extra` is what a check layered on the runtime adds
    to kernel.cu and the runtime alike (instrumentation, defines)."""

    name: str = "cpu"
    # -fstack-clash-protection: a frame larger than the fiber stack's guard page (a 4 MB local array)
    # probes each page it takes, so it faults in the guard page (a named stack overflow,
    # brrr_cpu_crash.cpp) instead of writing over another fiber's stack.
    # -gdwarf-4: binutils 2.40's addr2line misreads gcc 12's DWARF 5 after #line, and the time limit
    # and crash reports name kernel.cu's lines with it.
    kernel_flags: tuple[str, ...] = ("-O1", "-g", "-gdwarf-4", "-fstack-clash-protection")
    extra: tuple[str, ...] = ()
    checked: bool = False  # memory checks: kernel.cu instrumented, brrr_cpu_memcheck.cpp linked in (memcheck.py)


DEFAULT = Flavour()
# Out-of-bounds accesses and shared-memory races reported (pipeline/memcheck.py).
CHECKED = Flavour("cpu_checked", checked=True)
# `brrr debug --stage cuda`: unoptimised, so every line and local is there in gdb; checked too,
# which is what finds the thread behind an element (and reports a bad access while debugging).
DEBUG = Flavour("cpu_debug", kernel_flags=("-O0", "-g", "-fstack-clash-protection"), checked=True)


def available() -> bool:
    """A host compiler to build the CPU execution with."""
    cxx = builder.find_cxx()
    return Path(cxx).is_file() or shutil.which(cxx) is not None


def cpu_headers() -> list[Path]:
    """Every stand-in header, those in subfolders too (<cooperative_groups/reduce.h>): part of each key."""
    # and libcu++'s <cuda/pipeline>, <cuda/barrier>, which have no extension
    return sorted({*CPU_INCLUDE.rglob("*.h"), *(CPU_INCLUDE / "cuda").glob("*")})


def runtime_job(flavour: Flavour = DEFAULT, source: Path = RUNTIME_SOURCE) -> Job:
    """The runtime (or, with `source`, another of brrr's own sources linked into each op's library)."""
    cxx = builder.find_cxx()
    command = [cxx, "-c", "-std=c++20", "-O2", "-g", "-fPIC", *builder.tls_flags(), f"-I{CPU_INCLUDE}", *flavour.extra]
    key = builder.object_key(None, source, cpu_headers(), command, (builder.compiler_version(cxx),))
    return Job(source, command, key, builder.object_path(f"{source.stem.replace('_', '-')}-{flavour.name}", key), source)


def kernel_text(op: Op) -> tuple[str, dict[str, str]]:
    """kernel.cu as the CPU build compiles it: a host launcher named as its kernel renamed NAME__host
    (C++ cannot tell the two apart; binding.cpp is compiled with NAME defined as NAME__host), rewritten."""
    original = op.path("cuda")
    text, renamed = rename_host_twins(original.read_text())
    return rewrite(text, original, cpu_includes.local_headers(op.folder)), renamed


def _kernel_flags(flavour: Flavour) -> tuple[list[str], list[str]]:
    """kernel.cu's compile flags around the op's own include folders: (before them, after them)."""
    before = ["-c", "-std=c++20", *flavour.kernel_flags, "-ffp-contract=off", "-fPIC", *builder.tls_flags()]
    after = [f"-I{CPU_INCLUDE}", f"-I{INCLUDE_DIR}", *flavour.extra, *(memcheck.CHECK_FLAGS if flavour.checked else ())]
    return before, after


def prelude_job(flavour: Flavour = DEFAULT) -> Job:
    """include/cpu/brrr_cpu_prelude.h precompiled with kernel.cu's flags, into a folder of its own that
    kernel_job puts first on the include path: gcc takes brrr_cpu_prelude.h.gch from there when its
    flags match, and reads the header itself otherwise, so a missing or stale one only costs time.
    Parsing the runtime's headers (64,000 lines) was half of a small kernel's compile (1.1 s)."""
    cxx = builder.find_cxx()
    before, after = _kernel_flags(flavour)
    command = [cxx, *before, *after, "-x", "c++-header"]
    key = builder.object_key(None, PRELUDE, [INCLUDE_DIR / "brrr_kernel.cuh", *cpu_headers()], command,
                             (builder.compiler_version(cxx),))
    return Job(PRELUDE, command, key, builder.cache_root() / "pch" / f"{flavour.name}-{key}" / f"{PRELUDE.name}.gch",
               PRELUDE)


def _prelude_flags(op: Op, flavour: Flavour) -> list[str]:
    """-I of the precompiled prelude's folder, unless a header of the op's folder has the name of one of
    brrr's (found before brrr's, it could change what the prelude means: the text is read then)."""
    ours = {p.name for p in CPU_INCLUDE.rglob("*")} | {p.name for p in INCLUDE_DIR.glob("*")}
    if any(h.name in ours for h in cpu_includes.local_headers(op.folder)):
        return []
    return [f"-I{prelude_job(flavour).object.parent}"]


def kernel_job(op: Op, flavour: Flavour = DEFAULT) -> Job:
    """kernel.cu rewritten for the CPU (written into the cache, named by its content) and its command.
    The op folder's headers are rewritten too and headers brrr cannot provide stood in for (cpu_includes),
    so an author's common.h with __shared__ in a template builds as kernel.cu does."""
    cxx = builder.find_cxx()
    original = op.path("cuda")
    text, _ = kernel_text(op)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    source = builder.cache_root() / "cpu-src" / f"{op.name}-kernel-{digest}.cpp"
    if not source.is_file() or source.read_text() != text:
        write_atomic(source, text)
    includes = cpu_includes.prepare(op.folder, [original], op.name, [INCLUDE_DIR])  # brrr_kernel.cuh is found, not stood in for
    before, after = _kernel_flags(flavour)
    command = [cxx, *before, *_prelude_flags(op, flavour), *includes.flags, *after, *builder.op_flags(op)]
    key = builder.object_key(op, source, [INCLUDE_DIR / "brrr_kernel.cuh", *cpu_headers()], command,
                             (builder.compiler_version(cxx),))
    return Job(source, command, key, builder.object_path(f"{op.name}-kernel-{flavour.name}", key), original)


def precompile_prelude(kernel: Job, flavour: Flavour, verbose: bool = False) -> None:
    """The prelude's .gch, before a kernel.cu that uses it compiles (once per flavour and cache), and
    the header's text beside it: gcc looks for a header it took from a .gch there when it is included
    again (the op's own headers open with it too). A failure leaves the text header to gcc, whose own
    errors then name the cause."""
    pch = prelude_job(flavour)
    if f"-I{pch.object.parent}" not in kernel.command or builder.read_object(kernel) is not None:
        return
    try:
        builder.compile_job(pch, verbose)
    except BuildError:
        return
    beside = pch.object.parent / PRELUDE.name
    if not beside.is_file() or beside.read_text() != PRELUDE.read_text():
        write_atomic(beside, PRELUDE.read_text())


def binding_job(op: Op) -> Job:
    """binding.cpp against torch's CPU headers, with brrr.cuh's CPU branch."""
    import torch

    cxx = builder.find_cxx()
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    source = op.path("binding")
    # -g1 -gdwarf-4: line tables only, so a crash in binding.cpp is reported at its line (addr2line).
    renamed = kernel_text(op)[1]
    command = [cxx, "-c", *builder.CXX_FLAGS, "-g1", "-gdwarf-4", abi, "-DBRRR_CPU", f"-I{CPU_INCLUDE}", f"-I{INCLUDE_DIR}",
               *builder.op_flags(op), *builder.torch_include_flags(), *(f"-D{old}={new}" for old, new in renamed.items())]
    versions = (builder.compiler_version(cxx), torch.__version__)
    # Keyed without the op folder's path (its headers' content is in the key): a copy of an op, as
    # the planted-bug tests make, reuses the object instead of spending torch's headers again.
    keyed = [part.replace(str(op.folder), "<op>") for part in command]
    key = builder.object_key(op, source, [INCLUDE_DIR / "brrr.cuh", INCLUDE_DIR / "brrr_kernel.cuh", *cpu_headers()],
                             keyed, versions)
    return Job(source, command, key, builder.object_path(f"{op.name}-binding-cpu", key), source)


def build_cpu_extension(op: Op, flavour: Flavour = DEFAULT, verbose: bool = False) -> Extension:
    """Compile (or reuse) the three objects, link them and load the library: torch.ops.<namespace>.forward
    and .backward then run the op's kernels on the CPU, on CPU tensors."""
    start = time.monotonic()
    jobs = [kernel_job(op, flavour), binding_job(op), runtime_job(flavour), runtime_job(flavour, CRASH_SOURCE)]
    precompile_prelude(jobs[0], flavour, verbose)
    if flavour.checked:
        memcheck.install_allocation_registry()  # before the tensors a checked launch receives are made
        jobs.append(memcheck.memcheck_job(flavour.extra))
    try:
        kernel, binding, *runtime = builder.compile_all(jobs, f"compiling {op.name} for the CPU", "cpu", verbose)
    except BuildError as e:  # a name from a header brrr stood in for: said as such
        includes = cpu_includes.prepare(op.folder, [op.path("cuda")], op.name, [INCLUDE_DIR])
        raise BuildError(cpu_includes.explain(e.message, includes), hint=e.hint) from e
    builder.check_launchers(op, kernel, binding)
    # The runtime before kernel.cu: of the inline C++ library functions both instantiate (std::string's),
    # the linker keeps the first copy, and kernel.cu's are instrumented in a checked build, so the memory
    # checks' own reports would check themselves without end (a stack overflow in place of the fault).
    return builder.link_and_load(op, [binding, *runtime, kernel], (f"brrr_{flavour.name}", link_libs()), start,
                                 verbose)


# A preprocessor test of __CUDA_ARCH__: `#if __CUDA_ARCH__ >= 800`, `#ifdef __CUDA_ARCH__`, `defined(...)`.
_ARCH_TEST = re.compile(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif)\b[^\n]*\b__CUDA_ARCH__\b", re.M)
_SHOWN_BRANCHES = 4


def arch_branches(op: Op) -> list[str]:
    """Where the op's own sources choose code by __CUDA_ARCH__ ("file:line"): undefined on the CPU, as in
    host code, so those branches take their host side there and only a GPU runs the device side."""
    found = []
    for path in sorted(op.folder.rglob("*")):
        if path.suffix in (".cu", ".cpp", ".cc", *builder.HEADER_SUFFIXES) and path.is_file():
            text = masked(path.read_text(errors="replace"))
            found += [f"{path.relative_to(op.folder)}:{text.count(chr(10), 0, m.start()) + 1}"
                      for m in _ARCH_TEST.finditer(text)]
    return found


def arch_note(op: Op) -> str | None:
    """The compile row's line about arch_branches, or None where the sources test no __CUDA_ARCH__."""
    found = arch_branches(op)
    if not found:
        return None
    more = f" and {len(found) - _SHOWN_BRANCHES} more" if len(found) > _SHOWN_BRANCHES else ""
    return (f"__CUDA_ARCH__ is undefined on the CPU, as in host code, at {', '.join(found[:_SHOWN_BRANCHES])}{more}: "
            "what those lines select only where it is defined runs on a GPU alone")
