"""The torch.library rows: opcheck and torch.compile(fullgraph=True) for every op, a user's too."""

from __future__ import annotations

from pathlib import Path

import torch
from conftest import copy_op, failed, plant, validate

from brrr_kernels.op.loaders import load_op
from brrr_kernels.validation.library_checks import namespace

LIBRARY_CHECKS = ("opcheck", "compile fullgraph")


def _library_rows(rows):
    return {r.check: r for r in rows if r.check in LIBRARY_CHECKS}


def test_a_users_op_gets_both_rows_and_passes(tmp_path: Path) -> None:
    folder = copy_op("layernorm", tmp_path).rename(tmp_path / "my_norm")  # params, stats: the hard case
    rows = _library_rows(validate(folder, "reference"))
    assert set(rows) == set(LIBRARY_CHECKS)
    assert all(r.verdict == "pass" and r.stage == "reference" and r.dtype == "float64" for r in rows.values())


def test_a_data_dependent_reference_fails_both_with_the_reason(mutant) -> None:
    # .item() works eagerly (gradcheck and the oracle checks pass) but not on fake tensors or in one graph.
    folder = mutant("sigmoid", "data_dependent_reference")
    rows = validate(folder, "reference")
    bad = failed(rows)
    assert set(bad) == {("reference", "opcheck", "float64"), ("reference", "compile fullgraph", "float64")}
    assert "opcheck" in bad[("reference", "opcheck", "float64")].detail
    assert "compile fullgraph on cpu" in bad[("reference", "compile fullgraph", "float64")].detail


def test_each_folder_and_edit_registers_under_its_own_namespace(tmp_path: Path) -> None:
    builtin = namespace(load_op("sigmoid"))
    assert namespace(load_op("sigmoid"), "cuda@cpu") != builtin  # the cuda stage on the CPU: its own
    copy = copy_op("sigmoid", tmp_path)  # the same name, another folder
    before = namespace(load_op(str(copy)))
    (copy / "reference.py").write_text((copy / "reference.py").read_text() + "\n# edited\n")
    after = namespace(load_op(str(copy)))
    assert len({builtin, before, after}) == 3 and all(n.isidentifier() for n in (builtin, before, after))


def test_the_rows_run_where_the_cuda_stage_runs_else_on_the_reference() -> None:
    rows = validate("sigmoid", "numba")
    assert not _library_rows(rows)  # neither the reference nor a running cuda stage: no rows
    rows = _library_rows(validate("sigmoid", "reference", "cuda"))
    assert {r.stage for r in rows.values()} == {"cuda"}  # on the GPU, or executed on the CPU
    assert all(r.verdict == "pass" for r in rows.values()), [r.detail for r in rows.values()]
    if not torch.cuda.is_available():
        assert {r.place for r in rows.values()} == {"cpu"}


def test_a_reference_backward_by_autograd_fails_the_traced_rows_saying_why(tmp_path: Path) -> None:
    # Eagerly fine (gradcheck passes); the fake backward torch.compile traces records nothing.
    folder = copy_op("mul", tmp_path)
    plant(folder, "reference.py", "    return grad_y * b, grad_y * a",
          "    with torch.enable_grad():\n"
          "        xs = [a.detach().requires_grad_(), b.detach().requires_grad_()]\n"
          "        return torch.autograd.grad(forward(*xs), xs, grad_y)")
    bad = failed(validate(folder, "reference"))
    assert ("reference", "gradcheck", "float64") not in bad
    assert ("reference", "compile fullgraph", "float64") in bad
    assert "write its gradients out in PyTorch" in bad[("reference", "compile fullgraph", "float64")].detail
