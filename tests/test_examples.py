"""The seeds' own extensions in examples/, kept as written (only spec.py and reference.py are
brrr's), validated on the CPU: what brrr says about each seed's code is what its README says."""

from __future__ import annotations

from conftest import REPO, validate

from brrr_kernels.verdict.report import Row

EXAMPLES = REPO / "examples"


def rows_by_check(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    found: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        found.setdefault((r.stage, r.check), []).append(r)
    return found


def test_seed_mul_runs_as_written_and_its_module_declared_twice_is_named() -> None:
    rows = validate(EXAMPLES / "seed_mul", "reference", "cuda")
    by = rows_by_check(rows)
    compile_rows = by[("cuda", "compile")]
    said = repr(compile_rows)  # the finding is among the row's messages
    assert {r.verdict for r in compile_rows} == {"FAIL"}, said
    assert "elementwise_mult.cu:79: PYBIND11_MODULE(elementwise_mult, m) declares the module a second time " \
           "(first at line 65)" in said, said
    # brrr binds the functions itself, so the seed's kernel is still checked, and it is right
    for check in ("forward", "backward", "opcheck", "compile fullgraph"):
        assert {r.verdict for r in by[("cuda", check)]} == {"pass"}, by[("cuda", check)]
    # the wrapper refuses a strided view torch.mul accepts: said under the row, computed nothing wrong
    strided = by[("cuda", "non-contiguous fwd")]
    assert {r.verdict for r in strided} == {"pass"}, strided
    assert all(any("refused by the stage: a must be contiguous!" in n for n in r.notes) for r in strided), strided


def test_seed_bias_gelu_runs_as_written_and_what_it_gets_wrong_is_flagged() -> None:
    rows = validate(EXAMPLES / "seed_bias_gelu", "reference", "cuda")
    by = rows_by_check(rows)
    assert {r.verdict for r in by[("cuda", "backward")]} == {"pass"}, by[("cuda", "backward")]
    # the wrappers hand data_ptr() of a strided view to kernels that index it as contiguous
    for check in ("non-contiguous fwd", "non-contiguous bwd"):
        failed = by[("cuda", check)]
        assert {r.verdict for r in failed} == {"FAIL"}, failed
        assert "[non-contiguous, size (3, 7)]" in repr(failed), failed
        assert "x and bias read as if contiguous" in repr(failed), failed  # the cause, named
    # 0.5 x (1 + tanh(u)) cancels for x + bias below about -3: GELU's small negative values lose their digits
    forward = by[("cuda", "forward")]
    assert {r.verdict for r in forward} == {"FAIL"} and "out of tolerance" in repr(forward), forward
    for check in ("opcheck", "compile fullgraph"):
        assert {r.verdict for r in by[("cuda", check)]} == {"pass"}, by[("cuda", check)]
