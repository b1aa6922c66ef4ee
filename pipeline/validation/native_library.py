"""torch.ops.brrr_native: what a registered op does on every call, in C++ (include/brrr_library.cpp):
its autograd formula, and the call from torch.ops.brrr.NAME into the extension's own C++ op.

Built once per cache, compiler and torch version (about 20 s of torch's headers, then cached as
every other object), loaded once a process. Where it cannot be built (no host compiler) or
BRRR_NATIVE=0 asks, torch_library registers Python's instead (torch.library.register_autograd, a
Python kernel calling the extension): the same results and gradients, with more host time a call.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base import settings
from ..base.assets import INCLUDE_DIR
from ..base.errors import BuildError, first_lines
from ..cuda import builder
from ..cuda.module_build import link_torch_library
from ..op.contract import saved_positions

if TYPE_CHECKING:
    from ..op.spec import OpSpec

SOURCE = INCLUDE_DIR / "brrr_library.cpp"
SETTING = "BRRR_NATIVE"
NAMESPACE = "brrr_native"


def wanted() -> bool:
    return settings.switch(SETTING, True)


def _job(namespace: str) -> builder.Job:
    import torch

    cxx = builder.find_cxx()
    abi = f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"
    renamed = [] if namespace == NAMESPACE else [f"-DBRRR_NATIVE_NAMESPACE={namespace}"]
    command = [cxx, "-c", *builder.CXX_FLAGS, abi, *renamed, *builder.torch_include_flags()]
    versions = (builder.compiler_version(cxx), torch.__version__)
    key = builder.object_key(None, SOURCE, [], command, versions)
    return builder.Job(SOURCE, command, key, builder.object_path("brrr_library", key), SOURCE)


def build(namespace: str = NAMESPACE) -> Path:
    """The shared library defining torch.ops.NAMESPACE.autograd and .route, linked beside its object (a
    file of its own per key). brrr's is brrr_native; an exported package's test builds its own namespace."""
    obj = builder.compile_job(_job(namespace)).path
    library = obj.with_suffix(".so")
    link_torch_library(library, [obj])
    return library


def loaded() -> bool:
    """Whether this process has torch.ops.brrr_native already: a second copy (another cache's, in a
    long-lived process) would define the namespace twice, which torch refuses."""
    import torch

    try:
        torch.ops.brrr_native.autograd  # noqa: B018 (the lookup is the question)
    except (AttributeError, RuntimeError):
        return False
    return True


@lru_cache(maxsize=1)
def available() -> bool:
    """Whether torch.ops.brrr_native can be called in this process (built and loaded here if need be)."""
    import torch

    if not wanted():
        return False
    if loaded():
        return True
    try:
        torch.ops.load_library(str(build()))
    except (BuildError, OSError, RuntimeError) as e:
        warnings.warn(f"brrr: {SOURCE.name} could not be built or loaded, so registered ops call through Python "
                      f"(more host time a call, the same results): {first_lines(str(e), 2, ' ')}", stacklevel=2)
        return False
    return True


def autograd(namespace: str, name: str, spec: OpSpec, positions: tuple[int, ...]) -> bool:
    """NAMESPACE::NAME's Autograd kernel in C++, calling NAME_backward; False where it is not available."""
    if not available():
        return False
    import torch

    torch.ops.brrr_native.autograd(namespace, name, len(spec.inputs), len(spec.outputs), list(saved_positions(spec)),
                                   list(positions))
    return True


def route(namespace: str, name: str, key: str, target: Any, pick: tuple[int, ...] = (), inputs: int = 0) -> bool:
    """Whether NAMESPACE::NAME on dispatch key `key` now calls `target` (an extension's op, torch.ops.EXT.forward)
    in C++. False, and nothing registered, where `target` is not a torch op (a pybind module's function)
    or does not take NAME's arguments type for type: the caller registers a Python kernel instead.
    `pick` and `inputs`: a backward's schema returns the gradients at `pick` of a target giving `inputs`."""
    import torch

    if not available() or not isinstance(target, torch._ops.OpOverloadPacket):
        return False
    return not torch.ops.brrr_native.route(namespace, name, key, target._qualified_op_name, list(pick), inputs)
