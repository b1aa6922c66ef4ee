"""A spec that breaks the contract is named at load, with its field, line and what was expected: exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import copy_op, plant

from brrr_kernels import cli
from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.op.loaders import load_op

SIGMOID_MAKE = "return (8 * torch.randn(size, dtype=dtype, generator=gen).to(device),)"
SIGMOID_BARE = "return 8 * torch.randn(size, dtype=dtype, generator=gen).to(device)"

# (id, op, file edit: old -> new, the field or function the message names, what it says)
BAD_SPECS = [
    ("sim_sizes an int", "sigmoid", ("sim_sizes=(1, BLOCK - 1, BLOCK + 1, 3 * BLOCK + 17)", "sim_sizes=130"),
     "sim_sizes=", "SPEC.sim_sizes must be a non-empty tuple of sizes (each an int, or a tuple of ints), got 130 (int)"),
    ("gradcheck_size a string", "sigmoid", ("gradcheck_size=9", 'gradcheck_size="9"'),
     "gradcheck_size=", "SPEC.gradcheck_size must be a size (an int >= 0, or a tuple of them), got '9' (str)"),
    ("inputs a string", "mul", ('inputs=("a", "b")', 'inputs="ab"'),
     "inputs=", "SPEC.inputs must be a tuple of names, got the string 'ab'"),
    ("input not an identifier", "sigmoid", ('inputs=("x",)', 'inputs=("x-1",)'),
     "inputs=", "SPEC.inputs must be a Python identifier (each of inputs), got 'x-1'"),
    ("name escaping the cache", "sigmoid", ('name="sigmoid"', 'name="../../escaped"'),
     "name=", "SPEC.name must be a Python identifier (it names the op's files in the build cache"),
    ("dtypes as strings", "matmul", ('"numba": (torch.float32, torch.float64),', '"numba": ("float32",),'),
     "dtypes=", "SPEC.dtypes must be a dict of stage (reference, numba, cuda) to a tuple of floating-point torch dtypes"),
    ("oracle not a function", "sigmoid", ("oracle=torch.sigmoid,", 'oracle="sigmoid",'),
     "oracle=", "SPEC.oracle must be a function or None, got 'sigmoid'"),
    ("make_inputs returns a bare tensor", "sigmoid", (SIGMOID_MAKE, SIGMOID_BARE),
     "def make_inputs", "make_inputs(1, torch.float64, cpu) returned a bare tensor; expected a tuple of 1 tensor(s), "
                        "one per input (x)"),
    ("make_inputs ignores the dtype", "sigmoid", (SIGMOID_MAKE, SIGMOID_MAKE.replace("dtype=dtype", "dtype=torch.float64")),
     "def make_inputs", "make_inputs(1, torch.float32, cpu) returned input x as float64; expected float32, "
                        "the dtype asked for"),
    ("make_inputs ignores the size", "sigmoid", (SIGMOID_MAKE, SIGMOID_MAKE.replace("randn(size,", "randn(7,")),
     "def make_inputs", "make_inputs(1, torch.float64, cpu) returned x (7,), which ignore the size asked for"),
    ("make_inputs ignores the device", "sigmoid", (SIGMOID_MAKE, SIGMOID_MAKE.replace(".to(device)", '.to("meta")')),
     "def make_inputs", "make_inputs(1, torch.float64, cpu) returned input x on meta; expected the device asked for"),
    ("make_inputs one tensor for two inputs", "mul", ("return a.to(device), b.to(device)", "return (a.to(device),)"),
     "def make_inputs", "make_inputs(1, torch.float64, cpu) returned 1 tensor(s) for the 2 declared input(s) (a, b)"),
    *((f"widen ulps={bad}", "sigmoid", ("scale=one_minus_y_terms)", f"scale=one_minus_y_terms, ulps={bad})"),
       "tolerances=", f"SPEC.tolerances the widening of 'grad_x' has ulps={shown}: expected a finite number of ulps "
                      "above 0") for bad, shown in (("float('nan')", "nan"), ("-4", "-4"), ("float('inf')", "inf"),
                                                    ("0", "0"))),
    ("defines a list", "sigmoid", ("oracle=torch.sigmoid,", 'oracle=torch.sigmoid, defines=["-DN=4"],'),
     "defines=", "SPEC.defines must be a dict of macro names to values"),
    ("define not an identifier", "sigmoid", ("oracle=torch.sigmoid,", 'oracle=torch.sigmoid, defines={"N-1": "4"},'),
     "defines=", "SPEC.defines must be a dict of macro names to values"),
    ("edge case a bare tensor", "sigmoid", ("return (torch.tensor(values, dtype=dtype, device=device),)",
                                            "return torch.tensor(values, dtype=dtype, device=device)"),
     "def extremes", "edge case 'extremes'(torch.float64, cpu) returned a bare tensor"),
]


def _line(folder: Path, marker: str) -> int:
    text = (folder / "spec.py").read_text()
    return 1 + text.split(marker)[0].count("\n")


@pytest.mark.parametrize("op, edit, marker, message", [c[1:] for c in BAD_SPECS], ids=[c[0] for c in BAD_SPECS])
def test_a_bad_spec_is_named_at_load(tmp_path: Path, capsys: pytest.CaptureFixture[str], op: str,
                                     edit: tuple[str, str], marker: str, message: str) -> None:
    folder = plant(copy_op(op, tmp_path), "spec.py", *edit)
    with pytest.raises(OpLoadError) as caught:
        load_op(str(folder))
    assert f"spec.py:{_line(folder, marker)}: " in str(caught.value)
    assert message in str(caught.value)
    # The same from the command line: one message, exit 2, nothing run.
    assert cli.main(["validate", str(folder), "--stage", "reference"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "internal error" not in err


def test_make_inputs_raising_names_its_line(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "spec.py", "generator=gen).to(device),)",
                   "generator=gen).to(device) + oops,)")
    with pytest.raises(OpLoadError, match=r"spec.py:\d+: make_inputs\(1, torch.float64, cpu\) raised NameError"):
        load_op(str(folder))


@pytest.mark.parametrize("op", ["sigmoid", "mul", "square", "bias_gelu", "softmax", "layernorm", "matmul"])
def test_every_builtin_spec_passes(op: str) -> None:
    load_op(op)


def test_opspec_own_checks_name_the_line(tmp_path: Path) -> None:
    """OpSpec refuses a `saved` name that is no tensor while spec.py runs: shown at spec.py's line."""
    folder = plant(copy_op("sigmoid", tmp_path), "spec.py", 'saved=("y",)', 'saved=("z",)')
    with pytest.raises(OpLoadError, match=r"spec.py:\d+: op 'sigmoid': saved names \['z'\] are not inputs"):
        load_op(str(folder))
