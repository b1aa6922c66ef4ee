"""An op whose CUDA C is an extension its author already has: one `.cu` (kernel.cu, or the folder's
only `.cu`) holding the kernels *and* the torch wrapper (`#include <torch/extension.h>`,
`PYBIND11_MODULE`), as `torch.utils.cpp_extension.load()` and `setup.py` users write it.

The spec says which of the module's functions are the cuda stage's forward and backward, in a few
lines:

    torch_module=TorchModule(forward="fused_bias_gelu_fwd_cuda", backward=backward_from_module)

A string names a function of the module: a name its PYBIND11_MODULE defines (`m.def("forward",
...)`) or a C++ function of the source (brrr binds it itself). A Python function adapts a module
whose functions do not keep brrr's contract (an output passed in, a gradient computed in Python):
it receives the module first, then the contract's arguments:

    def backward_from_module(m, grad_y, x, bias):
        grad_x = m.fused_bias_gelu_bwd_cuda(grad_y, x, bias)
        return grad_x, grad_x.sum(0)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# A function of the module by name, or a Python function of (module, *contract arguments).
ModuleCall = str | Callable[..., Any]


@dataclass(frozen=True)
class TorchModule:
    forward: ModuleCall
    backward: ModuleCall | None = None  # None: the op has no backward (OpSpec.forward_only says why)
    # More forward implementations checked beside forward (a float4 version and the scalar one), by row name.
    variants: dict[str, ModuleCall] = field(default_factory=dict)
    # Other files of the op folder compiled into the module (the .cpp holding a load() project's
    # PYBIND11_MODULE, say); the .cu is always compiled.
    sources: tuple[str, ...] = ()
    # C++ functions of the sources brrr binds by name for the Python functions above to call as
    # module.NAME (one registered with TORCH_LIBRARY_IMPL, or taking a scalar the contract has not).
    functions: tuple[str, ...] = ()

    def calls(self) -> dict[str, ModuleCall]:
        """Every call the spec names, by the role it plays: forward, backward, and each variant."""
        named: dict[str, ModuleCall] = {"forward": self.forward}
        if self.backward is not None:
            named["backward"] = self.backward
        return named | dict(self.variants)

    def function_names(self) -> tuple[str, ...]:
        """The module functions named by string: brrr binds those the module does not define itself."""
        return tuple(dict.fromkeys([*(c for c in self.calls().values() if isinstance(c, str)), *self.functions]))


def bound(call: ModuleCall, module: Any) -> Callable[..., Any]:
    """`call` on a loaded module: its function of that name, or the adapter with the module filled in."""
    if isinstance(call, str):
        return getattr(module, call)

    def adapted(*args: Any) -> Any:
        return call(module, *args)

    return adapted


_TORCH_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"](torch/|ATen/|pybind11/)', re.M)
_MODULE = re.compile(r"\b(PYBIND11_MODULE|TORCH_LIBRARY|TORCH_LIBRARY_IMPL)\s*\(")


def torch_wrapper_line(text: str) -> int:
    """The line of a .cu's first torch include or module declaration (it holds a torch wrapper), or 0."""
    found = [m.start() for m in (_TORCH_INCLUDE.search(text), _MODULE.search(text)) if m]
    return text.count("\n", 0, min(found)) + 1 if found else 0


def module_function_names(text: str) -> tuple[str, ...]:
    """The Python names a PYBIND11_MODULE in `text` defines (`m.def("forward", ...)`), in order."""
    return tuple(dict.fromkeys(re.findall(r'\.\s*def\s*\(\s*"(\w+)"', text)))
