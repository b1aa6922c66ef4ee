"""torch.ops.brrr_autograd: the registered ops' autograd formula in C++ (include/brrr_autograd.cpp).

Built once per cache, compiler and torch version (about 20 s of torch's headers, then cached as
every other object), loaded once a process. Where it cannot be built (no host compiler) or
BRRR_NATIVE_AUTOGRAD=0 asks for it, torch_library falls back to torch.library.register_autograd:
the same gradients, with Python's host time on every call.
"""

from __future__ import annotations

import os
import subprocess
import warnings
from functools import lru_cache
from pathlib import Path

from ..base.assets import INCLUDE_DIR
from ..base.errors import BuildError
from ..base.files import locked, replacing
from ..cuda import builder

SOURCE = INCLUDE_DIR / "brrr_autograd.cpp"
SETTING = "BRRR_NATIVE_AUTOGRAD"


def wanted() -> bool:
    return os.environ.get(SETTING, "1") != "0"


def _job() -> builder.Job:
    import torch

    cxx = builder.find_cxx()
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    command = [cxx, "-c", *builder.CXX_FLAGS, abi, *builder.torch_include_flags()]
    versions = (builder.compiler_version(cxx), torch.__version__)
    key = builder.object_key(None, SOURCE, [], command, versions)
    return builder.Job(SOURCE, command, key, builder.object_path("brrr_autograd", key), SOURCE)


def _library() -> Path:
    """The shared library, linked beside its object (a file of its own per key)."""
    from torch.utils import cpp_extension

    obj = builder.compile_job(_job()).path
    library = obj.with_suffix(".so")
    dirs = cpp_extension.library_paths()
    with locked(library.with_suffix(".lock")):
        if library.is_file():
            return library
        with replacing(library, suffix=".so") as partial:
            command = [builder.find_cxx(), "-shared", "-fPIC", "-o", str(partial), str(obj),
                       *(f"-L{d}" for d in dirs), *(f"-Wl,-rpath,{d}" for d in dirs), "-lc10", "-ltorch_cpu", "-ltorch"]
            proc = subprocess.run(command, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise BuildError(f"linking {library.name} failed:\n{proc.stderr[-3000:]}")
    return library


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether torch.ops.brrr_autograd.register can be called in this process (built and loaded here)."""
    import torch

    if not wanted():
        return False
    try:
        torch.ops.load_library(str(_library()))
    except (BuildError, OSError) as e:
        warnings.warn(f"brrr: the C++ autograd formula could not be built, so registered ops use Python's "
                      f"(slower on the host, the same gradients): {str(e).splitlines()[0]}", stacklevel=2)
        return False
    return True
