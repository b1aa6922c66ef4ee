"""`brrr new`: a new op folder from templates, wired so `brrr validate` runs at once; and telling
a stage still as its template left it ("unfinished") from one that fails its checks.

Each kind is a folder of templates (templates/KIND/, the elementwise one at the top). A template is
`string.Template` text with the op's names, and lines that end in a tag, `# [weight]` or
`// [no stat]`, kept only where the op has (or has not) that feature (rowwise: a weight, a saved
statistic); the tag is dropped."""

from __future__ import annotations

import argparse
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Literal

from ..base.assets import TEMPLATES
from ..base.errors import EXIT_OK, RefusedError, UsageError
from ..base.files import new_folder
from ..op.names import STAGE_FILES

FILES = tuple(STAGE_FILES.values())
Kind = Literal["elementwise", "rowwise", "rowloss", "rowscan", "tiled"]


@dataclass(frozen=True)
class Shape:
    """What a kind writes: its template folder, the inputs it takes (how many, and their names when
    the files cannot rename them), and what --inputs defaults to."""

    folder: str
    default: tuple[str, ...]
    counts: tuple[int, ...] = ()  # () means any number
    fixed: bool = False  # the names are the template's own (x, weight): --inputs chooses among them only
    why: str = ""  # what the inputs are, for the message refusing others


KINDS: dict[Kind, Shape] = {
    # any inputs of one shape, one output y, a thread per element
    "elementwise": Shape("", ("x",)),
    # x [rows, cols] (and weight [cols]), a parameter eps, a saved per-row statistic rstd, a block per row
    "rowwise": Shape("rowwise", ("x", "weight"), (1, 2), fixed=True,
                     why="x [rows, cols], and weight [cols] if the op scales by one: --inputs x or --inputs x,weight"),
    # logits [rows, classes] and integer targets [rows] (no gradient), a per-row loss, a block per row
    "rowloss": Shape("rowloss", ("x", "target"), (2,),
                     why="the scores [rows, classes], then the integer targets [rows], e.g. --inputs logits,target"),
    # x [rows, cols] -> y [rows, cols], an inclusive running sum along each row, a block per row
    "rowscan": Shape("rowscan", ("x",), (1,), why="one input x [rows, cols], e.g. --inputs x"),
    # a [m, k] @ b [k, n] -> y [m, n] through shared-memory tiles
    "tiled": Shape("tiled", ("a", "b"), (2,), why="two matrices a [m, k] and b [k, n], e.g. --inputs a,b"),
}


def _identifier(text: str, what: str) -> str:
    if not text.isidentifier() or keyword.iskeyword(text):
        raise UsageError(f"{what} {text!r} is not a Python identifier")
    return text


def _inputs(kind: Kind, given: list[str] | None) -> list[str]:
    shape = KINDS[kind]
    inputs = list(shape.default) if given is None else given
    for x in inputs:
        _identifier(x, "input name")
    if len(set(inputs)) != len(inputs) or not inputs:
        raise UsageError(f"--inputs must name distinct inputs, got {','.join(inputs) or 'none'}")
    if "grad_y" in inputs or "y" in inputs:
        raise UsageError("'y' and 'grad_y' name the output and its gradient; choose other input names")
    wrong_count = shape.counts and len(inputs) not in shape.counts
    wrong_names = shape.fixed and inputs != list(shape.default[: len(inputs)])
    if wrong_count or wrong_names:
        raise UsageError(f"--kind {kind} takes {shape.why} (got --inputs {','.join(inputs)})")
    return inputs


def _tagged(text: str, features: set[str]) -> str:
    """Keep a line tagged `[f]` only with feature f, one tagged `[no f]` only without; drop the tags."""
    out = []
    for line in text.splitlines():
        m = re.search(r"\s+(?:#|//) \[(no )?([a-z ]+)\]$", line)
        if m:
            if (m.group(2) in features) == bool(m.group(1)):
                continue
            line = line[: m.start()]
        out.append(line.rstrip())  # a value substituted empty may leave a space at the end
    return re.sub(r"\n{4,}", "\n\n\n", "\n".join(out) + "\n")


def _stat_values(stat: bool) -> dict[str, str]:
    """The rowwise names that change with a saved statistic: forward returns rstd and backward takes it,
    or backward recomputes it from x into a scratch row that its grad_weight kernel reads."""
    if stat:
        return {"stat_doc": " and the per-row statistic\nrstd [rows], which the spec saves for backward. Compute the "
                            "statistic in float64 whatever x's dtype\n(x.double()), and return it as float64: the "
                            "kernels accumulate in double too.",
                "fwd_type": "tuple[torch.Tensor, torch.Tensor]", "fwd_returns": "y and the row statistic rstd",
                "cu_fwd_type": "std::tuple<at::Tensor, at::Tensor>", "stat_arg": "rstd, ",
                "stat_typed": "rstd: torch.Tensor,", "cu_stat_tensor": "at::Tensor rstd, ",
                "cu_stat_param": "double* __restrict__ rstd, ", "cu_stat_ptr": "double* rstd, ",
                "cu_stat_type": "double*, ", "cu_stat_data": "rstd.data_ptr<double>(), ", "cu_rstd": "const double*"}
    return {"stat_doc": ". backward recomputes the per-row statistic from x\n(forward saves none).",
            "fwd_type": "torch.Tensor", "fwd_returns": "y", "cu_fwd_type": "at::Tensor", "stat_arg": "",
            "stat_typed": "", "cu_stat_tensor": "", "cu_stat_param": "", "cu_stat_ptr": "", "cu_stat_type": "",
            "cu_stat_data": "", "cu_rstd": "double*"}


def _values(name: str, kind: Kind, inputs: list[str], stat: bool) -> dict[str, str]:
    grads = [f"grad_{x}" for x in inputs]
    values = {
        "name": name,
        "doc": f"elementwise op on {', '.join(inputs)} (describe the pattern it teaches)",
        "count": str(len(inputs)),
        "input_names": "".join(f'"{x}", ' for x in inputs).rstrip(" "),
        "args": ", ".join(f"{x}: torch.Tensor" for x in inputs),
        "args_plain": ", ".join(inputs),
        "grad_names": ", ".join(grads),
        "grad_type": "torch.Tensor" if len(inputs) == 1 else f"tuple[{', '.join(['torch.Tensor'] * len(inputs))}]",
        "cu_args": ", ".join(f"at::Tensor {x}" for x in inputs),
        "cu_grad_type": "at::Tensor" if len(inputs) == 1 else f"std::tuple<{', '.join(['at::Tensor'] * len(inputs))}>",
        "first": inputs[0],
        "kernel_params": "".join(f"const T* __restrict__ {x}, " for x in inputs),
        "launcher_params": "".join(f"const T* {x}, " for x in inputs),
        "launch_args": "".join(f"{x}, " for x in inputs),
        "float_params": "const float*, " * len(inputs),
        "double_params": "const double*, " * len(inputs),
        "checks": f'    brrr::check_input({inputs[0]}, "{inputs[0]}");\n'
                  + "".join(f'    brrr::check_same({inputs[0]}, {x}, "{inputs[0]}", "{x}");\n' for x in inputs[1:]),
        "contiguous": "".join(f"    auto {x}c = {x}.contiguous();\n" for x in inputs),
        "data_args": "".join(f"brrr::data<scalar_t>({x}c), " for x in inputs),
        "grads": ", ".join(grads),
        # the elementwise backward: one kernel writing every input's gradient, a marked line each
        "contiguous_py": "".join(f"    {x} = {x}.contiguous()\n" for x in inputs),
        "views": ", ".join(f"{x}.view(-1)" for x in inputs),
        "grad_views": ", ".join(f"{g}.view(-1)" for g in grads),
        "grad_allocs_py": "".join(f"    {g} = torch.empty_like({x})\n" for x, g in zip(inputs, grads)),
        "numba_grad_lines": "".join(f"    {g}[i] = 0.0 * g  # brrr: fill in: the gradient element {g}[i]\n"
                                    for g in grads),
        "cu_grad_lines": "".join(f"    {g}[i] = static_cast<T>(0.0 * g);  // brrr: fill in: the gradient element "
                                 f"{g}[i]\n" for g in grads),
        "grad_kernel_params": "".join(f"T* __restrict__ {g}, " for g in grads),
        "grad_launcher_params": "".join(f"T* {g}, " for g in grads),
        "grad_launch_args": "".join(f"{g}, " for g in grads),
        "grad_float_params": "float*, " * len(grads),
        "grad_double_params": "double*, " * len(grads),
        "grad_allocs_cu": "".join(f"    auto {g} = at::empty_like({x}c);\n" for x, g in zip(inputs, grads)),
        "grad_data_args": "".join(f"brrr::data<scalar_t>({g}), " for g in grads),
        "cu_grads": grads[0] if len(grads) == 1 else "{" + ", ".join(grads) + "}",
    }
    if kind == "rowwise":
        weight = len(inputs) == 2
        values |= _stat_values(stat)
        values |= {
            "w_doc": " with weight [cols]" if weight else "",
            "w_arg": "weight, " if weight else "",
            "w_typed": "weight: torch.Tensor, " if weight else "",
            "cu_w_param": "const T* __restrict__ weight, " if weight else "",
            "cu_w_ptr": "const T* weight, " if weight else "",
            "cu_gw_ptr": "T* grad_weight," if weight else "",
            "cu_w_float": "const float*, " if weight else "",
            "cu_w_double": "const double*, " if weight else "",
            "cu_gw_float": "float*, " if weight else "",
            "cu_gw_double": "double*, " if weight else "",
            "cu_w_cref": "const at::Tensor& weight, " if weight else "",
            "cu_w_tensor": "at::Tensor weight, " if weight else "",
            "cu_wc_data": "brrr::data<scalar_t>(wc), " if weight else "",
            "cu_gw_data": "brrr::data<scalar_t>(grad_weight), " if weight else "",
        }
    if kind in ("rowloss", "tiled"):
        values |= {"a": inputs[0], "b": inputs[1]}
    if kind == "rowloss":
        values |= {"grads": f"grad_{inputs[0]}, None", "cu_grads": f"grad_{inputs[0]}"}
    if kind == "rowscan":
        values |= {"a": inputs[0]}
    return values


def new_op(name: str, inputs: list[str] | None, directory: Path, kind: Kind = "elementwise",
           stat: bool | None = None) -> Path:
    """Write DIR/NAME with the five files; refuse if DIR/NAME exists in any form. `inputs` None: the kind's
    own. `stat` (rowwise only; None: yes) whether forward saves its per-row statistic for backward."""
    _identifier(name, "op name")
    if kind not in KINDS:
        raise UsageError(f"--kind {kind}: choose one of {', '.join(KINDS)}")
    if stat is not None and kind != "rowwise":
        raise UsageError(f"--no-stat: only --kind rowwise saves a per-row statistic for backward; --kind {kind} "
                         "has none to leave out")
    stat = stat is not False
    inputs = _inputs(kind, inputs)
    folder = directory / name
    if folder.exists() or folder.is_symlink():
        raise RefusedError(f"{folder} already exists; brrr new never overwrites anything")
    values = _values(name, kind, inputs, stat)
    features = {"weight"} if kind == "rowwise" and len(inputs) == 2 else set()
    features |= {"stat"} if kind == "rowwise" and stat else set()
    with new_folder(folder) as staging:
        for file in FILES:
            template = TEMPLATES / KINDS[kind].folder / f"{file}.tmpl"
            (staging / file).write_text(_tagged(Template(template.read_text()).substitute(values), features))
        # rename() onto an existing folder would merge or fail depending on its contents; check again.
        if folder.exists():
            raise RefusedError(f"{folder} appeared while writing; brrr new never overwrites anything")
    return folder


def main(args: argparse.Namespace) -> int:
    """brrr new: write the op folder and say what to run next."""
    inputs = None if args.inputs is None else [x.strip() for x in args.inputs.split(",") if x.strip()]
    folder = new_op(args.name, inputs, args.dir, kind=args.kind, stat=False if args.no_stat else None)
    print(f"wrote {folder}/: spec.py, reference.py, numba_kernel.py, kernel.cu, binding.cpp")
    shown = folder if folder.is_absolute() or str(folder).startswith(".") else f"./{folder}"
    print(f"next: brrr validate {shown}   (each unfinished stage says which function to write)")
    return EXIT_OK
