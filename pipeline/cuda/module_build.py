"""Build an op brought as its own torch extension (spec.torch_module: one .cu holding kernels, torch
wrapper and PYBIND11_MODULE) into a Python module brrr imports, for the CPU or a GPU.

On the CPU the .cu is compiled as one file by the host compiler, against brrr's stand-in CUDA
headers and torch's, with its kernels executed by brrr's runtime (and instrumented, in the checked
build, as kernel.cu is); the wrapper is the author's own code, compiled as written. On a GPU nvcc
compiles it as `torch.utils.cpp_extension` would. Either way the module's PYBIND11_MODULE is
replaced by brrr's (module_source), so nothing clashes with the extension the author builds.

Each source's object is cached by content like every other (builder.compile_job). Torch's headers
make a compile slow (one to three minutes on a loaded 2-core machine), so nothing a source is compiled
with may depend on another source: the module's name is fixed per op and flavour, and a kernel edit
recompiles the .cu alone, not the binding .cpp beside it (a single .cu holding the wrapper too pays
it again: one translation unit, as the author wrote it). Each linked library still imports as a
module of its own (import_name).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import re
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..base.errors import BuildError
from ..base.files import locked, replacing, shown, write_atomic
from ..base.progress import ticking
from ..op.extension import bound
from ..op.spec import Op
from . import builder, cpu_build, cpu_includes, memcheck
from .builder import INCLUDE_DIR, Job
from .cpu_source import rewrite
from .module_source import duplicated_module, module_text, modules, on_the_cpu, uses_torch
from .printed import Printed

# What a module's CPU build links beside the runtime (see the file's comment).
MODULE_SOURCE = cpu_build.CPU_INCLUDE / "brrr_cpu_module.cpp"


@dataclass(frozen=True)
class ModuleBuild:
    """A built and imported module, with the spec's forward, backward and variants bound to it."""

    module: Any
    library: Path
    seconds: float
    cached: bool
    forward: Any
    backward: Any
    found: tuple[str, ...]  # the author's own problems brrr found in the source (a module declared twice)
    bound_variants: dict[str, Any]
    printf: Printed | None = None  # the CPU build's device printf lines (None on a GPU: they go to stdout)
    folder: Path | None = None  # the op folder, whose spec binds the functions (isolated.py's child binds them again)

    def variants(self) -> dict[str, Any]:
        return dict(self.bound_variants)

    def keep_printed(self, on: bool) -> None:
        """Keep the kernels' printf lines for take_printed (validation's rows), or print them again."""
        if self.printf is not None:
            self.printf.keep(on)

    def take_printed(self) -> str:
        """The device printf lines kept since the last take, each prefixed with block and thread."""
        return self.printf.take() if self.printf is not None else ""


def _sources(op: Op) -> list[Path]:
    module = op.spec.torch_module
    assert module is not None
    return [op.path("cuda"), *(op.folder / s for s in module.sources)]


def _home(op: Op) -> Path:
    """The source brrr's module goes into: the one declaring PYBIND11_MODULE (a setup.py project's
    .cpp), else the .cu."""
    sources = _sources(op)
    return next((s for s in sources if modules(s.read_text(errors="replace"))), sources[0])


def _torch_flags() -> list[str]:
    import torch

    return [f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}", *builder.torch_include_flags(),
            f"-I{sysconfig.get_paths()['include']}", "-DTORCH_API_INCLUDE_EXTENSION_H"]


def _torch_nvcc_macros() -> list[str]:
    """The macros torch's own extension builds (setup.py's BuildExtension, load(), load_inline()) give
    nvcc: __half and __nv_bfloat16 without implicit conversions and operators. An author's module is
    written against them; without them, `x < T(0)` on a c10::Half is ambiguous to nvcc."""
    from torch.utils.cpp_extension import COMMON_NVCC_FLAGS

    return [f for f in COMMON_NVCC_FLAGS if f.startswith("-D")]


def _module_name(op: Op, flavour: str) -> str:
    """The name every source is compiled with (TORCH_EXTENSION_NAME, brrr's PYBIND11_MODULE): never
    of the sources' content, or an edit of one source would change the others' compile commands and
    recompile them all."""
    return f"brrr_module_{op.name}_{flavour}"


def _library(name: str, objects: list[builder.ObjectFile], salt: str = "") -> tuple[Path, str]:
    """Where the module linked from `objects` goes, and its import name: both of the objects' keys
    (and the salt: what else the link is made of, the CPU's order of the objects)."""
    key = hashlib.sha256(" ".join([*([salt] if salt else []), *(o.key for o in objects)]).encode()).hexdigest()[:16]
    return builder.cache_root() / "ext" / f"{name}-{key}.so", import_name(name, key)


def import_name(name: str, key: str) -> str:
    """The name a linked library is imported by: a package of its key around the fixed module name.
    The loader calls PyInit_<the last component>, which is the name it was compiled with; the key
    makes each library a module of its own, so a rebuild after an edit is imported afresh in a
    process that imported the one before (sys.modules and CPython's cache of extensions hold the
    old one under its own name), and two builds of an op live side by side."""
    return f"brrr_{key}.{name}"


def check_cpu_sources(op: Op) -> None:
    """The module's sources rewritten for the CPU for their errors alone (milliseconds): what the CPU
    cannot take is named before nvcc's compile beside the CPU build (minutes with torch's headers)."""
    for source in _sources(op):
        rewrite(on_the_cpu(source.read_text(errors="replace"), source), source, cpu_includes.local_headers(op.folder))


def _cpu_jobs(op: Op, flavour: cpu_build.Flavour, name: str) -> tuple[list[Job], cpu_includes.Includes]:
    """The module's sources rewritten for the CPU, each with its compile command."""
    import torch

    module = op.spec.torch_module
    assert module is not None
    cxx = builder.find_cxx()
    # Python's headers too: a TORCH_LIBRARY project's .cpp includes <Python.h> for its PyInit stub.
    found_in = [*(Path(p[2:]) for p in builder.torch_include_flags()), Path(sysconfig.get_paths()["include"])]
    includes = cpu_includes.prepare(op.folder, _sources(op), op.name, found_in)
    jobs = []
    sources = _sources(op)
    # brrr's module goes beside the author's: into the source declaring PYBIND11_MODULE (a setup.py
    # project's .cpp), else into the .cu; a source may declare it only once (two would clash).
    home = _home(op)
    headers = cpu_includes.local_headers(op.folder)
    # A header of the folder reaching torch may be included anywhere: then every source gets torch first.
    headers_torch = any(uses_torch(h.read_text(errors="replace")) for h in headers)
    for source in sources:
        text = source.read_text(errors="replace")
        if source == home:
            text = module_text(text, source, name, module.function_names())
        torch_first = source == home or headers_torch or uses_torch(text)
        text = rewrite(on_the_cpu(text, source, torch=torch_first), source, headers)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        rewritten = builder.cache_root() / "cpu-src" / f"{op.name}-{source.stem}-{digest}.cpp"
        if not rewritten.is_file() or rewritten.read_text() != text:
            write_atomic(rewritten, text)
        command = [cxx, "-c", "-std=c++20", *flavour.kernel_flags, "-ffp-contract=off", "-fPIC", *builder.tls_flags(),
                   *includes.flags,
                   f"-I{cpu_build.CPU_INCLUDE}", f"-I{INCLUDE_DIR}", *builder.op_flags(op), *_torch_flags(),
                   f"-DTORCH_EXTENSION_NAME={name}", *flavour.extra,
                   *(memcheck.CHECK_FLAGS if flavour.checked else ())]
        key = builder.object_key(None, rewritten, [*cpu_build.cpu_headers(), *cpu_includes.local_headers(op.folder)],
                                 command, (builder.compiler_version(cxx), torch.__version__))
        jobs.append(Job(rewritten, command, key, builder.object_path(f"{op.name}-{source.stem}-{flavour.name}", key),
                        source))
    return jobs, includes


def link_torch_library(library: Path, objects: list[Path]) -> None:
    """A shared library against torch (a Python extension module, or brrr's own native library), once
    per path: torch's libraries (and torch_python for pybind11's casters); the Python C API is
    resolved by the interpreter that loads it, as for every extension."""
    from torch.utils import cpp_extension

    dirs = cpp_extension.library_paths()
    with locked(library.with_suffix(".lock")):
        if library.is_file():
            return
        with replacing(library, suffix=".so") as partial:
            command = [builder.find_cxx(), "-shared", "-fPIC", "-o", str(partial), *map(str, objects),
                       *(f"-L{d}" for d in dirs), *(f"-Wl,-rpath,{d}" for d in dirs),
                       "-lc10", "-ltorch_cpu", "-ltorch", "-ltorch_python", "-lpthread", "-Wl,-Bsymbolic"]
            proc = subprocess.run(command, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise BuildError(f"linking the module failed:\n{proc.stderr[-3000:]}")


def import_module(name: str, library: Path) -> Any:
    """The built module under its import name (import_name), imported once a process: the module's
    __name__ is that name, which isolated.py's child imports it by."""
    if name in sys.modules:
        return sys.modules[name]
    loader = importlib.machinery.ExtensionFileLoader(name, str(library))
    spec = importlib.util.spec_from_file_location(name, library, loader=loader)
    if spec is None:
        raise BuildError(f"cannot import {library}")
    try:
        module = importlib.util.module_from_spec(spec)  # dlopen: where a missing symbol is found
        loader.exec_module(module)
    except ImportError as e:
        raise _unresolved(e) from e
    sys.modules[name] = module
    return module


def _unresolved(error: ImportError) -> BuildError:
    """An import that failed on a symbol no loaded library defines, said in C++ terms: on the CPU,
    most often a function of torch's CUDA libraries (libc10_cuda, libtorch_cuda) the CPU wheel lacks."""
    found = re.search(r"undefined symbol: (\S+)", str(error))
    if found is None:
        return BuildError(f"the built module could not be imported: {error}")
    symbol = found.group(1)
    try:
        symbol = subprocess.run(["c++filt", symbol], capture_output=True, text=True, timeout=10).stdout.strip() or symbol
    except (OSError, subprocess.SubprocessError):
        pass
    if _LIBRARY_SYMBOL.match(symbol):
        hint = ("on the CPU, torch's CUDA libraries are absent: a call into them (c10::cuda::..., at::cuda::...) "
                "beyond the stand-ins brrr provides cannot run there; on a GPU machine, check the library that "
                "defines it is linked")
    else:
        # Not a library's: the project declares it and none of its sources brrr compiled defines it.
        hint = ("the op's sources declare it and none defines it: a template the wrapper calls for a type the .cu "
                "never instantiates (a dtype it dispatches), or a function of a source spec.py's "
                "TorchModule(sources=...) does not list")
    return BuildError(f"the built module uses {symbol}, which no library loaded here defines", hint=hint)


# The namespaces and prefixes of torch's CUDA libraries and CUDA's own (what a CPU wheel lacks).
_LIBRARY_SYMBOL = re.compile(r"^(?:c10::cuda|at::cuda|torch::cuda|at::native|c10::hip|cu|cuda|nv|__cuda)", re.I)


def _bind(op: Op, module: Any, library: Path, start: float, cached: bool) -> ModuleBuild:
    spec = op.spec.torch_module
    assert spec is not None
    found = tuple(p for p in [duplicated_module(op.path("cuda").read_text(errors="replace"), op.path("cuda"))] if p)
    backward = bound(spec.backward, module) if spec.backward is not None else None
    variants = {name: bound(call, module) for name, call in spec.variants.items()}
    return ModuleBuild(module, library, time.monotonic() - start, cached, bound(spec.forward, module), backward, found,
                       variants, folder=op.folder)


def build_cpu_module(op: Op, flavour: cpu_build.Flavour = cpu_build.DEFAULT, verbose: bool = False) -> ModuleBuild:
    """Compile (or reuse) the module for execution on the CPU, link it with brrr's runtime and import it."""
    start = time.monotonic()
    name = _module_name(op, flavour.name)
    jobs, includes = _cpu_jobs(op, flavour, name)
    authors = len(jobs)
    # the crash reporter too: isolated.py's child installs it, so a crash names its signal and line
    jobs += [cpu_build.runtime_job(flavour), cpu_build.runtime_job(flavour, MODULE_SOURCE),
             cpu_build.runtime_job(flavour, cpu_build.CRASH_SOURCE)]
    if flavour.checked:
        memcheck.install_allocation_registry()
        jobs.append(memcheck.memcheck_job(flavour.extra))
    try:
        objects = builder.compile_all(jobs, f"compiling {op.name} for the CPU", "cpu", verbose)
    except BuildError as e:
        raise BuildError(cpu_includes.explain(e.message, includes), hint=e.hint) from e
    library, imported = _library(name, objects, "brrr's first")
    linked = not library.is_file()
    if linked:
        with ticking(f"linking {op.name}"):
            # brrr's objects first: the linker keeps their uninstrumented copies of the inline library
            # functions the author's (instrumented) sources share, so a report's own strings are not
            # checked again (a fault reported through the author's copy recursed into a stack overflow).
            link_torch_library(library, [o.path for o in [*objects[authors:], *objects[:authors]]])
    module = import_module(imported, library)
    built = _bind(op, module, library, start, all(o.cached for o in objects) and not linked)
    return replace(built, printf=Printed(library))


def _gpu_job(op: Op, source: Path, arch: str) -> Job:
    """One source of the module for the GPU, as cpp_extension compiles it: a .cu through nvcc, any
    other through the host compiler (a setup.py project's binding .cpp parses torch's headers once,
    with g++, not three times through nvcc's passes). brrr's module replaces the author's in the
    source that declares it."""
    import torch

    name = _module_name(op, "gpu")
    module = op.spec.torch_module
    assert module is not None
    text = source.read_text(errors="replace")
    if source == _home(op):
        text = module_text(text, source, name, module.function_names())
    quoted = str(source.resolve()).replace("\\", "\\\\").replace('"', '\\"')
    text = f'#line 1 "{quoted}"\n{text}'
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    cu = source.suffix == ".cu"
    rewritten = builder.cache_root() / "gpu-src" / f"{op.name}-{source.stem}-{digest}{'.cu' if cu else source.suffix}"
    if not rewritten.is_file() or rewritten.read_text() != text:
        write_atomic(rewritten, text)
    if cu:
        nvcc = builder.find_nvcc()
        if nvcc is None:
            raise BuildError("nvcc not found (looked in $CUDA_HOME/bin, on PATH, in /usr/local/cuda/bin)")
        command = [nvcc, "-c", *builder.NVCC_FLAGS, *_torch_nvcc_macros(), *builder.arch_flags(arch), "-Xptxas", "-v",
                   "-Xcompiler", f"-idirafter,{builder.LIBRARY_SHIM}"]
        versions = (builder.nvcc_version(), torch.__version__)
        label = f"{op.name}-{source.stem}-gpu-{arch}"
    else:
        home = builder.cuda_home()
        cxx = builder.find_cxx()
        command = [cxx, "-c", *builder.CXX_FLAGS, *([f"-I{home / 'include'}"] if home else []),
                   "-idirafter", str(builder.LIBRARY_SHIM)]
        versions = (builder.compiler_version(cxx), torch.__version__, builder.nvcc_version())
        label = f"{op.name}-{source.stem}-gpu"
    command += [*builder.op_flags(op), *_torch_flags(), f"-DTORCH_EXTENSION_NAME={name}"]
    key = builder.object_key(None, rewritten, cpu_includes.local_headers(op.folder), command, versions)
    return Job(rewritten, command, key, builder.object_path(label, key), source)


def gpu_jobs(op: Op, arch: str) -> list[Job]:
    """Every source of the module compiled for the GPU (the .cu first): what build_gpu_module links."""
    return [_gpu_job(op, source, arch) for source in _sources(op)]


def nvcc_job(op: Op, arch: str) -> Job:
    """The .cu through nvcc as cpp_extension compiles it (torch's and Python's headers), brrr's module
    in place of the author's when the .cu declares it: the GPU compile check."""
    return _gpu_job(op, op.path("cuda"), arch)


def kernel_check(op: Op, arch: str = builder.DEFAULT_ARCH) -> builder.CompileReport:
    """The module's .cu files through nvcc and ptxas' report (no GPU needed)."""
    start = time.monotonic()
    cus = [job for job in gpu_jobs(op, arch) if job.named.suffix == ".cu"]
    objects = builder.compile_all(cus, f"compiling {op.name}", arch)
    cached = all(o.cached for o in objects)
    seconds = sum(o.seconds for o in objects) if cached else time.monotonic() - start
    return builder.CompileReport(arch=arch, kernels=tuple(k for o in objects for k in o.kernels), seconds=seconds,
                                 cached=cached)


def build_gpu_module(op: Op, arch: str | None = None, verbose: bool = False) -> ModuleBuild:
    """The module's sources compiled (nvcc for each .cu, the host compiler for the rest, two at a
    time), linked against torch's CUDA libraries and imported."""
    start = time.monotonic()
    arch = arch or builder.device_arch()
    objects = builder.compile_all(gpu_jobs(op, arch), f"compiling {op.name}", arch, verbose)
    library, imported = _library(_module_name(op, "gpu"), objects)
    linked = not library.is_file()
    if linked:
        with ticking(f"linking {op.name}"):
            _link_gpu(library, [o.path for o in objects])
    return _bind(op, import_module(imported, library), library, start, all(o.cached for o in objects) and not linked)


def gpu_link_command(library: Path, objects: list[Path]) -> list[str]:
    """The module's objects into one Python extension, against torch's CUDA libraries and CUDA's runtime."""
    from torch.utils import cpp_extension

    home = builder.cuda_home()
    dirs = [*cpp_extension.library_paths(), *([str(home / "lib64")] if home else [])]
    return [builder.find_cxx(), "-shared", "-fPIC", "-o", str(library), *map(str, objects), *(f"-L{d}" for d in dirs),
            *(f"-Wl,-rpath,{d}" for d in dirs), *builder.LINK_LIBS, "-ltorch_python",
            *builder.driver_link_flags(objects)]


def _link_gpu(library: Path, objects: list[Path]) -> None:
    with locked(library.with_suffix(".lock")), replacing(library, suffix=".so") as partial:
        proc = subprocess.run(gpu_link_command(partial, objects), capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"linking {', '.join(shown(o) for o in objects)} failed:\n{proc.stderr[-3000:]}")
