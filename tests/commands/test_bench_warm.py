"""brrr bench's warm-up: its cases, its tasks, the inputs its workers make, and that a compile it does in
a worker process is a cache hit in another process."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import copy_op

from brrr_kernels.commands.bench import cases_of
from brrr_kernels.commands.bench_warm import (
    CASE_FOOTPRINT,
    GPU_SLACK,
    Case,
    WarmTask,
    case_bytes,
    compile_device,
    first_calls,
    plan,
    runner,
    shaped_inputs,
    stable_cache_keys,
    warm_one,
    warm_up,
    workers_for,
)
from brrr_kernels.op.loaders import builtin_op_names, load_op


def small_size(name: str):
    return load_op(name).spec.gpu_sizes[1]


@pytest.mark.parametrize("name", builtin_op_names())
def test_worker_inputs_have_the_shapes_dtypes_and_strides_make_inputs_gives(name: str) -> None:
    op = load_op(name)
    for dtype in op.spec.stage_dtypes("cuda"):
        case = Case(str(op.folder), small_size(name), str(dtype).removeprefix("torch."), "forward")
        made = op.spec.make_inputs(case.size, dtype, torch.device("cpu"), torch.Generator().manual_seed(0))
        shaped = shaped_inputs(op, case, torch.device("cpu"))
        assert [(x.shape, x.dtype, x.stride()) for x in shaped] == [(x.shape, x.dtype, x.stride()) for x in made]
        assert case_bytes(op, case) == sum(x.nbytes for x in made)
        # random values, not zeros: a compile does not care, but a kernel timed on zeros can run faster
        assert all(x.abs().sum() > 0 for x in shaped if x.is_floating_point() and x.numel() > 1)


def test_cases_follow_the_cuda_stages_dtypes_and_a_forward_only_op_has_no_backward(tmp_path: Path) -> None:
    matmul_tc = load_op("matmul_tc")  # its cuda stage takes bfloat16 only
    cases = cases_of(matmul_tc, [(8, 8, 8)], [torch.float32, torch.bfloat16])
    assert [(c.dtype, c.pass_) for c in cases] == [("bfloat16", "forward"), ("bfloat16", "forward+backward")]
    folder = copy_op("sigmoid", tmp_path)
    spec_file = folder / "spec.py"
    spec_file.write_text(spec_file.read_text().replace('name="sigmoid",', 'name="sigmoid", forward_only="a test",'))
    cases = cases_of(load_op(str(folder)), [16, 32], [torch.float32], ["backward", "forward"])
    assert [(c.size, c.pass_) for c in cases] == [(16, "forward"), (32, "forward")]


def test_cases_take_the_passes_asked_in_their_order() -> None:
    cases = cases_of(load_op("sigmoid"), [16], [torch.float32], ["backward", "forward"])
    assert [c.pass_ for c in cases] == ["backward", "forward"]


def test_plan_builds_brrrs_library_and_every_op_then_compiles_backward_cases_first_only_with_an_oracle(tmp_path: Path) -> None:
    folder = copy_op("mul", tmp_path)
    spec_file = folder / "spec.py"
    spec_file.write_text(spec_file.read_text().replace("oracle=torch.mul,", "oracle=None,"))
    sigmoid, no_oracle = load_op("sigmoid"), load_op(str(folder))
    passes = ("forward", "backward", "forward+backward")
    cases = [Case(str(op.folder), 16, "float32", p) for op in (sigmoid, no_oracle) for p in passes]
    tasks = plan([sigmoid, no_oracle], cases)
    assert tasks[0].kind == "native"  # brrr's own C++ library, which every registered cuda row calls
    assert [(t.kind, t.case.op) for t in tasks[1:3]] == [("build", str(sigmoid.folder)), ("build", str(no_oracle.folder))]
    # backward and forward+backward compile the same two graphs: one task for both
    assert [(t.kind, t.case.op, t.case.gradients) for t in tasks[3:]] == [
        ("compile", str(sigmoid.folder), True), ("compile", str(sigmoid.folder), False)]


def test_workers_are_bounded_by_the_tasks_and_by_the_cases_the_gpu_memory_holds() -> None:
    assert workers_for(1, 1 << 30, None) == 1
    per_worker = CASE_FOOTPRINT * (1 << 30) + GPU_SLACK
    assert workers_for(1000, 1 << 30, 2 * per_worker + 1) <= 2
    assert workers_for(1000, 1 << 40, 1 << 30) == 1  # never none


def test_a_task_that_fails_gives_its_reason_instead_of_raising(tmp_path: Path) -> None:
    missing = WarmTask("compile", Case(str(tmp_path / "no_such_op"), 16, "float32", "forward"))
    warmed = warm_one(missing, "sm_90", torch.get_num_threads())
    assert warmed.task == missing and "no_such_op" in warmed.error


def test_first_calls_make_the_untouched_call_then_one_with_gradients() -> None:
    op = load_op("sigmoid")
    seen: list[bool] = []

    def fn(x: torch.Tensor) -> torch.Tensor:
        seen.append(x.requires_grad)
        return torch.sigmoid(x)

    x = torch.randn(8, dtype=torch.float64)
    out = first_calls(op, fn, [(x,)], "forward+backward")
    assert seen == [False, True] and torch.equal(out[0], torch.sigmoid(x))


@pytest.mark.parametrize(("pass_", "forwards", "gradients"), [
    ("forward", 4, 0), ("forward+backward", 4, 4), ("backward", 2, 4),
])
def test_a_call_runs_the_forward_only_where_its_pass_times_one(pass_: str, forwards: int, gradients: int) -> None:
    """The backward pass keeps each set's graph: its calls after a set's first run the backward alone,
    from the same upstream gradient, and every one of them gives the input its gradient."""
    op = load_op("sigmoid")
    ran: list[int] = []
    grads: list[torch.Tensor] = []

    def fn(x: torch.Tensor) -> torch.Tensor:
        ran.append(1)
        y = torch.sigmoid(x)
        if y.requires_grad:
            y.register_hook(lambda g: grads.append(g.clone()))
        return y

    sets = [(torch.randn(8, dtype=torch.float64),), (torch.randn(8, dtype=torch.float64),)]
    upstreams: dict[int, tuple[torch.Tensor, ...]] = {}
    run = runner(op, fn, sets, pass_, upstreams)
    for i in (0, 1, 0, 1):
        run(i)
    assert (len(ran), len(grads)) == (forwards, gradients)
    if gradients:
        assert torch.equal(grads[0], upstreams[0][0]) and torch.equal(grads[2], upstreams[0][0])


def test_the_passes_the_command_line_offers_are_benchs() -> None:
    from typing import get_args

    from brrr_kernels.cli import BENCH_PASSES
    from brrr_kernels.commands.bench_warm import Pass

    assert BENCH_PASSES == get_args(Pass)


def test_a_compile_done_in_a_warm_up_worker_is_a_cache_hit_in_this_process(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The property the warm-up exists for. Without stable_cache_keys the key differed between a spawned
    worker and its parent (torch.memory_format pickled after different modules) and this missed."""
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    op = load_op("sigmoid")
    case = Case(str(op.folder), 1000, "float32", "forward+backward")
    [warmed] = warm_up([WarmTask("compile", case)], 1, "sm_90")
    assert warmed.error == ""
    stable_cache_keys()
    torch._dynamo.reset()
    counters.clear()
    first_calls(op, torch.compile(op.spec.oracle), [shaped_inputs(op, case, compile_device())], "forward+backward")
    assert counters["inductor"]["fxgraph_cache_hit"] >= 2 and counters["inductor"]["fxgraph_cache_miss"] == 0
    torch._dynamo.reset()
