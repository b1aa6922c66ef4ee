"""The builder: ptxas reports, compiler errors against the user's file, the compile cache."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import copy_op, fake_toolkit, needs_cuda_torch, needs_nvcc, plant

from brrr_kernels.base.errors import BuildError
from brrr_kernels.base.files import locked
from brrr_kernels.cuda import builder
from brrr_kernels.op.loaders import load_op

PTXAS = """\
ptxas info    : Compiling entry function '_Z22sigmoid_forward_kernelIfEvPKT_PS0_l' for 'sm_90'
ptxas info    : Function properties for _Z22sigmoid_forward_kernelIfEvPKT_PS0_l
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 16 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]
"""


def test_parse_resources_reads_registers_spills_and_smem() -> None:
    (k,) = builder.parse_resources(PTXAS)
    assert k["registers"] == 16 and k["shared_bytes"] == 2048
    assert (k["stack_bytes"], k["spill_stores"], k["spill_loads"]) == (8, 4, 12)
    assert k["kernel"].startswith("sigmoid_forward_kernel")


def test_compiler_errors_keep_the_users_path_and_line(tmp_path: Path) -> None:
    source = tmp_path / "op" / "kernel.cu"
    out = f'{source}(42): error: identifier "yy" is undefined\n      y[i] = yy[i];\n             ^\n\n1 error detected\n'
    text = builder.compiler_errors(out, source)
    assert "kernel.cu(42): error" in text and 'identifier "yy"' in text


def test_gcc_errors_keep_the_users_path_and_line(tmp_path: Path) -> None:
    source = tmp_path / "op" / "binding.cpp"
    out = f"{source}: In function 'at::Tensor forward(at::Tensor)':\n{source}:17:5: error: 'yy' was not declared\n"
    assert "binding.cpp:17:5: error" in builder.compiler_errors(out, source)


def test_each_object_key_covers_its_own_source_only(tmp_path: Path) -> None:
    op = load_op(str(copy_op("sigmoid", tmp_path)))
    kernel, binding = builder.kernel_job(op, "sm_90")[2], builder.binding_job(op)[2]
    assert builder.kernel_job(op, "sm_80")[2] != kernel
    op.path("cuda").write_text(op.path("cuda").read_text() + "\n// edited\n")
    assert builder.kernel_job(op, "sm_90")[2] != kernel and builder.binding_job(op)[2] == binding
    op.path("binding").write_text(op.path("binding").read_text() + "\n// edited\n")
    assert builder.binding_job(op)[2] != binding
    (op.folder / "common.cuh").write_text("// a header of the op's own\n")
    assert builder.binding_job(op)[2] != binding


@needs_nvcc
def test_a_kernel_edit_recompiles_kernel_cu_only_and_a_corrupt_object_is_rebuilt(tmp_path: Path) -> None:
    op = load_op(str(copy_op("sigmoid", tmp_path)))
    kernel, binding = builder.compile_objects(op, builder.DEFAULT_ARCH)
    again = builder.compile_check(op)
    assert again.cached and again.kernels == kernel.kernels
    assert {"sigmoid_forward_kernel<float, 4>", "sigmoid_backward_kernel<double, 2>"} <= {k.kernel for k in kernel.kernels}
    source = op.path("cuda")
    source.write_text(source.read_text() + "\n// an edit: kernel.cu's text changed, binding.cpp's did not\n")
    edited, binding_again = builder.compile_objects(op, builder.DEFAULT_ARCH)
    assert not edited.cached and binding_again.cached and binding_again.path == binding.path
    edited.path.write_bytes(edited.path.read_bytes()[:100])  # a truncated object
    rebuilt, _ = builder.compile_objects(op, builder.DEFAULT_ARCH)
    assert not rebuilt.cached and rebuilt.path.stat().st_size > 100
    assert json.loads(rebuilt.path.with_suffix(".json").read_text())["kernels"]


@needs_cuda_torch
def test_a_launcher_kernel_cu_does_not_instantiate_is_named_at_link_time(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu",
                   "template void sigmoid_forward(const double*, double*, int64_t, cudaStream_t);\n", "")
    with pytest.raises(BuildError) as e:
        builder.build_extension(load_op(str(folder)), arch="sm_90")
    assert "does not define" in str(e.value) and "sigmoid_forward<double>(double const*" in str(e.value)


@needs_nvcc
def test_a_missing_instantiation_is_named_without_a_gpu(tmp_path: Path) -> None:
    folder = plant(copy_op("sigmoid", tmp_path), "kernel.cu",
                   "template void sigmoid_backward(const float*, const float*, float*, int64_t, cudaStream_t);\n", "")
    with pytest.raises(BuildError) as e:
        builder.compile_check(load_op(str(folder)))
    assert "does not define" in str(e.value) and "sigmoid_backward<float>(float const*" in str(e.value)
    assert "sigmoid_forward" not in str(e.value)


def _fake_nvcc_wheel(site: Path) -> Path:
    """A site-packages folder holding what pip installs for nvidia-cuda-nvcc: the tree and its RECORD."""
    home = site / "nvidia" / "cu13"
    (home / "bin").mkdir(parents=True)
    (home / "include").mkdir()
    (home / "bin" / "nvcc").write_text("#!/bin/sh\n")
    (home / "bin" / "nvcc").chmod(0o755)
    (home / "include" / "cuda.h").write_text("")
    info = site / "nvidia_cuda_nvcc-13.0.88.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: nvidia-cuda-nvcc\nVersion: 13.0.88\n")
    (info / "RECORD").write_text("nvidia/cu13/bin/nvcc,,\nnvidia/cu13/include/cuda.h,,\n")
    return home


@pytest.mark.parametrize("system", [False, True], ids=["wheel only", "system toolkit too"])
def test_the_toolkit_from_pip_is_found_and_a_system_one_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             system: bool) -> None:
    wheel = _fake_nvcc_wheel(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert builder.wheel_cuda_home() == wheel
    monkeypatch.delenv("CUDA_PATH", raising=False)
    if system:
        toolkit = _fake_nvcc_wheel(tmp_path / "system")  # the same layout as /usr/local/cuda
        monkeypatch.setenv("CUDA_HOME", str(toolkit))
        assert builder.cuda_home() == toolkit
    else:
        monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
        monkeypatch.setenv("PATH", str(tmp_path / "empty"))
        monkeypatch.setattr(builder, "SYSTEM_CUDA", tmp_path / "none")
        assert builder.cuda_home() == wheel


def _start_build(folder: Path, env: dict[str, str], cache: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "brrr_kernels", "build", str(folder)], text=True,
                            env={**os.environ, **env, "BRRR_CACHE": str(cache)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def test_a_killed_build_leaves_no_object_and_its_temporaries_are_swept_by_the_next(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    cache, marks = tmp_path / "cache", tmp_path / "marks"
    build = _start_build(folder, fake_toolkit(tmp_path / "cuda", marks, "forever"), cache)
    deadline = time.monotonic() + 120
    while len(marks.joinpath("compiles").read_text().split() if marks.joinpath("compiles").exists() else []) < 2:
        assert build.poll() is None and time.monotonic() < deadline, build.communicate()[0]
        time.sleep(0.05)
    os.killpg(build.pid, signal.SIGKILL)  # nothing brrr can catch: the compilers die half-way
    build.wait()
    left = sorted(p.name for p in (cache / "obj").glob(".*"))
    assert len(left) == 2 and all(n.startswith(".sigmoid-") for n in left)  # half objects, under temporary names
    assert [p for p in (cache / "obj").glob("*.o") if not p.name.startswith(".")] == []  # none under its own name
    again = _start_build(folder, fake_toolkit(tmp_path / "cuda", marks), cache)
    out = again.communicate(timeout=120)[0]
    assert again.returncode == 0, out
    assert sorted(p.name for p in (cache / "obj").glob(".*")) == []
    assert [p.read_text() for p in (cache / "obj").glob("*.o")] == ["half an object"] * 2


def test_two_concurrent_builds_compile_once(tmp_path: Path) -> None:
    folder = copy_op("sigmoid", tmp_path)
    cache, marks = tmp_path / "cache", tmp_path / "marks"
    env = fake_toolkit(tmp_path / "cuda", marks, "2")
    builds = [_start_build(folder, env, cache) for _ in range(2)]
    outs = [b.communicate(timeout=180)[0] for b in builds]
    assert [b.returncode for b in builds] == [0, 0], outs
    assert len(marks.joinpath("compiles").read_text().split()) == 2  # kernel.cu and binding.cpp, once each
    # One build may compile both and the other find them cached, or each compile one (their two
    # compiler threads take the two objects' locks in either order): never both say "(cached)".
    assert sum("(cached)" in out for out in outs) <= 1, outs


def test_sweep_keeps_the_temporary_of_a_build_in_progress(tmp_path: Path) -> None:
    obj = tmp_path / "sigmoid-kernel-0123456789abcdef.o"
    busy, dead = tmp_path / f".{obj.name}.abcd1234.o", tmp_path / ".other-kernel-0123.o.zz99yy88.o"
    busy.write_text("half")
    dead.write_text("half")
    with locked(obj.with_suffix(".lock")):
        builder.sweep_temporaries(tmp_path)
    assert busy.exists() and not dead.exists()
    builder.sweep_temporaries(tmp_path)
    assert not busy.exists()


LINKER_OUTPUT = ("kernel.o: in function `f': undefined reference to `{}'\n"
                 "binding.o: in function `g': undefined reference to `{}'\n")


@pytest.mark.parametrize(("undefined", "blames_kernel"), [
    (("sigmoid_forward<float>(float const*, float*, long)", "std::thread::join()"), True),
    (("std::thread::join()", "vtable for std::__cxx11::basic_ostringstream<char>"), False),
    (("__cxa_throw", "operator new(unsigned long)"), False),
], ids=["a launcher", "C++ runtime", "C++ ABI"])
def test_a_link_error_blames_kernel_cu_only_for_launchers(undefined: tuple[str, str], blames_kernel: bool) -> None:
    error = builder._link_error(load_op("sigmoid"), ["c++", "-shared"], LINKER_OUTPUT.format(*undefined))
    assert ("does not define" in error.message) is blames_kernel
    if blames_kernel:
        assert "sigmoid_forward<float>" in error.message and "std::thread" not in error.message
    else:
        assert "linking sigmoid failed" in error.message and "command: c++ -shared" in error.message
        assert error.hint is not None and "toolchain" in error.hint


def test_a_ptxas_error_is_shown_not_only_its_info_lines(tmp_path: Path) -> None:
    """A 64 MB __shared__ array: ptxas says why in a line with no file (padded "error   :"); the message
    shows that line, not "could not compile" and the info lines after it."""
    from brrr_kernels.cuda.builder import compiler_errors

    output = ("ptxas error   : Entry function '_Z1kPf' uses too much shared data (0x4000000 bytes, 0xc000 max)\n"
              "ptxas info    : 0 bytes gmem\n"
              "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'\n"
              + "ptxas info    : Function properties for _Z1kPf\n" * 30)
    shown = compiler_errors(output, tmp_path / "kernel.cu")
    assert shown.splitlines()[0].startswith("ptxas error") and "too much shared data" in shown


def test_an_error_inside_a_header_names_the_users_line_that_led_there(tmp_path: Path) -> None:
    source = tmp_path / "op.cu"
    output = (f"/torch/include/Dispatch.h:36:63: error: cannot convert 'DeprecatedTypeProperties' to 'ScalarType'\n"
              "   36 |     ScalarType _st = scalar_type(the_type);\n      |  ^~~\n"
              "/torch/include/ATen/Dispatch.h:197:3: note: in expansion of macro 'AT_DISPATCH_SWITCH'\n"
              f"{source}:119:3: note: in expansion of macro 'AT_DISPATCH_FLOATING_TYPES'\n"
              "  119 |   AT_DISPATCH_FLOATING_TYPES(gates.type(), \"fwd\", ([&] {\n")
    said = builder.compiler_errors(output, source)
    assert "op.cu:119:3: note: in expansion of macro 'AT_DISPATCH_FLOATING_TYPES'" in said
    assert "AT_DISPATCH_FLOATING_TYPES(gates.type()" in said


@pytest.mark.parametrize("arch, flags", [
    ("sm_90a", ["-gencode", "arch=compute_90a,code=[sm_90a,compute_90a]"]),
    ("sm_100a", ["-gencode", "arch=compute_100a,code=[sm_100a,compute_100a]"]),
    ("sm_90", ["-arch=sm_90"]),
    ("sm_80", ["-arch=sm_80"]),
])
def test_an_arch_specific_target_gets_its_own_ptx_alone(arch: str, flags: list[str]) -> None:
    """CUDA 13's -arch=sm_90a also embeds compute_90 PTX, which refuses an unguarded wgmma."""
    assert builder.arch_flags(arch) == flags


@needs_nvcc
def test_an_unguarded_wgmma_compiles_for_sm_90a(tmp_path: Path) -> None:
    source = tmp_path / "k.cu"
    source.write_text('__global__ void k() { asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory"); }\n')
    proc = subprocess.run([builder.find_nvcc(), "-c", *builder.arch_flags("sm_90a"), str(source), "-o",
                           str(tmp_path / "k.o")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_the_driver_library_is_linked_only_for_objects_that_call_the_driver_api(tmp_path: Path, monkeypatch) -> None:
    """A module calling cuTensorMapEncodeTiled gets libcuda.so.1 from where the driver put it; any other
    module's link is unchanged (and without a driver there is none to add)."""
    calls, plain = tmp_path / "calls.cpp", tmp_path / "plain.cpp"
    calls.write_text('extern "C" int cuTensorMapEncodeTiled(void*);\nint f(void* m) { return cuTensorMapEncodeTiled(m); }\n')
    plain.write_text("int g(int x) { return x + 1; }\n")
    for source in (calls, plain):
        subprocess.run([builder.find_cxx(), "-c", str(source), "-o", str(source.with_suffix(".o"))], check=True)
    driver = tmp_path / "driver"
    driver.mkdir()
    monkeypatch.setattr(builder, "DRIVER_DIRS", (str(driver),))
    assert builder.driver_link_flags([calls.with_suffix(".o")]) == []  # no libcuda.so.1 there yet
    (driver / "libcuda.so.1").write_bytes(b"")
    assert builder.driver_link_flags([calls.with_suffix(".o")]) == [f"-L{driver}", "-l:libcuda.so.1"]
    assert builder.driver_link_flags([plain.with_suffix(".o")]) == []
