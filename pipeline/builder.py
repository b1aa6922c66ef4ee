"""Compile an op's kernel.cu: a compile check with nvcc anywhere, a loadable extension on a GPU.

Both are cached under $BRRR_CACHE (default ~/.cache/brrr) by a key over the op's CUDA sources,
brrr's header, the flags, the target architecture and the torch and nvcc versions. An entry is
written into a temporary folder and renamed into place, so a killed build never leaves a half
entry; a lock file makes a second process wait for the first and reuse what it built.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from pipeline.errors import BuildError
from pipeline.files import locked, write_atomic
from pipeline.progress import ticking
from pipeline.spec import Op

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
# The CPU torch wheel ships c10/cuda headers but not this generated one; see the shim's comment.
CPU_WHEEL_SHIM = INCLUDE_DIR / "cpu_wheel_shim"
DEFAULT_ARCH = "sm_90"
NVCC_FLAGS = ("-std=c++20", "-O3", "--expt-relaxed-constexpr")
CUDA_SUFFIXES = (".cu", ".cuh", ".h")


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


def cache_root() -> Path:
    return Path(os.environ.get("BRRR_CACHE", Path.home() / ".cache" / "brrr"))


@lru_cache(maxsize=1)
def find_nvcc() -> str | None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidates = [Path(home) / "bin" / "nvcc"] if home else []
    found = shutil.which("nvcc")
    if found:
        candidates.append(Path(found))
    candidates.append(Path("/usr/local/cuda/bin/nvcc"))
    return next((str(c) for c in candidates if c.is_file()), None)


@lru_cache(maxsize=1)
def nvcc_version() -> str:
    nvcc = find_nvcc()
    if nvcc is None:
        return "none"
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=False).stdout
    return out.strip().splitlines()[-1] if out.strip() else "unknown"


def cuda_sources(op: Op) -> list[Path]:
    return sorted(p for p in op.folder.iterdir() if p.suffix in CUDA_SUFFIXES and p.is_file())


def build_key(op: Op, kind: str, arch: str, flags: tuple[str, ...]) -> str:
    import torch

    h = hashlib.sha256()
    for path in [*cuda_sources(op), INCLUDE_DIR / "brrr.cuh"]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    for part in (kind, arch, *flags, torch.__version__, str(torch.version.cuda), nvcc_version()):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


# --- nvcc output --------------------------------------------------------------------------

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")
_DIAG = re.compile(r"^(?P<file>[^\s(:]+)(?:\((?P<line>\d+)\)|:(?P<line2>\d+)(?::\d+)?):\s*(?:fatal )?error")


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
    lines = output.replace(str(source), shown).splitlines()
    picked: list[str] = []
    for i, line in enumerate(lines):
        if _DIAG.match(line.strip()) or " error:" in line or line.startswith("error"):
            picked.extend(lines[i : i + 3])
        if len(picked) >= 24:
            break
    return "\n".join(dict.fromkeys(picked)) if picked else "\n".join(lines[-20:])


def first_error_location(output: str) -> tuple[str, int] | None:
    for line in output.splitlines():
        m = _DIAG.match(line.strip())
        if m:
            return m.group("file"), int(m.group("line") or m.group("line2"))
    return None


# --- compile check (no GPU needed) ---------------------------------------------------------


def _torch_include_flags() -> list[str]:
    from torch.utils import cpp_extension

    flags = [f"-I{p}" for p in cpp_extension.include_paths()]
    probe = Path(cpp_extension.include_paths()[0]) / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
    if not probe.is_file():
        flags.append(f"-I{CPU_WHEEL_SHIM}")
    return flags


def compile_check(op: Op, arch: str = DEFAULT_ARCH) -> CompileReport:
    """nvcc -c the op's kernel.cu for `arch` and read ptxas' register and spill report."""
    import time

    nvcc = find_nvcc()
    if nvcc is None:
        raise BuildError("nvcc not found (looked in $CUDA_HOME/bin, on PATH and in /usr/local/cuda/bin)")
    flags = (*NVCC_FLAGS, f"-arch={arch}", "-DBRRR_NAMESPACE=brrr_compile_check")
    key = build_key(op, "check", arch, flags)
    entry = cache_root() / "check" / f"{op.name}-{key}.json"
    with locked(entry.with_suffix(".lock")):
        cached = _read_report(entry)
        if cached is not None:
            return cached
        source = op.path("cuda")
        cmd = [nvcc, "-c", *flags, "-Xptxas", "-v", f"-I{INCLUDE_DIR}", *_torch_include_flags(), str(source)]
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="brrr-nvcc-") as tmp, ticking(f"nvcc {op.name}/kernel.cu ({arch})"):
            proc = subprocess.run([*cmd, "-o", str(Path(tmp) / "kernel.o")], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"nvcc could not compile {source}:\n{compiler_errors(proc.stderr + proc.stdout, source)}")
        kernels = tuple(KernelResources(**k) for k in parse_resources(proc.stderr + proc.stdout))
        report = CompileReport(arch=arch, kernels=kernels, seconds=time.monotonic() - start, cached=False)
        write_atomic(entry, json.dumps(asdict(report)))
        return report


def _read_report(entry: Path) -> CompileReport | None:
    try:
        data = json.loads(entry.read_text())
        kernels = tuple(KernelResources(**k) for k in data["kernels"])
        return CompileReport(arch=data["arch"], kernels=kernels, seconds=data["seconds"], cached=True)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing or corrupt: compile again


# --- extension (GPU) -----------------------------------------------------------------------


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
    def backward(self) -> Any:
        import torch

        return getattr(torch.ops, self.namespace).backward


def device_arch() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def build_extension(op: Op, arch: str | None = None, verbose: bool = False) -> Extension:
    """Build kernel.cu into a shared library with torch.utils.cpp_extension and load it."""
    import time

    import torch
    from torch.utils import cpp_extension

    arch = arch or device_arch()
    flags = (*NVCC_FLAGS,)
    key = build_key(op, "ext", arch, flags)
    namespace = f"brrr_{op.name}_{key}"
    final = cache_root() / "ext" / namespace
    library = final / f"{namespace}.so"
    start = time.monotonic()
    with locked(cache_root() / "ext" / f"{namespace}.lock"):
        if not (final / "complete").is_file():
            shutil.rmtree(final, ignore_errors=True)  # a stale or half-built entry
            staging = Path(tempfile.mkdtemp(prefix=f".{namespace}-", dir=final.parent))
            major_minor = arch.removeprefix("sm_")
            os.environ["TORCH_CUDA_ARCH_LIST"] = f"{major_minor[:-1]}.{major_minor[-1]}"
            try:
                with ticking(f"building {op.name}/kernel.cu ({arch}, torch.utils.cpp_extension)"):
                    cpp_extension.load(
                        name=namespace,
                        sources=[str(op.path("cuda"))],
                        extra_cuda_cflags=[*flags, f"-DBRRR_NAMESPACE={namespace}"],
                        extra_include_paths=[str(INCLUDE_DIR)],
                        build_directory=str(staging),
                        is_python_module=False,
                        verbose=verbose,
                    )
            except (RuntimeError, subprocess.CalledProcessError) as e:
                shutil.rmtree(staging, ignore_errors=True)
                raise BuildError(
                    f"building {op.path('cuda')} failed:\n{compiler_errors(str(e), op.path('cuda'))}"
                ) from e
            (staging / "complete").write_text(namespace)
            os.replace(staging, final)
            return Extension(namespace, library, time.monotonic() - start, cached=False)
    if not hasattr(torch.ops, namespace) or not hasattr(getattr(torch.ops, namespace), "forward"):
        torch.ops.load_library(str(library))
    return Extension(namespace, library, time.monotonic() - start, cached=True)
