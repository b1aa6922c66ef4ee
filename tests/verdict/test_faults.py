"""Exceptions raised inside a stage, reduced to its file, line, thread and locals."""

from __future__ import annotations

from brrr_kernels.verdict.faults import fault_from


def test_fault_names_the_stage_file_and_line(tmp_path) -> None:
    src = tmp_path / "stage.py"
    src.write_text("def f(n):\n    k = n + 1\n    raise IndexError('index 9 is out of bounds')\n")
    namespace: dict = {}
    exec(compile(src.read_text(), str(src), "exec"), namespace)
    try:
        namespace["f"](3)
    except IndexError as e:
        err = IndexError(f"tid=[5, 0, 0] ctaid=[1, 0, 0]: {e}")
        err.__traceback__ = e.__traceback__
        fault = fault_from(err, src)
    assert fault.line == 3 and fault.function == "f"
    assert fault.block == (1, 0, 0) and fault.thread == (5, 0, 0)
    assert fault.locals == {"n": 3, "k": 4}
    assert "out of bounds" in fault.describe()
