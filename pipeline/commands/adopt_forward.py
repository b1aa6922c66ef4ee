"""The forward `brrr adopt` picked, read as brrr's contract sees it: which tensor parameters are the
op's inputs, which are outputs a `void` function writes into, which are optional, and the Python
adapter spec.py needs when the C++ function does not take and return tensors the contract's way.

brrr calls a forward as forward(*inputs, *params) -> outputs. A kernel library's wrapper often reads
otherwise (vLLM's `void rms_norm(torch::Tensor& out, torch::Tensor& input, torch::Tensor& weight,
double epsilon)`): its output is passed in, or it writes in place, or it takes a
`c10::optional<torch::Tensor>`. The adapter written for it allocates the output, passes None for an
optional tensor, and returns what the function wrote, with a TODO on each guess.
"""

from __future__ import annotations

import keyword
import re
import textwrap
from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class Function:
    """A C++ function of the sources: its name and its parameters (type, name)."""

    name: str
    params: tuple[tuple[str, str], ...]
    returns: str = ""  # the return type as written ("void": it writes its results into tensors it is given)

    def tensors(self) -> tuple[str, ...]:
        return tuple(n for t, n in self.params if _TENSOR.search(t))


class Role(Enum):
    """What one parameter of the forward is to brrr's contract."""

    INPUT = "input"  # a tensor the op reads: one of the spec's inputs
    OUTPUT = "output"  # a tensor a void function writes its result into: the adapter allocates it
    IN_PLACE = "in place"  # an input a void function with no output writes: the adapter clones and returns it
    OPTIONAL = "optional"  # c10::optional<Tensor>: not required, the adapter passes None
    SCALAR = "scalar"  # a plain number or flag: a spec param
    FIXED = "fixed"  # anything else (a list, a string, an optional number): the adapter supplies a value


_TENSOR = re.compile(r"\bTensor\b")
# c10::optional<at::Tensor>, std::optional<torch::Tensor>, torch::optional, at::optional, const ...&.
_OPTIONAL = re.compile(r"\boptional\s*<")
# A list of tensors (std::vector<at::Tensor>, at::TensorList): the contract passes tensors one by one.
_TENSOR_LIST = re.compile(r"\b(?:vector|ArrayRef|List)\s*<[^;]*\bTensor\b|\bTensorList\b")
# The names kernel libraries give the tensor a void function writes its result into (vLLM's `out`,
# apex's `output`, `dst`, `out_scale`, `q_out`). Whole names, case-insensitive. The short ones (`y`,
# `o`, `res`) also name inputs (`x, y`), so they count only when no strong name is among the parameters.
OUTPUT_NAMES = re.compile(r"(?i)^(?:out|output|outputs|result|results|dst|dest|out_\w+|\w+_out|\w+_output)$")
WEAK_OUTPUT_NAMES = re.compile(r"(?i)^(?:y|o|res)$")

# A scalar parameter's C++ type -> the value spec.py starts with (the author picks a real one).
SCALAR_PLACEHOLDERS: dict[str, object] = {
    **dict.fromkeys(("double", "float", "at::Scalar", "c10::Scalar", "Scalar"), 0.5),
    **dict.fromkeys(("int", "int64_t", "long", "int32_t", "size_t", "unsigned", "c10::SymInt"), 3),
    "bool": True,
}
# Another argument's C++ type (a pattern) -> the Python value the adapter passes (written as code).
FIXED_PLACEHOLDERS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_OPTIONAL, "None"),
    (re.compile(r"\b(?:vector|ArrayRef|IntArrayRef|List)\b"), "[]"),
    (re.compile(r"\b(?:string|string_view)\b"), '""'),
)
# The name of the adapter spec.py defines.
ADAPTER = "forward_from_module"
# The input spec.py, reference.py and the adapter name when the forward takes no tensor to read (a
# fill): the contract passes at least one, so all three take it under one name.
NO_INPUT = "x"
# Parameter names a Python adapter cannot take as they are: keywords, and the names it uses itself.
_TAKEN = frozenset({"m", "torch"})


def python_name(name: str) -> str:
    """A C++ parameter's name as a Python one (`in` is a keyword: `in_`)."""
    return f"{name}_" if keyword.iskeyword(name) or name in _TAKEN else name


@dataclass(frozen=True)
class Param:
    cxx_type: str
    name: str  # as a Python name
    role: Role


def _is_const(cxx_type: str) -> bool:
    return re.search(r"\bconst\b", cxx_type) is not None


def _is_reference(cxx_type: str) -> bool:
    return "&" in cxx_type


def _scalar(cxx_type: str) -> object | None:
    return SCALAR_PLACEHOLDERS.get(re.sub(r"\bconst\b|&", "", cxx_type).strip())


def _plain_role(cxx_type: str) -> Role:
    """A parameter's role before outputs are told from inputs."""
    if _TENSOR_LIST.search(cxx_type):
        return Role.FIXED
    if _TENSOR.search(cxx_type):
        return Role.OPTIONAL if _OPTIONAL.search(cxx_type) else Role.INPUT
    return Role.SCALAR if _scalar(cxx_type) is not None else Role.FIXED


def _narrowed(candidates: list[tuple[str, str]], better: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Those of the candidates a stronger sign picks (`better`, a subset), or all of them where none has it."""
    return better or candidates


def _written(fn: Function) -> tuple[set[str], Role]:
    """The tensors a void function writes (by C++ name), and whether they are outputs or written in place."""
    required = [(t, n) for t, n in fn.params if _plain_role(t) is Role.INPUT]
    writable = [(t, n) for t, n in required if not _is_const(t)]  # a const tensor is never an output
    named = [(t, n) for t, n in writable if OUTPUT_NAMES.match(n)] or [
        (t, n) for t, n in writable if WEAK_OUTPUT_NAMES.match(n)]
    # A non-const reference says "written" more plainly than a tensor taken by value.
    outputs = _narrowed(named, [(t, n) for t, n in named if _is_reference(t)])
    if outputs:
        return {n for _, n in outputs}, Role.OUTPUT
    # No output named: it writes some of its tensors in place; which ones only its body says.
    in_place = _narrowed(_narrowed(required, writable), [(t, n) for t, n in writable if _is_reference(t)])
    return {n for _, n in in_place}, Role.IN_PLACE


def classify(fn: Function) -> tuple[Param, ...]:
    """Each parameter of `fn` with its role; a void function's outputs are told from its inputs by name."""
    written, role = _written(fn) if fn.returns == "void" else (set(), Role.INPUT)
    return tuple(Param(t, python_name(n), role if n in written else _plain_role(t)) for t, n in fn.params)


@dataclass(frozen=True)
class Forward:
    """The forward a spec names: its module function (by the name the module binds) and its parameters."""

    call: str
    fn: Function
    params: tuple[Param, ...]

    @classmethod
    def of(cls, call: str, fn: Function) -> Forward:
        return cls(call, fn, classify(fn))

    def named(self, *roles: Role) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.role in roles)

    def inputs(self) -> tuple[str, ...]:
        return self.named(Role.INPUT, Role.IN_PLACE)

    def contract_inputs(self) -> tuple[str, ...]:
        """The inputs spec.py lists, which the adapter and reference.py take: NO_INPUT where there is none."""
        return self.inputs() or (NO_INPUT,)

    def scalars(self) -> dict[str, object]:
        """The spec's params: the plain numbers and flags, each with a placeholder value."""
        return {p.name: _scalar(p.cxx_type) for p in self.params if p.role is Role.SCALAR}

    def outputs(self) -> tuple[str, ...]:
        """The spec's outputs where the signature says them (a void function's), else ()."""
        taken = set(self.inputs())
        return (*self.named(Role.OUTPUT), *(_unique(f"{n}_out", taken) for n in self.named(Role.IN_PLACE)))

    def adapted(self) -> bool:
        """Whether the module function does not keep the contract as it is, so spec.py needs an adapter."""
        return self.fn.returns == "void" or any(p.role in (Role.OPTIONAL, Role.FIXED) for p in self.params)

    def notes(self) -> list[str]:
        """spec.py's comments on what brrr read from the signature."""
        supplied = self.named(Role.OPTIONAL, Role.FIXED)
        if self.fn.returns != "void":
            return [f"# {self.fn.name} also takes {', '.join(supplied)}, which the contract does not pass: {ADAPTER} "
                    "below supplies each."] if supplied else []
        if outputs := self.named(Role.OUTPUT):
            said = (f"{self.fn.name} returns nothing: it writes into {', '.join(outputs)} (named like an output, not "
                    f"const), which {ADAPTER} below allocates; its other tensors are the inputs.")
        else:
            said = (f"TODO: {self.fn.name} returns nothing and takes no tensor named like an output: it writes in "
                    f"place. {ADAPTER} below gives it copies of {', '.join(self.named(Role.IN_PLACE))} and returns "
                    "them: keep those it writes (in its return and in `outputs`).")
        return [f"# {line}" for line in textwrap.wrap(said, 110)]

    def adapter(self) -> list[str]:
        """The Python function spec.py passes as TorchModule's forward, as lines of code."""
        contract = [*self.contract_inputs(), *self.scalars()]
        lines = [f"def {ADAPTER}(m, {', '.join(contract)}):"]
        lines += [f"    {line}" for p in self.params if (line := self._made_here(p))]
        call = f"m.{self.call}({', '.join(p.name for p in self.params)})"
        returned = self.named(Role.OUTPUT, Role.IN_PLACE)
        if self.fn.returns != "void":
            return [*lines, f"    return {call}"]
        return [*lines, f"    {call}", f"    return {', '.join(returned) or 'None'}"]

    def _made_here(self, p: Param) -> str:
        """The line giving the adapter's argument `p` a value, for one the contract does not pass."""
        first = self.contract_inputs()[0]
        if p.role is Role.OUTPUT:
            return (f"{p.name} = torch.empty_like({first})  # TODO: the shape and dtype {self.fn.name} writes into "
                    f"{p.name} (here: {first}'s)")
        if p.role is Role.IN_PLACE:
            # A copy: the caller's tensor stays as made_inputs gave it, for the reference to read too.
            return f"{p.name} = {p.name}.clone()  # TODO: keep (here and in the return) only if {self.fn.name} writes {p.name}"
        if p.role is Role.OPTIONAL:
            return f"{p.name} = None  # TODO: optional ({p.cxx_type}): None here; make it an input to check it too"
        if p.role is Role.FIXED:
            value = next((v for pattern, v in FIXED_PLACEHOLDERS if pattern.search(p.cxx_type)), "None")
            return f"{p.name} = {value}  # TODO: the {p.cxx_type} to check {self.fn.name} with"
        return ""


def _unique(name: str, taken: set[str]) -> str:
    while name in taken:
        name += "_"
    return name
