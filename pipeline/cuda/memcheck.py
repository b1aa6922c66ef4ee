"""Memory checks of the CPU execution of the cuda stage: what a checked build adds.

A checked build compiles the rewritten kernel.cu with gcc's outline address-sanitizer
instrumentation, which calls a function before every load and store of kernel code; brrr's own
definitions of those functions (include/cpu/brrr_cpu_memcheck.cpp, linked into the op's CPU
library) report an access outside every tensor passed to the launch, and a race on shared
memory, as a fault at kernel.cu:line with the block and thread.

To know how large the tensor behind each pointer argument is, a small library
(include/cpu/brrr_cpu_alloc.cpp) wraps torch's CPU allocator and records every live allocation.
It is loaded once per process, before the tensors a checked launch receives are made: a pointer
into memory allocated before it (or not by torch) leaves that launch's bounds unchecked (its
shared memory is still checked).
"""

from __future__ import annotations

import ctypes
import hashlib
import subprocess
from functools import lru_cache
from pathlib import Path

from ..base.assets import CPU_INCLUDE
from ..base.errors import BuildError
from ..base.files import locked, replacing
from .builder import Job

MEMCHECK_SOURCE = CPU_INCLUDE / "brrr_cpu_memcheck.cpp"
ALLOC_SOURCE = CPU_INCLUDE / "brrr_cpu_alloc.cpp"

# Every load and store of kernel.cu calls __asan_{load,store}N_noabort(address) (no inline shadow
# check: the threshold 0 makes every access a call), with no stack or global poisoning (brrr's
# callbacks classify addresses themselves). DWARF 4: binutils 2.40's addr2line misreads the
# file table gcc 12 writes in DWARF 5 after #line, and reports would name the rewritten file.
# -fsanitize=alignment: a typed access at an address its type's alignment does not divide (a float4
# load 4 bytes past a multiple of 16) calls brrr's handler, which faults as a GPU does.
# -fsanitize=bounds: an index past an array of known size (a local register array, a Pack's v[W]),
# which the address checks cannot see (the fiber's stack is the thread's own), calls brrr's handler.
CHECK_FLAGS = (
    "-fsanitize=kernel-address",
    "-fsanitize=alignment",
    "-fsanitize=bounds",
    "--param", "asan-instrumentation-with-call-threshold=0",
    "--param", "asan-stack=0",
    "--param", "asan-globals=0",
    "-gdwarf-4",
)


def memcheck_job(extra: tuple[str, ...] = ()) -> Job:
    """brrr_cpu_memcheck.cpp, compiled as the runtime is (never instrumented) but without -g, so
    gdb's `step` passes over the callbacks."""
    from .builder import compiler_version, find_cxx, object_key, object_path, tls_flags

    cxx = find_cxx()
    command = [cxx, "-c", "-std=c++20", "-O2", "-fPIC", *tls_flags(), f"-I{CPU_INCLUDE}", *extra]
    key = object_key(None, MEMCHECK_SOURCE, sorted(CPU_INCLUDE.glob("*.h")), command, (compiler_version(cxx),))
    return Job(MEMCHECK_SOURCE, command, key, object_path("cpu-memcheck", key), MEMCHECK_SOURCE)


def _registry_path() -> Path:
    import torch

    from .builder import cache_root, compiler_version, find_cxx

    h = hashlib.sha256(ALLOC_SOURCE.read_bytes())
    for part in (compiler_version(find_cxx()), torch.__version__, str(torch._C._GLIBCXX_USE_CXX11_ABI)):
        h.update(part.encode())
    return cache_root() / "cpu" / f"libbrrr_cpu_alloc-{h.hexdigest()[:16]}.so"


def _build_registry(library: Path) -> None:
    import torch
    from torch.utils import cpp_extension

    from .builder import find_cxx

    lib_dirs = cpp_extension.library_paths()
    with replacing(library, suffix=".so") as tmp:
        command = [find_cxx(), "-std=c++20", "-O2", "-fPIC", "-shared",
                   f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
                   *(f"-I{p}" for p in cpp_extension.include_paths()), str(ALLOC_SOURCE), "-o", str(tmp),
                   *(f"-L{d}" for d in lib_dirs), *(f"-Wl,-rpath,{d}" for d in lib_dirs), "-lc10"]
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"could not build brrr's allocation registry ({ALLOC_SOURCE.name}):\n{proc.stderr[-2000:]}")


@lru_cache(maxsize=1)
def install_allocation_registry() -> Path:
    """Build (once, cached) and load the allocation registry: from now on torch's CPU
    allocations are recorded. Loaded with RTLD_GLOBAL, so every checked op library finds it."""
    library = _registry_path()
    with locked(library.with_suffix(".lock")):
        if not library.is_file():
            _build_registry(library)
    _loaded.append(ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL))
    return library


_loaded: list[ctypes.CDLL] = []  # the registry, once installed


def narrow_allocation(allocation: int, lo: int, nbytes: int) -> None:
    """Tell the registry (if installed) that the allocation at `allocation` holds one tensor of
    `nbytes` at `lo` between guard bands: the checks then bound accesses by the tensor, not the bands."""
    if _loaded:
        _loaded[0].brrr_alloc_narrow(ctypes.c_void_p(allocation), ctypes.c_void_p(lo), ctypes.c_size_t(nbytes))
