"""Check an op's SPEC once, when it is loaded, before anything runs.

Every field's type and shape, then what make_inputs and the edge cases return on the CPU: one
tensor per declared input, floating-point ones in the dtype asked for, sized by the size asked
for. A spec that breaks the contract would otherwise surface far from its cause (a bare tensor
split into rows, a float32 row checked on float64 data) or, worse, pass. Each error names the
field or function, its line in spec.py, what was expected and what was found.
"""

from __future__ import annotations

import ast
import keyword
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..base.errors import OpLoadError, innermost_line_in, is_device_fault
from .extension import TorchModule
from .spec import STAGES, Layout, OpSpec
from .tolerances import Widen


class _Checker:
    def __init__(self, spec: OpSpec, path: Path) -> None:
        self.spec = spec
        self.path = path
        self._lines: dict[str, int] | None = None

    def line_of(self, field: str) -> str:
        """':LINE' of `field=` in spec.py's OpSpec(...) call, or '' where there is none."""
        if self._lines is None:
            self._lines = {}
            try:
                tree = ast.parse(self.path.read_text())
            except (OSError, SyntaxError, ValueError):
                tree = ast.Module(body=[], type_ignores=[])
            for node in ast.walk(tree):
                if isinstance(node, ast.keyword) and node.arg:
                    self._lines.setdefault(node.arg, node.value.lineno)
        line = self._lines.get(field)
        return f":{line}" if line else ""

    def fail(self, field: str, message: str, hint: str | None = None) -> OpLoadError:
        return OpLoadError(f"{self.path}{self.line_of(field)}: SPEC.{field} {message}", hint=hint)

    # -- fields -----------------------------------------------------------------------------

    def identifier(self, field: str, value: Any, why: str = "") -> None:
        if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
            raise self.fail(field, f"must be a Python identifier{why}, got {value!r}")

    def names(self, field: str, value: Any, required: bool) -> None:
        if isinstance(value, str):
            raise self.fail(field, f"must be a tuple of names, got the string {value!r}",
                            hint=f"for one name write ({value!r},)")
        if not isinstance(value, (tuple, list)) or (required and not value):
            raise self.fail(field, f"must be a {'non-empty ' if required else ''}tuple of names, got {value!r}")
        for name in value:
            self.identifier(field, name, f" (each of {field})")
        if len(set(value)) != len(value):
            raise self.fail(field, f"names {value!r} more than once")

    def size(self, field: str, value: Any) -> None:
        ok = (_is_count(value) or (isinstance(value, tuple) and value and all(_is_count(v) for v in value)))
        if not ok:
            raise self.fail(field, f"must be a size (an int >= 0, or a tuple of them), got {value!r} "
                                   f"({type(value).__name__})")

    def sizes(self, field: str, value: Any, required: bool) -> None:
        if _is_count(value) or not isinstance(value, (tuple, list)) or (required and not value):
            raise self.fail(field, f"must be a {'non-empty ' if required else ''}tuple of sizes (each an int, or a "
                                   f"tuple of ints), got {value!r} ({type(value).__name__})",
                            hint=f"for one size write ({value!r},)" if _is_count(value) else None)
        for s in value:
            self.size(field, s)

    def mapping(self, field: str, value: Any, key: Callable[[Any], bool], val: Callable[[Any], bool],
                expected: str) -> None:
        if not isinstance(value, dict) or not all(key(k) and val(v) for k, v in value.items()):
            raise self.fail(field, f"must be a dict of {expected}, got {value!r}")

    def callable_or_none(self, field: str, value: Any, required: bool = False) -> None:
        if not callable(value) and (required or value is not None):
            raise self.fail(field, f"must be a function{'' if required else ' or None'}, got {value!r}")

    def fields(self) -> None:
        s = self.spec
        self.identifier("name", s.name, " (it names the op's files in the build cache and its torch.library namespace)")
        self.names("inputs", s.inputs, required=True)
        self.names("outputs", s.outputs, required=True)
        self.names("stats", s.stats, required=False)
        self.names("saved", s.saved, required=False)
        clash = (set(s.inputs) & set(s.outputs)) | (set(s.inputs) & set(s.stats)) | (set(s.outputs) & set(s.stats))
        if clash:
            raise self.fail("outputs", f"and inputs/stats share the names {sorted(clash)}: each tensor needs its own")
        self.callable_or_none("make_inputs", s.make_inputs, required=True)
        self.sizes("sim_sizes", s.sim_sizes, required=True)
        self.sizes("gpu_sizes", s.gpu_sizes, required=True)
        self.size("gradcheck_size", s.gradcheck_size)
        self.sizes("bench_sizes", s.bench_sizes, required=False)
        self.sizes("accumulator_sizes", s.accumulator_sizes, required=False)
        self.mapping("params", s.params, lambda k: isinstance(k, str) and k.isidentifier(), lambda v: True,
                     "parameter names to values")
        self.mapping("edge_cases", s.edge_cases, lambda k: isinstance(k, str), callable,
                     "case names to functions of (dtype, device)")
        self.callable_or_none("oracle", s.oracle)
        self.callable_or_none("huge", s.huge)
        self.mapping("dtypes", s.dtypes, lambda k: k in STAGES,
                     lambda v: isinstance(v, (tuple, list)) and all(_is_float_dtype(d) for d in v),
                     f"stage ({', '.join(STAGES)}) to a tuple of floating-point torch dtypes")
        self.widenings(s)
        self.mapping("mutants", s.mutants, lambda k: isinstance(k, str), lambda v: isinstance(v, str) and bool(v.strip()),
                     "mutant keys (as `brrr mutate` prints them) to why each survives")
        self.mapping("defines", s.defines, lambda k: isinstance(k, str) and k.isidentifier(),
                     lambda v: isinstance(v, (str, int)) and not isinstance(v, bool) and "\n" not in str(v),
                     "macro names to values (strings or integers, \"\" for a bare -DNAME)")
        self.mapping("layouts", s.layouts, lambda k: k in STAGES, lambda v: isinstance(v, Layout),
                     f"stage ({', '.join(STAGES)}) to a Layout")
        if not isinstance(s.doc, str):
            raise self.fail("doc", f"must be a string, got {s.doc!r}")
        self.gradients(s)

    def gradients(self, s: OpSpec) -> None:
        """forward_only, no_grad and torch_module agree with each other and with the inputs."""
        if not isinstance(s.forward_only, str):
            raise self.fail("forward_only", f"must be a string saying why the op has no backward, got {s.forward_only!r}")
        self.names("no_grad", s.no_grad, required=False)
        unknown = [n for n in s.no_grad if n not in s.inputs]
        if unknown:
            raise self.fail("no_grad", f"names {unknown}, which are not inputs ({', '.join(s.inputs)})")
        if s.torch_module is None:
            return
        if not isinstance(s.torch_module, TorchModule):
            raise self.fail("torch_module", f"must be TorchModule(forward=..., backward=...), got {s.torch_module!r}")
        for role, call in s.torch_module.calls().items():
            if not (callable(call) or (isinstance(call, str) and call.isidentifier())):
                raise self.fail("torch_module", f"{role} must be a function name of the module or a Python "
                                                f"function of (module, *arguments), got {call!r}")
        if s.torch_module.backward is None and not s.forward_only:
            raise self.fail("torch_module", "names no backward",
                            hint="name the module's backward function, or say why the op has none: "
                                 "forward_only=\"...\"")

    def widenings(self, s: Any) -> None:
        """`tolerances` is a tuple of Widen(...), each naming an output or gradient of the op and saying why."""
        if not isinstance(s.tolerances, (tuple, list)) or not all(isinstance(w, Widen) for w in s.tolerances):
            raise self.fail("tolerances", f"must be a tuple of Widen(output, why, ...), got {s.tolerances!r}")
        names = set(s.outputs) | {f"grad_{n}" for n in s.inputs}
        for w in s.tolerances:
            if w.output not in names:
                raise self.fail("tolerances", f"widens {w.output!r}, which is not an output or gradient "
                                              f"({', '.join(sorted(names))})")
            if not w.why.strip():
                raise self.fail("tolerances", f"the widening of {w.output!r} must say why")
            if w.scale is not None and not callable(w.scale):
                raise self.fail("tolerances", f"the widening of {w.output!r} has a scale that is not callable")
            # NaN compares false with everything, so `err <= nan * scale` would pass nothing and
            # `not (err > bound)` everything: a bound that is no finite positive number is refused.
            if w.ulps is not None and (isinstance(w.ulps, bool) or not isinstance(w.ulps, (int, float))
                                       or not math.isfinite(w.ulps) or w.ulps <= 0):
                raise self.fail("tolerances", f"the widening of {w.output!r} has ulps={w.ulps!r}: expected a "
                                              "finite number of ulps above 0 (or None for the dtype's default)")

    # -- what the functions return ------------------------------------------------------------

    def made(self, fn: Callable[..., Any], call: str, result: Any, dtype: torch.dtype, size: Any = None) -> None:
        """`result` of `call` (make_inputs or an edge case) is one CPU tensor per input in `dtype`, sized by `size`."""
        declared = ", ".join(self.spec.inputs)
        count = len(self.spec.inputs)
        if isinstance(result, torch.Tensor):
            raise self._fail_fn(fn, f"{call} returned a bare tensor; expected a tuple of {count} tensor(s), one per "
                                       f"input ({declared})", "return (x,) for one input")
        if not isinstance(result, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in result):
            raise self._fail_fn(fn, f"{call} returned {type(result).__name__}; expected a tuple of {count} "
                                       f"tensor(s), one per input ({declared})")
        if len(result) != count:
            raise self._fail_fn(fn, f"{call} returned {len(result)} tensor(s) for the {count} declared input(s) "
                                       f"({declared})")
        for name, t in zip(self.spec.inputs, result):
            if t.is_floating_point() and t.dtype != dtype:
                raise self._fail_fn(fn, f"{call} returned input {name} as {_name(t.dtype)}; expected "
                                           f"{_name(dtype)}, the dtype asked for",
                                    "make every floating-point input in the dtype argument (.to(dtype))")
            if t.device.type != "cpu":
                raise self._fail_fn(fn, f"{call} returned input {name} on {t.device}; expected the device asked "
                                           f"for (cpu)", "make the tensors on the device argument (.to(device))")
        if size is not None and not _sized_by(size, result):
            shapes = ", ".join(f"{n} {tuple(t.shape)}" for n, t in zip(self.spec.inputs, result))
            wanted = size if isinstance(size, int) else ", ".join(map(str, size))
            raise self._fail_fn(fn, f"{call} returned {shapes}, which ignore the size asked for: expected "
                                       f"{wanted} among the inputs' dimensions")

    def _fail_fn(self, fn: Callable[..., Any], message: str, hint: str | None = None) -> OpLoadError:
        """An error about what `fn` returned, at the line of its `def` when spec.py defines it."""
        code = getattr(fn, "__code__", None)
        inside = code is not None and Path(code.co_filename).resolve() == self.path.resolve()
        return OpLoadError(f"{self.path}{f':{code.co_firstlineno}' if inside else ''}: {message}", hint=hint)

    def call(self, call: str, fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as e:
            if is_device_fault(e):  # an earlier kernel's fault on the GPU, surfacing here: not the spec's
                raise
            raise OpLoadError(f"{self.path}{innermost_line_in(e, self.path)}: {call} raised {type(e).__name__}: {e}") from e

    def functions(self) -> None:
        s = self.spec
        dtypes = list(dict.fromkeys([torch.float64, *(d for stage in STAGES for d in s.stage_dtypes(stage))]))
        cpu = torch.device("cpu")
        for dtype in dtypes:
            for size in dict.fromkeys([*s.sim_sizes, s.gradcheck_size]):
                call = f"make_inputs({size}, {dtype}, cpu)"
                result = self.call(call, s.make_inputs, size, dtype, cpu, torch.Generator().manual_seed(0))
                self.made(s.make_inputs, call, result, dtype, size)
            for name, make in s.edge_cases.items():
                call = f"edge case {name!r}({dtype}, cpu)"
                self.made(make, call, self.call(call, make, dtype, cpu), dtype)


def check_spec(spec: OpSpec, path: Path) -> None:
    """Raise OpLoadError naming the first field or function of `spec` (read from `path`) that breaks the contract."""
    checker = _Checker(spec, path)
    checker.fields()
    checker.functions()


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_float_dtype(value: Any) -> bool:
    return isinstance(value, torch.dtype) and value.is_floating_point


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _sized_by(size: Any, tensors: Any) -> bool:
    """Each dimension of the size asked for is a dimension of some input (an int size may also be a numel)."""
    dims = {d for t in tensors for d in t.shape} | ({t.numel() for t in tensors} if isinstance(size, int) else set())
    return all(d in dims for d in ((size,) if isinstance(size, int) else size))
