"""probe.py: a mutant's first failing case, the last mutant's killer first; mutate's hang limit."""

from __future__ import annotations

from conftest import STAGES, copy_op, needs_nvcc, plant

from brrr_kernels.mutate import probe as probes
from brrr_kernels.mutate.bug_files import mutant
from brrr_kernels.mutate.run import HANG_FACTOR, HANG_FLOOR, _failures, hang_limit
from brrr_kernels.op.loaders import load_numba, load_op
from brrr_kernels.validation.executor import Options, Validation


def test_a_mutant_fails_on_its_first_failing_case_and_that_case_goes_first_next_time(tmp_path) -> None:
    probes._LAST.clear()
    bad = load_op(str(mutant(STAGES / "sigmoid", "last_element_unwritten", tmp_path)))
    reason = probes.probe(bad, "numba", seed=1)
    assert reason.startswith("numba forward float32:") and "NaN where a number was expected" in reason
    killer = probes._LAST["killer"]
    # sizes 1 and up: the bound check one short leaves size 1's only element unwritten, the smallest case
    assert killer[0] == f"size {bad.spec.sim_sizes[0]}"
    v = Validation(bad, Options(stages=("numba",), seed=2))
    v.stages["numba"] = load_numba(bad)
    ordered = probes._ordered(v, "numba")
    assert (ordered[0][1].label, ordered[0][0]) == killer
    sizes = [probes._elements(c) for _, c in ordered[1:]]
    assert sizes == sorted(sizes)


def test_the_op_as_it_is_passes_every_probe_case() -> None:
    probes._LAST.clear()
    assert probes.probe(load_op("sigmoid"), "numba", seed=1) == ""
    assert "killer" not in probes._LAST


def test_the_hang_limit_grows_with_the_ops_own_time() -> None:
    assert hang_limit(1.0) == HANG_FLOOR
    assert hang_limit(100.0) == HANG_FACTOR * 100.0  # a loaded machine: 100 s clean, no hang before 800 s



@needs_nvcc
def test_a_cuda_mutant_only_nvcc_refuses_passes_the_probe_and_is_caught_by_the_validation_after_it(tmp_path) -> None:
    # The probe builds for the CPU without nvcc's check; a mutant g++ accepts, runs right on the CPU
    # and nvcc refuses (host code calling a __device__ function) is still caught, by the full validation.
    probes._LAST.clear()
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu", "void sigmoid_forward(const T* x, T* y, int64_t n, "
                   "cudaStream_t stream) {\n", "void sigmoid_forward(const T* x, T* y, int64_t n, cudaStream_t stream) "
                   "{\n    (void)stable_sigmoid(T(0));\n")
    op = load_op(str(folder))
    assert probes.probe(op, "cuda", seed=1) == ""
    caught = _failures(op, 1, "cuda")
    assert caught.startswith("cuda compile") and "__device__ function" in caught, caught
