"""`brrr new`: a new op folder from templates, wired so `brrr validate` runs at once; and telling
a stage still as its template left it ("unfinished") from one that fails its checks."""

from __future__ import annotations

import argparse
import keyword
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Literal

from ..base.assets import TEMPLATES
from ..base.errors import EXIT_OK, RefusedError, UsageError
from ..base.files import new_folder
from ..op.names import STAGE_FILES

if TYPE_CHECKING:
    pass

FILES = tuple(STAGE_FILES.values())
# elementwise: any inputs, one output, a thread per element. rowwise: x [rows, cols] and weight
# [cols], a parameter eps, a saved per-row statistic rstd, a block per row (templates/rowwise/).
Kind = Literal["elementwise", "rowwise"]
KINDS: tuple[Kind, ...] = ("elementwise", "rowwise")
ROWWISE_INPUTS = ["x", "weight"]


def _identifier(text: str, what: str) -> str:
    if not text.isidentifier() or keyword.iskeyword(text):
        raise UsageError(f"{what} {text!r} is not a Python identifier")
    return text


def new_op(name: str, inputs: list[str], directory: Path, kind: Kind = "elementwise") -> Path:
    """Write DIR/NAME with the five files; refuse if DIR/NAME exists in any form."""
    _identifier(name, "op name")
    if kind not in KINDS:
        raise UsageError(f"--kind {kind}: choose one of {', '.join(KINDS)}")
    if kind == "rowwise" and inputs not in (["x"], ROWWISE_INPUTS):
        raise UsageError(f"--kind rowwise writes the inputs {', '.join(ROWWISE_INPUTS)}; rename them in the files "
                         f"afterwards instead of passing --inputs")
    if kind == "rowwise":
        inputs = ROWWISE_INPUTS
    for x in inputs:
        _identifier(x, "input name")
    if len(set(inputs)) != len(inputs) or not inputs:
        raise UsageError(f"--inputs must name distinct inputs, got {','.join(inputs) or 'none'}")
    if "grad_y" in inputs or "y" in inputs:
        raise UsageError("'y' and 'grad_y' name the output and its gradient; choose other input names")
    folder = directory / name
    if folder.exists() or folder.is_symlink():
        raise RefusedError(f"{folder} already exists; brrr new never overwrites anything")
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
    }
    with new_folder(folder) as staging:
        for file in FILES:
            template = TEMPLATES / ("rowwise" if kind == "rowwise" else "") / f"{file}.tmpl"
            text = Template(template.read_text()).substitute(values)
            (staging / file).write_text(text)
        # rename() onto an existing folder would merge or fail depending on its contents; check again.
        if folder.exists():
            raise RefusedError(f"{folder} appeared while writing; brrr new never overwrites anything")
    return folder


def main(args: argparse.Namespace) -> int:
    """brrr new: write the op folder and say what to run next."""

    folder = new_op(args.name, [x.strip() for x in args.inputs.split(",") if x.strip()], args.dir, kind=args.kind)
    print(f"wrote {folder}/: spec.py, reference.py, numba_kernel.py, kernel.cu, binding.cpp")
    shown = folder if folder.is_absolute() or str(folder).startswith(".") else f"./{folder}"
    print(f"next: brrr validate {shown}   (each unfinished stage says which function to write)")
    return EXIT_OK
