"""`brrr export OP DIR`: a standalone package (setup.py with CUDAExtension, the kernel, the op
registration, a test) that builds ahead of time with pip and imports without brrr."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from string import Template

import torch

from .builder import INCLUDE_DIR, cuda_sources
from .ops import _param_type, _returns
from .scaffold import RefusedError
from .spec import Op

TEMPLATES = Path(__file__).resolve().parent / "templates" / "export"


def export(op: Op, directory: Path) -> Path:
    spec, name = op.spec, op.spec.name
    if directory.exists():
        raise RefusedError(f"{directory} already exists; brrr export never overwrites anything")
    package = f"brrr_{name}"
    params = [f"{_param_type(v)} {k}" for k, v in spec.params.items()]
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
        "params": repr(dict(spec.params)),
        "shapes": repr(shapes),
        "forward_args": ", ".join([f"Tensor {x}" for x in spec.inputs] + params),
        "forward_returns": _returns(len(spec.outputs) + len(spec.stats)),
        "backward_args": ", ".join([f"Tensor grad_{y}" for y in spec.outputs] + [f"Tensor {s}" for s in spec.saved] + params),
        "backward_returns": _returns(len(spec.inputs)),
    }
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}-", dir=directory.parent))
    try:
        csrc = staging / package / "csrc"
        csrc.mkdir(parents=True)
        (staging / "tests").mkdir()
        for template, target in (("setup.py", "setup.py"), ("pyproject.toml", "pyproject.toml"),
                                 ("__init__.py", f"{package}/__init__.py"), ("test_op.py", f"tests/test_{name}.py")):
            text = Template((TEMPLATES / f"{template}.tmpl").read_text()).substitute(values)
            (staging / target).write_text(text)
        for source in cuda_sources(op):
            shutil.copy2(source, csrc / source.name)
        for header in ("brrr.cuh", "brrr_kernel.cuh"):
            shutil.copy2(INCLUDE_DIR / header, csrc / header)
        shutil.copy2(op.path("reference"), staging / package / "reference.py")
        os.rename(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return directory
