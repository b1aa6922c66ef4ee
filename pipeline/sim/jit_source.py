"""Reading a numba stage's source: which functions are @cuda.jit kernels and which are device functions.
The one recogniser translate, mutate and the float notes share."""

from __future__ import annotations

import ast


def is_jit(decorator: ast.expr) -> tuple[bool, bool]:
    """(is @cuda.jit in any spelling: cuda.jit, numba.cuda.jit, jit, called or not; has device=True)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    jit = isinstance(target, ast.Attribute) and target.attr == "jit" or isinstance(target, ast.Name) and target.id == "jit"
    device = jit and isinstance(decorator, ast.Call) and any(
        k.arg == "device" and isinstance(k.value, ast.Constant) and k.value.value is True for k in decorator.keywords)
    return jit, device


def jit_decorator(fn: ast.FunctionDef) -> ast.expr | None:
    """fn's @cuda.jit decorator, or None."""
    return next((d for d in fn.decorator_list if is_jit(d)[0]), None)


def is_kernel(fn: ast.FunctionDef) -> bool:
    """A @cuda.jit function that is launched (not device=True)."""
    decorator = jit_decorator(fn)
    return decorator is not None and not is_jit(decorator)[1]


def is_device_function(fn: ast.FunctionDef) -> bool:
    decorator = jit_decorator(fn)
    return decorator is not None and is_jit(decorator)[1]
