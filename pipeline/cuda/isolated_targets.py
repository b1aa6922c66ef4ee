"""What isolated.py's child process loads to run an op's calls: the op's compiled code, named so it
can cross to the child (a path and a few names, never the loaded library or a Python function).

- `OpsLibrary`: kernel.cu and binding.cpp linked into a library registering torch.ops.NAMESPACE
  (cpu_build.build_cpu_extension);
- `ModuleLibrary`: an op brought as its own torch extension (spec.torch_module: a .cu holding the
  kernels, the torch wrapper and PYBIND11_MODULE), built as a Python module (module_build). The
  spec's calls may be Python adapters of spec.py, so the child loads the op and binds them there:
  the adapter, the author's wrapper and the kernels all run in the child.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

Call = Callable[..., Any]


class Target(Protocol):
    library: str  # the shared library holding brrr's runtime and crash reporter

    def load(self) -> Callable[[str], Call]:
        """Load the code in this process; the call of each name (forward, backward, a variant)."""
        ...


@dataclass(frozen=True)
class OpsLibrary:
    library: str
    namespace: str

    def load(self) -> Callable[[str], Call]:
        import torch

        torch.ops.load_library(self.library)
        ops = getattr(torch.ops, self.namespace)
        return lambda name: getattr(ops, name)


@dataclass(frozen=True)
class ModuleLibrary:
    library: str
    module: str  # the module's import name, which is its library's own (module_build.import_name)
    folder: str  # the op folder, whose spec.py binds the module's functions

    def load(self) -> Callable[[str], Call]:
        from ..op.extension import bound
        from ..op.loaders import load_op
        from .module_build import import_module

        op = load_op(self.folder)
        assert op.spec.torch_module is not None
        module = import_module(self.module, Path(self.library))
        calls = op.spec.torch_module.calls()
        return lambda name: bound(calls[name], module)


def target_of(build: Any) -> Target:
    """The target of a CPU build: a torch.ops library (it has a namespace), else the op's own module
    (module_build.ModuleBuild, which knows its op folder)."""
    if hasattr(build, "namespace"):
        return OpsLibrary(str(build.library), build.namespace)
    return ModuleLibrary(str(build.library), build.module.__name__, str(build.folder))
