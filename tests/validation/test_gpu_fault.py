"""A kernel's fault on the GPU is one FAIL row, and ends that op's GPU work, not brrr (gpu_fault.py).
No GPU here: the fault is raised as torch raises CUDA's sticky errors."""

from __future__ import annotations

import pytest
import torch

from brrr_kernels.op.loaders import load_op
from brrr_kernels.validation import gpu_fault, runner
from brrr_kernels.verdict.report import FAIL, Row

ILLEGAL = "CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported"


@pytest.fixture(autouse=True)
def fresh_process_record(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_fault, "_lost_by", [])


@pytest.mark.parametrize("error, fault", [(RuntimeError(ILLEGAL), True), (gpu_fault.GpuContextLost("x", "y"), True),
                                          (RuntimeError("shape mismatch"), False), (ValueError(ILLEGAL), False)])
def test_cuda_errors_are_told_from_others(error: BaseException, fault: bool) -> None:
    assert gpu_fault.is_cuda_fault(error) is fault


def test_a_fault_keeps_the_rows_so_far_and_adds_one_naming_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(self: runner.Validation) -> list[Row]:
        self.rows.append(Row(self.op.name, "cuda", "forward", "float32", FAIL, detail="earlier"))
        raise gpu_fault.GpuContextLost("CUDA error: an illegal memory access was encountered", "the cuda stage's backward")

    monkeypatch.setattr(runner.Validation, "run", run)
    rows = runner.validate_guarded(load_op("sigmoid"), runner.Options(stages=("cuda",), seed=1))
    assert [r.check for r in rows] == ["forward", "GPU fault"]
    assert rows[-1].failed
    assert rows[-1].detail.startswith("the cuda stage's backward faulted on the GPU: CUDA error: an illegal memory access")
    assert "--cuda-on-cpu" in rows[-1].detail and "brrr sanitize sigmoid" in rows[-1].detail


def test_an_op_after_the_fault_in_the_same_process_is_not_run_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(self: runner.Validation) -> list[Row]:
        raise RuntimeError(ILLEGAL)  # raised far from the launch, as an asynchronous error is

    monkeypatch.setattr(runner.Validation, "run", run)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    first = runner.validate_named("sigmoid", runner.Options(stages=("cuda",), seed=1))
    second = runner.validate_named("square", runner.Options(stages=("cuda",), seed=1))
    assert [r.check for r in first.rows] == ["GPU fault"]
    assert second.rows[0].failed and second.rows[0].detail.startswith("not run: sigmoid's kernel faulted on the GPU")


def test_other_errors_still_propagate(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(self: runner.Validation) -> list[Row]:
        raise KeyError("a bug in brrr")

    monkeypatch.setattr(runner.Validation, "run", run)
    with pytest.raises(KeyError):
        runner.validate_guarded(load_op("sigmoid"), runner.Options(stages=("cuda",), seed=1))


def test_a_call_on_the_cpu_is_not_waited_for() -> None:
    gpu_fault.synchronized([torch.ones(3)], "the cuda stage's forward")  # no GPU touched, nothing raised


def test_a_fault_surfacing_in_make_inputs_is_not_blamed_on_the_spec() -> None:
    """An earlier kernel's fault surfaces at the next CUDA call, a spec's make_inputs say: it stays the
    GPU's error (a row of the runner's), not 'spec.py: make_inputs raised'."""
    from brrr_kernels.validation.trial import spec_inputs

    def make(*_: object) -> tuple[torch.Tensor, ...]:
        raise RuntimeError(ILLEGAL)

    with pytest.raises(RuntimeError, match="CUDA error: an illegal memory access"):
        spec_inputs(load_op("sigmoid"), "make_inputs", make, 9, torch.float64)
