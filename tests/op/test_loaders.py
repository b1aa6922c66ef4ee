"""Loading each stage where it runs: the place decides the device and the sizes it is checked at."""

from __future__ import annotations

import pytest

from brrr_kernels.base.errors import OpLoadError
from brrr_kernels.op import loaders
from brrr_kernels.op.loaders import Where, load_op, load_stage


def test_where_a_stage_runs_picks_its_device_and_sizes() -> None:
    spec = load_op("sigmoid").spec
    assert (Where.GPU.device, Where.GPU.sizes(spec)) == ("cuda", spec.gpu_sizes)
    for where in (Where.CPU, Where.SIMULATOR):
        assert (where.device, where.sizes(spec)) == ("cpu", spec.sim_sizes)


@pytest.mark.parametrize(("name", "where"), [("reference", Where.CPU), ("numba", Where.SIMULATOR)])
def test_load_stage_gives_the_stage_where_it_runs(name: str, where: Where) -> None:
    stage = load_stage(load_op("sigmoid"), name, where)
    assert (stage.name, stage.where, stage.device) == (name, where, "cpu") and callable(stage.forward)


def test_a_place_a_stage_cannot_run_is_a_loading_error() -> None:
    with pytest.raises(OpLoadError, match="the reference stage cannot run on the GPU"):
        load_stage(load_op("sigmoid"), "reference", Where.GPU)


def test_the_cpu_execution_names_every_gpu_size_it_leaves_out() -> None:
    spec = load_op("layernorm").spec
    ran, left = Where.CPU_EXECUTION.sizes(spec), Where.CPU_EXECUTION.left_out(spec)
    assert left and set(spec.gpu_sizes) <= set(ran) | set(left) and not set(ran) & set(left)
    assert Where.GPU.left_out(spec) == () and Where.SIMULATOR.left_out(spec) == ()


@pytest.mark.parametrize("name", ["matmul", "layernorm", "softmax"])
def test_strided_layouts_run_at_the_last_two_sizes_the_place_affords(name: str) -> None:
    """On a GPU the last two sizes; executed on the CPU the last two of its sizes under the strided
    budget, a smaller one than the random sizes': five layouts of the largest would cost more than
    all the random sizes together."""
    spec = load_op(name).spec
    assert Where.GPU.strided_sizes(spec) == Where.GPU.sizes(spec)[-2:]
    strided = Where.CPU_EXECUTION.strided_sizes(spec)
    within = [s for s in Where.CPU_EXECUTION.sizes(spec) if loaders._input_elements(spec, s) <= loaders.CPU_SECONDARY_BUDGET]
    assert len(strided) == 2 and strided == tuple(within[-2:])
    assert loaders.CPU_SECONDARY_BUDGET < loaders.CPU_SIZE_BUDGET


def test_a_module_of_several_cu_files_takes_the_one_its_spec_does_not_list_as_its_cuda_stage(tmp_path) -> None:
    import shutil
    from pathlib import Path

    folder = tmp_path / "multi"
    shutil.copytree(Path(__file__).resolve().parent.parent / "cuda" / "byok_ops" / "multi", folder)
    (folder / "kernel.cu").rename(folder / "scale.cu")  # shift.cu is the spec's, among its sources
    assert load_op(str(folder)).path("cuda").name == "scale.cu"
    (folder / "other.cu").write_text("__global__ void unused() {}\n")  # two unlisted: none is chosen
    assert load_op(str(folder)).path("cuda").name == "kernel.cu"
