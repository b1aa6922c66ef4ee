"""Compile an op's CUDA C stage: kernel.cu with nvcc, binding.cpp with the host compiler, each
into an object file cached by its own content; on a GPU machine, link both into a library and
load it into torch.

The split is what makes a kernel edit cheap: kernel.cu includes only CUDA's headers (about a
second of nvcc), binding.cpp holds everything that touches torch (ten seconds of torch headers)
and is compiled again only when it changes. torch.utils.cpp_extension supplies torch's include
and library paths; brrr drives the compilers itself because cpp_extension.load recompiles every
source of an extension whenever one of them changes.

Objects and libraries live under $BRRR_CACHE (default ~/.cache/brrr), named by a key over the
source and the headers it can include, the command line, the compiler's version and, for what
touches torch, torch's and CUDA's versions. Each is written to a temporary name and renamed
into place under a file lock, so a killed build never leaves half a file and a second process
waits for the first and reuses its work; an object whose recorded checksum no longer matches
is compiled again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from ..base.assets import INCLUDE_DIR
from ..base.errors import BuildError
from ..base.files import locked, replacing, shown, try_locked, write_atomic
from ..base.progress import ticking
from ..op.spec import Op
from .cpu_deduce import PREFIX as DEDUCE_PREFIX

# The CPU torch wheel ships c10/cuda headers but not this generated one; see the shim's comment.
CPU_WHEEL_SHIM = INCLUDE_DIR / "cpu_wheel_shim"
# Searched last (-idirafter): the CUDA library headers torch's CUDAContext.h includes, for toolkits without them.
LIBRARY_SHIM = INCLUDE_DIR / "cuda_library_shim"
DEFAULT_ARCH = "sm_90a"  # Hopper with its arch-specific instructions (wgmma), as device_arch names an H100/H200
SYSTEM_CUDA = Path("/usr/local/cuda")
NVCC_FLAGS = ("-std=c++20", "-O3", "--expt-relaxed-constexpr", "-lineinfo", "-Xcompiler", "-fPIC")
CXX_FLAGS = ("-std=c++20", "-O2", "-fPIC")
HEADER_SUFFIXES = (".cuh", ".h", ".hpp")
# What a build links against: torch's libraries and the CUDA runtime that torch has loaded.
LINK_LIBS = ("-lc10", "-lc10_cuda", "-ltorch_cpu", "-ltorch_cuda", "-ltorch", "-lcudart")


@dataclass(frozen=True)
class KernelResources:
    kernel: str
    registers: int
    shared_bytes: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int


@dataclass(frozen=True)
class CompileReport:
    arch: str
    kernels: tuple[KernelResources, ...]
    seconds: float
    cached: bool

    def summary(self) -> str:
        parts = [
            f"{k.kernel}: {k.registers} regs, {k.spill_stores + k.spill_loads} B spilled"
            + (f", {k.shared_bytes} B smem" if k.shared_bytes else "")
            for k in self.kernels
        ]
        return "; ".join(parts)


class Job(NamedTuple):
    """One compile: the file the compiler reads, its command (less the output), the cache key,
    where the object goes (its record beside it, .json) and the file messages name (the source
    itself, or kernel.cu for its CPU rewrite)."""

    source: Path
    command: list[str]
    key: str
    object: Path
    named: Path


@dataclass(frozen=True)
class ObjectFile:
    path: Path
    key: str
    kernels: tuple[KernelResources, ...]  # ptxas' report; empty for binding.cpp
    seconds: float
    cached: bool


def cache_root() -> Path:
    from ..base.outputs import cache_root as root

    return root()


def cuda_home() -> Path | None:
    """The CUDA toolkit to compile with: $CUDA_HOME, the one nvcc on PATH belongs to, /usr/local/cuda,
    and only when none of those exists, the one pip installed (`pip install 'brrr-kernels[cuda]'`)."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidates = [Path(home)] if home else []
    found = shutil.which("nvcc")
    if found:
        candidates.append(Path(found).resolve().parent.parent)
    candidates.append(SYSTEM_CUDA)
    wheel = wheel_cuda_home()
    if wheel:
        candidates.append(wheel)
    return next((c for c in candidates if (c / "bin" / "nvcc").is_file() and (c / "include" / "cuda.h").is_file()),
                None)


def wheel_cuda_home() -> Path | None:
    """The toolkit tree of NVIDIA's PyPI wheels, site-packages/nvidia/cu13: nvidia-cuda-nvcc brings
    bin/nvcc and ptxas, and its dependencies cicc (nvidia-nvvm), the runtime headers
    (nvidia-cuda-runtime) and crt/ (nvidia-cuda-crt), laid out as a toolkit is, so nvcc finds them
    through its own nvcc.profile. CUDA 12's wheels (nvidia-cuda-nvcc-cu12) hold ptxas but no nvcc."""
    try:
        dist = importlib.metadata.distribution("nvidia-cuda-nvcc")
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in dist.files or []:
        if file.name == "nvcc" and file.parent.name == "bin":
            return Path(str(dist.locate_file(file))).parent.parent
    return None


@lru_cache(maxsize=1)
def find_nvcc() -> str | None:
    home = cuda_home()
    return str(home / "bin" / "nvcc") if home else None


def find_cxx() -> str:
    return os.environ.get("CXX") or shutil.which("c++") or "g++"


@lru_cache(maxsize=4)
def compiler_version(compiler: str) -> str:
    try:
        out = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "none"
    lines = out.splitlines()
    return (lines[-1] if "nvcc" in compiler else lines[0]) if lines else "unknown"


def tls_flags() -> tuple[str, ...]:
    """TLS descriptors on x86-64 gcc: threadIdx, blockIdx and the runtime's per-thread state are
    thread_local in a dlopen'ed library, which by default costs a __tls_get_addr call on every read
    (16% of a checked matmul's time); a resolved descriptor is a load. aarch64 uses descriptors
    already, and a compiler that is not gcc keeps its default."""
    gcc = "clang" not in compiler_version(find_cxx()).lower()
    return ("-mtls-dialect=gnu2",) if gcc and platform.machine() in ("x86_64", "AMD64") else ()


def nvcc_version() -> str:
    nvcc = find_nvcc()
    return compiler_version(nvcc) if nvcc else "none"


def local_headers(op: Op) -> list[Path]:
    return sorted(p for p in op.folder.iterdir() if p.suffix in HEADER_SUFFIXES and p.is_file())


def cuda_sources(op: Op) -> list[Path]:
    """Every file of the op's CUDA C stage, as an exported package needs them."""
    return sorted([op.path("cuda"), op.path("binding"), *local_headers(op)])


def object_key(op: Op | None, source: Path, headers: list[Path], command: list[str], versions: tuple[str, ...]) -> str:
    """A key over everything an object is made from: the source, the op folder's headers (op None:
    none), the other headers it can include, the command line and the tools' versions."""
    h = hashlib.sha256()
    for path in [source, *(local_headers(op) if op else []), *headers]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    for part in (*command, *versions):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


# --- nvcc output --------------------------------------------------------------------------

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_DIAG = re.compile(r"^(?P<file>[^\s(:]+)(?:\((?P<line>\d+)\)|:(?P<line2>\d+)(?::\d+)?):\s*(?:fatal )?error")
# A tool's own error, with no file and line: "ptxas error   : Entry function ... uses too much shared
# data", "nvlink error   : ...". ptxas pads with spaces before the colon, so " error:" misses it.
_TOOL_ERROR = re.compile(r"^(?:ptxas|nvlink|fatbinary|cicc|nvcc)(?: fatal)? error\s*:", re.I)


def parse_resources(ptxas_output: str) -> list[dict[str, Any]]:
    kernels: list[dict[str, Any]] = []
    for line in ptxas_output.splitlines():
        if m := _ENTRY.search(line):
            kernels.append({"kernel": m.group(1), "registers": 0, "shared_bytes": 0,
                            "spill_stores": 0, "spill_loads": 0, "stack_bytes": 0})
        elif kernels and (m := _PROPS.search(line)):
            kernels[-1].update(stack_bytes=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        elif kernels and (m := _USED.search(line)):
            kernels[-1].update(registers=int(m.group(1)), shared_bytes=int(m.group(2) or 0))
    names = [n.split("(")[0].removeprefix("void ") for n in demangle([k["kernel"] for k in kernels])]
    for k, name in zip(kernels, names):
        k["kernel"] = name
    return kernels


def demangle(names: list[str]) -> list[str]:
    nvcc = find_nvcc()
    tool = shutil.which("cu++filt") or (str(Path(nvcc).parent / "cu++filt") if nvcc else None)
    tool = tool if tool and Path(tool).is_file() else shutil.which("c++filt")
    if not names or tool is None:
        return names
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True, check=False).stdout
    lines = out.splitlines()
    return lines if len(lines) == len(names) else names


def compiler_errors(output: str, source: Path) -> str:
    """The error lines of a compiler's output, with paths shown as the user knows them."""
    shown = os.path.relpath(source, Path.cwd()) if source.is_absolute() else str(source)
    # A launch of a template kernel is a call of its deduction shim on the CPU (cpu_deduce.py): the
    # kernel's own name is what the user wrote, so the error says that.
    lines = output.replace(str(source), shown).replace(DEDUCE_PREFIX, "").splitlines()
    picked: list[str] = []
    for i, line in enumerate(lines):
        if _DIAG.match(line.strip()) or " error:" in line or line.startswith("error") or _TOOL_ERROR.match(line):
            if "No such file or directory" in line:  # a missing header: the chain of includes that reached it
                k = i
                while k > 0 and re.match(r"^(In file included from|\s+from) ", lines[k - 1]):
                    k -= 1
                picked.extend(lines[k:i])
            picked.extend(lines[i : i + 3])
            if not line.startswith(shown):
                picked.extend(_own_line_behind(lines, i, shown))
        if len(picked) >= 24:
            break
    return "\n".join(dict.fromkeys(picked)) if picked else "\n".join(lines[-20:])


def _own_line_behind(lines: list[str], i: int, shown: str) -> list[str]:
    """For an error reported inside a header (torch's AT_DISPATCH macros, a template), the line of the
    user's own file that led there: the first "in expansion of macro" or "required from" note naming
    it before the next error, with its source line."""
    for k in range(i + 1, len(lines)):
        if " error:" in lines[k]:
            break
        if lines[k].startswith(f"{shown}:"):
            return lines[k : k + 2]
    return []


# --- objects: kernel.cu and binding.cpp ----------------------------------------------------


def torch_include_flags() -> list[str]:
    from torch.utils import cpp_extension

    flags = [f"-I{p}" for p in cpp_extension.include_paths()]
    probe = Path(cpp_extension.include_paths()[0]) / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    if not probe.is_file():
        flags.append(f"-I{CPU_WHEEL_SHIM}")
    return flags


def arch_flags(arch: str) -> list[str]:
    """nvcc's target flags for `arch`. An arch-specific target (sm_90a) gets its own PTX alone: CUDA 13's
    `-arch=sm_90a` also embeds compute_90 PTX, which ptxas then checks and refuses for every wgmma,
    setmaxnreg or tensor copy a kernel does not hide behind __CUDA_ARCH_FEAT_SM90_ALL (public Hopper
    kernels mostly do not: they were written for CUDA 12's `-arch=sm_90a`)."""
    if re.fullmatch(r"sm_\d+a", arch):
        virtual = "compute_" + arch[3:]
        return ["-gencode", f"arch={virtual},code=[{arch},{virtual}]"]
    return [f"-arch={arch}"]


def op_flags(op: Op) -> list[str]:
    """The op folder's own compile flags, for every compile of its sources: its folder on the include
    path, and the spec's macros (-DNAME=VALUE, or -DNAME for "")."""
    defines = [f"-D{k}" if str(v) == "" else f"-D{k}={v}" for k, v in op.spec.defines.items()]
    return [f"-I{op.folder}", *defines]


def kernel_job(op: Op, arch: str) -> Job:
    """kernel.cu's source, nvcc command (less the output) and cache key: no torch in it."""
    nvcc = find_nvcc()
    if nvcc is None:
        raise BuildError("nvcc not found (looked in $CUDA_HOME/bin, on PATH, in /usr/local/cuda/bin and for NVIDIA's "
                         "PyPI wheels); pip install 'brrr-kernels[cuda]' installs it")
    source = op.path("cuda")
    command = [nvcc, "-c", *NVCC_FLAGS, *arch_flags(arch), "-Xptxas", "-v", f"-I{INCLUDE_DIR}", *op_flags(op)]
    key = object_key(op, source, [INCLUDE_DIR / "brrr_kernel.cuh"], command, (nvcc_version(),))
    return Job(source, command, key, object_path(f"{op.name}-{source.stem}", key), source)


def binding_job(op: Op) -> Job:
    """binding.cpp's source, host-compiler command (less the output) and cache key."""
    import torch

    cxx = find_cxx()
    home = cuda_home()
    if home is None:
        raise BuildError("CUDA's headers not found (looked in $CUDA_HOME, beside nvcc and in /usr/local/cuda)")
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    source = op.path("binding")
    command = [cxx, "-c", *CXX_FLAGS, abi, f"-I{INCLUDE_DIR}", *op_flags(op), *torch_include_flags(),
               f"-I{home / 'include'}"]
    versions = (compiler_version(cxx), torch.__version__, str(torch.version.cuda), nvcc_version())
    key = object_key(op, source, [INCLUDE_DIR / "brrr.cuh", INCLUDE_DIR / "brrr_kernel.cuh"], command, versions)
    return Job(source, command, key, object_path(f"{op.name}-{source.stem}", key), source)


def compile_job(job: Job, verbose: bool = False) -> ObjectFile:
    """The job's object file: from the cache when its key matches, compiled otherwise."""
    source, command, key, obj, named = job
    meta = obj.with_suffix(".json")
    with locked(obj.with_suffix(".lock")):
        cached = read_object(job)
        if cached is not None:
            return cached
        with replacing(obj, suffix=".o") as tmp:
            full = [*command, str(source), "-o", str(tmp)]
            if verbose:
                print(" ".join(full), flush=True)
            start = time.monotonic()
            proc = subprocess.run(full, capture_output=True, text=True, check=False)
            seconds = time.monotonic() - start
            output = proc.stderr + proc.stdout
            tool = Path(command[0]).name
            if proc.returncode != 0:
                raise BuildError(f"{tool} could not compile {shown(named)}:\n{compiler_errors(output, named)}")
            kernels = tuple(KernelResources(**k) for k in parse_resources(output)) if "nvcc" in tool else ()
        # Written last: an object without its record is compiled again.
        write_atomic(meta, json.dumps({"key": key, "sha256": _sha256(obj), "seconds": seconds,
                                       "kernels": [asdict(k) for k in kernels]}))
        return ObjectFile(obj, key, kernels, seconds, cached=False)


def read_object(job: Job) -> ObjectFile | None:
    """The cached object of `job`, or None if it is missing, stale or corrupt."""
    obj, key = job.object, job.key
    meta = obj.with_suffix(".json")
    try:
        data = json.loads(meta.read_text())
        if data["key"] != key or data["sha256"] != _sha256(obj):
            return None  # a stale or corrupt entry: compile again
        kernels = tuple(KernelResources(**k) for k in data["kernels"])
        return ObjectFile(obj, key, kernels, data["seconds"], cached=True)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compile_objects(op: Op, arch: str, verbose: bool = False) -> tuple[ObjectFile, ObjectFile]:
    """kernel.cu and binding.cpp as object files, compiled side by side where not cached."""
    kernel, binding = compile_all([kernel_job(op, arch), binding_job(op)], f"compiling {op.name}", arch, verbose)
    check_launchers(op, kernel, binding)
    return kernel, binding


def compile_all(jobs: list[Job], what: str, target: str, verbose: bool = False) -> list[ObjectFile]:
    """The jobs' objects, those not cached compiled side by side (two at a time: the CI has 2 cores)."""
    for folder in {job.object.parent for job in jobs}:
        sweep_temporaries(folder)
    found = [read_object(job) for job in jobs]
    missing = [job for job, obj in zip(jobs, found) if obj is None]
    if missing:
        # compile_job looks again under the lock: another process may have compiled it meanwhile.
        with ticking(f"{what}: {' and '.join(j.named.name for j in missing)} ({target})"), ThreadPoolExecutor(2) as pool:
            compiled = iter([f.result() for f in [pool.submit(compile_job, job, verbose) for job in missing]])
        found = [obj or next(compiled) for obj in found]
    return found


_TEMPORARY = re.compile(r"^\.(?P<target>.+)\.[a-z0-9_]{8}(\.o)?$")  # mkstemp's names beside a cache entry


def sweep_temporaries(folder: Path) -> None:
    """Remove what killed builds left in `folder`: the temporary `.NAME.XXXXXXXX[.o]` of an entry
    whose lock no build holds (a build in progress holds it, and its temporary stays)."""
    if not folder.is_dir():
        return
    for tmp in folder.glob(".*"):
        m = _TEMPORARY.match(tmp.name)
        if m is None or not tmp.is_file():
            continue
        with try_locked((folder / m.group("target")).with_suffix(".lock")) as free:
            if free:
                tmp.unlink(missing_ok=True)


def check_launchers(op: Op, kernel: ObjectFile, binding: ObjectFile) -> None:
    """A launcher binding.cpp calls but kernel.cu defines only for other template arguments (a
    missing explicit instantiation), found from the objects' symbols: a machine without a GPU
    never links, so this is its only chance to see it. Linking would name the same symbols."""
    defined = _symbols(kernel.path, "--defined-only")
    families = {_family(name) for name in defined}
    absent = sorted(name for name in _symbols(binding.path, "--undefined-only")
                    if name not in defined and _family(name) in families and not name.startswith(("std::", "operator")))
    if absent:
        raise missing_launchers(op, absent)


def missing_launchers(op: Op, names: list[str]) -> BuildError:
    return BuildError(
        f"{shown(op.path('binding'))} calls functions {shown(op.path('cuda'))} does not define:\n" + "\n".join(names),
        hint="kernel.cu must define each launcher binding.cpp declares, with an explicit "
             "instantiation for every dtype binding.cpp dispatches to",
    )


def _symbols(obj: Path, which: str) -> set[str]:
    """Demangled symbol names of an object file (nm's `which`: --defined-only or --undefined-only)."""
    tool = shutil.which("nm")
    if tool is None:
        return set()
    out = subprocess.run([tool, "-C", which, str(obj)], capture_output=True, text=True, check=False).stdout
    names = set()
    for line in out.splitlines():  # "ADDRESS TYPE NAME", or "          U NAME" for an undefined one
        fields = line.split(None, 2) if not line.startswith(" ") else ["", *line.split(None, 1)]
        if len(fields) == 3 and len(fields[1]) == 1:
            names.add(fields[2])
    return names


def _family(name: str) -> str:
    """A function's name without its template arguments and parameters: sigmoid_forward<float>(...) -> sigmoid_forward."""
    return name.split("(")[0].split("<")[0].split()[-1] if name.strip() else name


def object_path(name: str, key: str) -> Path:
    return cache_root() / "obj" / f"{name}-{key}.o"


def kernel_check(op: Op, arch: str = DEFAULT_ARCH) -> CompileReport:
    """kernel.cu alone through nvcc and ptxas' report: the GPU compile check beside a CPU build,
    which compiles binding.cpp itself."""
    kernel = compile_job(kernel_job(op, arch))
    return CompileReport(arch=arch, kernels=kernel.kernels, seconds=kernel.seconds, cached=kernel.cached)


def compile_check(op: Op, arch: str = DEFAULT_ARCH) -> CompileReport:
    """Compile kernel.cu for `arch` and binding.cpp, and read ptxas' register and spill report: no GPU needed."""
    start = time.monotonic()
    kernel, binding = compile_objects(op, arch)
    cached = kernel.cached and binding.cached
    seconds = kernel.seconds + binding.seconds if cached else time.monotonic() - start
    return CompileReport(arch=arch, kernels=kernel.kernels, seconds=seconds, cached=cached)


# --- library (GPU) -------------------------------------------------------------------------


@dataclass(frozen=True)
class Extension:
    namespace: str
    library: Path
    seconds: float
    cached: bool

    @property
    def forward(self) -> Any:
        import torch

        return getattr(torch.ops, self.namespace).forward

    @property
    def backward(self) -> Any | None:
        """None where binding.cpp registers no backward (a forward-only op)."""
        import torch

        return getattr(getattr(torch.ops, self.namespace), "backward", None)

    def variants(self) -> dict[str, Any]:
        """First versions binding.cpp registers beside forward (forward_v1, ...), by that name."""
        import torch

        prefix = f"{self.namespace}::forward_"
        names = sorted(n.split("::")[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith(prefix))
        return {name: getattr(getattr(torch.ops, self.namespace), name) for name in names}


def device_arch() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    # 9.0 builds as sm_90a: the code then runs on 9.0 devices alone, which this build is for, and may
    # use wgmma and the other instructions sm_90 leaves out.
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def _link_command(library: Path, namespace_source: Path, objects: list[Path], libs: tuple[str, ...]) -> list[str]:
    from torch.utils import cpp_extension

    home = cuda_home()
    lib_dirs = [*cpp_extension.library_paths(), str(home / "lib64")] if home else cpp_extension.library_paths()
    return [find_cxx(), "-shared", "-fPIC", "-o", str(library), "-x", "c++", str(namespace_source), "-x", "none",
            *map(str, objects), *(f"-L{d}" for d in lib_dirs), *libs, *driver_link_flags(objects), "-Wl,--no-undefined"]


def _link(op: Op, library: Path, namespace: str, objects: list[Path], libs: tuple[str, ...], verbose: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="brrr-link-", dir=library.parent) as tmp:
        namespace_source = Path(tmp) / "namespace.cpp"
        namespace_source.write_text(f'extern "C" const char brrr_namespace[] = "{namespace}";\n')
        with replacing(library, suffix=library.suffix) as partial:
            command = _link_command(partial, namespace_source, objects, libs)
            if verbose:
                print(" ".join(command), flush=True)
            proc = subprocess.run(command, capture_output=True, text=True, check=False)
            if proc.returncode != 0 and GOLD in libs:
                # gold is only a faster linker: where the installed one cannot link (seen on a
                # GPU machine: C++ runtime symbols left undefined), the default linker does.
                command = _link_command(partial, namespace_source, objects, tuple(x for x in libs if x != GOLD))
                proc = subprocess.run(command, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise _link_error(op, command, proc.stderr + proc.stdout)


GOLD = "-fuse-ld=gold"
# Where NVIDIA's driver installs libcuda.so.1 (the driver API: cuTensorMapEncodeTiled and the like).
DRIVER_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu")


_DRIVER_SYMBOL = re.compile(r"^\s*U (cu[A-Z]\w*)$", re.M)


def driver_link_flags(objects: list[Path]) -> list[str]:
    """The driver API for a module whose objects call it (a kernel author's cuTensorMapEncodeTiled):
    libcuda.so.1 where the driver put it. Torch opens libcuda privately, so its symbols do not resolve
    a module's otherwise. Nothing for objects that call no cu* function, or without a driver (no GPU)."""
    nm = shutil.which("nm")
    if nm is None:
        return []
    undefined = subprocess.run([nm, "-u", *map(str, objects)], capture_output=True, text=True, check=False).stdout
    if not _DRIVER_SYMBOL.search(undefined):
        return []
    for folder in DRIVER_DIRS:
        if Path(folder, "libcuda.so.1").is_file():
            return [f"-L{folder}", "-l:libcuda.so.1"]
    return []
# Symbols of the C++ runtime, never a launcher kernel.cu forgot: a link that leaves them undefined
# is a toolchain problem, and blaming kernel.cu for it would send the user the wrong way.
_RUNTIME_SYMBOL = re.compile(r"^(std::|operator |__cxa|__gxx|__cxx|vtable for|VTT for|typeinfo|__dso_handle)")


def _link_error(op: Op, command: list[str], output: str) -> BuildError:
    undefined = list(dict.fromkeys(re.findall(r"undefined reference to [`'](.+?)'", output)))
    launchers = [name for name in undefined if not _RUNTIME_SYMBOL.match(name)]
    if launchers:
        return missing_launchers(op, launchers)
    return BuildError(f"linking {op.name} failed:\n{output[-3000:]}\ncommand: {' '.join(command)}",
                      hint="the compiler or linker could not link the C++ runtime: check CXX and the toolchain"
                      if undefined else None)


def build_extension(op: Op, arch: str | None = None, verbose: bool = False) -> Extension:
    """Compile (or reuse) kernel.cu's and binding.cpp's objects, link them, and load the library into torch."""

    arch = arch or device_arch()
    start = time.monotonic()
    kernel, binding = compile_objects(op, arch, verbose)
    return link_and_load(op, [binding, kernel], ("brrr", LINK_LIBS), start, verbose)


def link_and_load(op: Op, objects: list[ObjectFile], kind: tuple[str, tuple[str, ...]], start: float,
                  verbose: bool = False) -> Extension:
    """Link the objects into a library named by their keys (cached like an object) and load it into
    torch. kind: the namespace's prefix and the libraries to link against."""
    import torch

    prefix, libs = kind
    key = hashlib.sha256(" ".join([*(o.key for o in objects), *libs]).encode()).hexdigest()[:16]
    namespace = f"{prefix}_{op.name}_{key}"
    library = cache_root() / "ext" / f"{namespace}.so"
    paths = [o.path for o in objects]
    with locked(library.with_suffix(".lock")):
        linked = not library.is_file()
        if linked:
            with ticking(f"linking {op.name}"):
                _link(op, library, namespace, paths, libs, verbose)
        if not hasattr(torch.ops, namespace) or not hasattr(getattr(torch.ops, namespace), "forward"):
            try:
                torch.ops.load_library(str(library))
            except OSError:
                if linked:
                    raise
                _link(op, library, namespace, paths, libs, verbose)  # a corrupt entry
                torch.ops.load_library(str(library))
    cached = all(o.cached for o in objects) and not linked
    return Extension(namespace, library, time.monotonic() - start, cached)
