"""OpSpec as op folders declare it: every built-in op loads, and a malformed folder says what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import copy_op

from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.op.loaders import builtin_op_names, load_op
from brrr_kernels.op.spec import STAGE_FILES, one_per_thread

OPS = builtin_op_names()


def test_builtin_ops_found() -> None:
    assert "sigmoid" in OPS


@pytest.mark.parametrize("name", OPS)
def test_builtin_op_loads_with_every_file(name: str) -> None:
    op = load_op(name)
    assert op.name == name
    for stage in STAGE_FILES:
        assert op.path(stage).is_file()


@pytest.mark.parametrize("name", OPS)
def test_simulator_sizes_straddle_the_block(name: str) -> None:
    """Sizes 1, block-1, block+1 and several blocks with a partial last one (1-D ops)."""
    spec = load_op(name).spec
    layout = spec.layouts.get("numba")
    if layout is None or "one thread per element" not in layout.description:
        pytest.skip("not a one-thread-per-element op")
    block = int(layout.description.split(",")[1].split()[0])
    sizes = set(spec.sim_sizes)
    assert {1, block - 1, block + 1} <= sizes
    assert any(s > 2 * block and s % block for s in sizes)


@pytest.mark.parametrize("name", OPS)
def test_inputs_are_random_and_fresh(name: str) -> None:
    spec = load_op(name).spec
    gen = torch.Generator().manual_seed(1)
    a = spec.make_inputs(spec.sim_sizes[-1], torch.float64, torch.device("cpu"), gen)
    b = spec.make_inputs(spec.sim_sizes[-1], torch.float64, torch.device("cpu"), gen)
    for x, y in zip(a, b):
        assert x.abs().sum() > 0, "never validate on zeros"
        assert not torch.equal(x, y)


def test_op_folder_anywhere_on_disk(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    assert load_op(str(folder)).folder == folder.resolve()


def test_unknown_op_names_the_builtins() -> None:
    with pytest.raises(OpLoadError, match="no op named 'nope'.*sigmoid"):
        load_op("nope")


def test_missing_stage_file(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    (folder / "reference.py").unlink()
    with pytest.raises(OpLoadError, match="missing reference.py"):
        load_op(str(folder))


def test_an_op_with_no_numba_stage_loads(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    (folder / "numba_kernel.py").unlink()
    assert not load_op(str(folder)).has("numba")  # validation says so in a row


def test_syntax_error_in_spec_names_file_and_line(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    (folder / "spec.py").write_text("import torch\n\nSPEC = (\n")
    with pytest.raises(OpLoadError, match=r"spec.py:3: syntax error"):
        load_op(str(folder))


def test_spec_must_define_SPEC(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    (folder / "spec.py").write_text("X = 1\n")
    with pytest.raises(OpLoadError, match="must define SPEC"):
        load_op(str(folder))


def test_saved_names_must_exist(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    spec = folder / "spec.py"
    spec.write_text(spec.read_text().replace('saved=("y",)', 'saved=("z",)'))
    with pytest.raises(OpLoadError, match="saved names"):
        load_op(str(folder))


def test_a_folder_without_binding_cpp_is_told_about_the_two_file_cuda_stage(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    (folder / "binding.cpp").unlink()
    with pytest.raises(OpLoadError, match="missing binding.cpp") as e:
        load_op(str(folder))
    assert "kernel.cu (the kernels" in e.value.hint and "TorchModule" in e.value.hint


@pytest.mark.parametrize("output", ["y", "grad_x"])
def test_a_layout_places_every_output_alike_unless_it_says_otherwise(output: str) -> None:
    layout = one_per_thread(128, pack_bytes=16)
    assert layout.place_in(output, 1000, (10, 100), 4) == layout.place(1000, (10, 100), 4) == ((1, 0, 0), (122, 0, 0))
