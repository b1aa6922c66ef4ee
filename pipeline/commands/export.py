"""`brrr export OP DIR`: a standalone package (setup.py with CUDAExtension, the kernel, the op
registration, a test) that builds ahead of time with pip and imports without brrr."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from string import Template

import torch

from ..base.assets import TEMPLATES as ASSET_TEMPLATES
from ..base.errors import EXIT_OK, RefusedError
from ..base.files import new_folder
from ..cuda.builder import INCLUDE_DIR, cuda_sources, op_flags
from ..op.contract import grad_positions, saved_positions, schemas, usage
from ..op.spec import Op

TEMPLATES = ASSET_TEMPLATES / "export"


def export(op: Op, directory: Path) -> Path:
    spec, name = op.spec, op.spec.name
    if directory.exists():
        raise RefusedError(f"{directory} already exists; brrr export never overwrites anything")
    package = f"brrr_{name}"
    if spec.torch_module is not None:
        raise RefusedError(f"{op.path('cuda')} is a torch extension of its own (spec.py: torch_module=...): "
                           "its setup.py or load() already builds it; brrr export packages kernel.cu and binding.cpp ops")
    forward_schema, backward_schema = schemas(spec, name)
    shapes = [tuple(x.shape) for x in spec.make_inputs(spec.gradcheck_size, torch.float64, torch.device("cpu"),
                                                       torch.Generator().manual_seed(0))]
    values = {
        "name": name,
        "package": package,
        "namespace": f"brrr_{name}_export",
        "inputs": repr(spec.inputs),
        "outputs": repr(spec.outputs),
        "stats": repr(spec.stats),
        "saved": repr(spec.saved),
        "saved_at": repr(saved_positions(spec)),
        "params": repr(dict(spec.params)),
        "shapes": repr(shapes),
        "forward_schema": forward_schema,
        "backward_schema": backward_schema or "",
        "grad_at": repr(grad_positions(spec)),
        "forward_only": repr(bool(spec.forward_only)),
        "usage": usage(spec, f"{package}.{name}"),
        "defines": "".join(f", {flag!r}" for flag in op_flags(op)[1:]),
    }
    with new_folder(directory) as staging:
        csrc = staging / package / "csrc"
        csrc.mkdir(parents=True)
        (staging / "tests").mkdir()
        for template, target in (("setup.py", "setup.py"), ("pyproject.toml", "pyproject.toml"),
                                 ("__init__.py", f"{package}/__init__.py"), ("test_op.py", f"tests/test_{name}.py")):
            text = Template((TEMPLATES / f"{template}.tmpl").read_text()).substitute(values)
            (staging / target).write_text(text)
        for source in cuda_sources(op):
            shutil.copy2(source, csrc / source.name)
        for header in ("brrr.cuh", "brrr_kernel.cuh", "brrr_library.cpp"):
            shutil.copy2(INCLUDE_DIR / header, csrc / header)
        shutil.copy2(op.path("reference"), staging / package / "reference.py")
    return directory


def main(args: argparse.Namespace) -> int:
    """brrr export: write the package and say how to install and call it."""
    from ..op.contract import usage
    from ..op.loaders import load_op

    op = load_op(args.op)
    folder = export(op, args.dir)
    print(f"wrote {folder}: pip install {folder}  (offline: pip install --no-build-isolation {folder}), "
          f"then: import brrr_{op.name}; {usage(op.spec, f'brrr_{op.name}.{op.name}')}")
    return EXIT_OK
