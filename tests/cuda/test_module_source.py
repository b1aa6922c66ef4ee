"""An author's own torch extension made ready to build (module_source) and the headers around it
(cpu_includes): kernels of our own in the idioms of public code."""

from __future__ import annotations

from pathlib import Path

import pytest

from brrr_kernels.base.errors import BuildError
from brrr_kernels.cuda import cpu_includes
from brrr_kernels.cuda.module_source import (
    cuda_device_as_cpu,
    defining_namespace,
    duplicated_module,
    host_twins,
    kernel_names,
    module_text,
    rename_host_twins,
)

# llm.c's way: a kernel, and a host launcher of the same name taking a block size.
TWINS = """\
__global__ void scale(float* out, const float* inp, float s, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = inp[i] * s;
}

void scale(float* out, const float* inp, float s, int N, const int block_size) {
    const int grid_size = (N + block_size - 1) / block_size;
    scale<<<grid_size, block_size>>>(out, inp, s, N);
}

torch::Tensor scale_torch(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    scale(y.data_ptr<float>(), x.data_ptr<float>(), (float)s, x.numel(), 256);
    return y;
}
"""

SEED_TWICE = """\
#include <torch/extension.h>
void f(torch::Tensor a) {}
PYBIND11_MODULE(ext, m) {
    m.def("f", &f, "doc");
}
// again
PYBIND11_MODULE(ext, m) {
    m.def("f", &f, "doc");
}
"""


def test_a_host_launcher_named_as_its_kernel_is_renamed_and_the_kernel_and_launch_keep_the_name() -> None:
    assert host_twins(TWINS) == {"scale"}
    text, renamed = rename_host_twins(TWINS)
    assert renamed == {"scale": "scale__host"}
    assert "__global__ void scale(float* out" in text
    assert "void scale__host(float* out, const float* inp, float s, int N, const int block_size)" in text
    assert "scale<<<grid_size, block_size>>>" in text
    assert "scale__host(y.data_ptr<float>()" in text
    assert text.count("\n") == TWINS.count("\n")  # lines keep their numbers


def test_no_rename_without_a_twin() -> None:
    only = TWINS.split("void scale(float* out, const float* inp, float s, int N, const int")[0]
    assert host_twins(only) == set()
    assert rename_host_twins(only)[0] == only


def test_a_module_declared_twice_is_named_at_both_lines() -> None:
    said = duplicated_module(SEED_TWICE, Path("seed.cu"))
    assert said is not None and "seed.cu:7:" in said and "first at line 3" in said
    assert duplicated_module(SEED_TWICE.split("// again")[0], Path("seed.cu")) is None


def test_module_text_calls_the_first_user_module_and_binds_the_named_functions() -> None:
    text = module_text(SEED_TWICE.replace("void f(", "void g(torch::Tensor b) {}\nvoid f("), Path("seed.cu"),
                       "brrr_mod", ("f", "g"))
    assert "PYBIND11_MODULE(ext" not in text
    assert "static void brrr_user_module_0(::pybind11::module_& m)" in text
    glue = text.split('#line 1 "brrr: the module brrr binds"')[1]
    assert "brrr_user_module_0(m);" in glue and "brrr_user_module_1(m)" not in glue
    assert 'm.def("g", &g);' in glue and 'm.def("f"' not in glue  # f is the module's own


def test_module_text_refuses_a_name_the_file_does_not_have() -> None:
    with pytest.raises(BuildError, match="names nope, which this file neither defines nor binds"):
        module_text(SEED_TWICE, Path("seed.cu"), "brrr_mod", ("nope",))


def test_module_text_binds_the_host_twin_by_its_new_name() -> None:
    glue = module_text(TWINS, Path("k.cu"), "brrr_mod", ("scale_torch",)).split("brrr binds")[1]
    assert 'm.def("scale_torch", &scale_torch);' in glue


def test_headers_of_the_folder_are_rewritten_and_unknown_ones_stood_in_for(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRRR_CACHE", str(tmp_path / "cache"))
    op = tmp_path / "op"
    op.mkdir()
    (op / "common.h").write_text("#pragma once\n#include <cusolverDn.h>\ntemplate <typename T>\n"
                                 "__device__ T first(T v) {\n    __shared__ T slot[32];\n    slot[0] = v;\n"
                                 "    return slot[0];\n}\n")
    kernel = op / "k.cu"
    kernel.write_text('#include "common.h"\n// #include <never_looked_at.h>\n#include <cuda_runtime.h>\n')
    found = cpu_includes.prepare(op, [kernel], "t", [])
    assert set(found.stubbed) == {"cusolverDn.h"}
    assert found.stubbed["cusolverDn.h"].endswith("common.h:2")
    rewritten = (found.folders[0] / "common.h").read_text()
    assert "__shared__" not in rewritten.split("#line 1")[1]  # the declaration went to brrr's per-block storage
    assert "shared_at" in rewritten
    assert (found.folders[1] / "cusolverDn.h").is_file()
    said = cpu_includes.explain("k.cu:9: error: 'cusolverDnCreate' was not declared in this scope", found)
    assert "<cusolverDn.h>" in said and "common.h:2" in said and "cuda_runtime.h" in said


def test_functions_named_for_an_adapter_are_bound_by_their_own_name_from_a_namespace() -> None:
    text = ("#include <torch/extension.h>\nnamespace ext {\n"
            "at::Tensor muladd(const at::Tensor& a, const at::Tensor& b, double c) { return a * b + c; }\n}\n")
    glue = module_text(text, Path("muladd.cu"), "brrr_module_x", ("ext::muladd",)).split("brrr binds")[1]
    assert 'm.def("muladd", &ext::muladd);' in glue


@pytest.mark.parametrize(("name", "prefix"), [("wrap", "outer::inner::"), ("helper", ""), ("free", ""), ("absent", "")])
def test_a_bare_name_is_qualified_by_the_namespace_that_defines_it(name: str, prefix: str) -> None:
    text = ("namespace outer { namespace inner {\n__global__ void k(float* p) { if (p) { p[0] = 1; } }\n"
            "at::Tensor wrap(const at::Tensor& x, double c) { return x; }\n} }\n"
            "namespace { void helper(int x) { } }\nvoid free() {}\n")
    assert defining_namespace(text, name) == prefix


def test_module_text_binds_a_namespaced_function_named_bare() -> None:
    text = "namespace ns {\nat::Tensor f(const at::Tensor& x) { return x; }\n}\n"
    assert 'm.def("f", &ns::f);' in module_text(text, Path("x.cu"), "mod", ("f",))


def test_cuda_device_types_read_as_the_cpu_in_code_only() -> None:
    line = ('TORCH_CHECK(x.device().type() == at::DeviceType::CUDA, "on kCUDA"); '
            "auto y = at::empty({2}, x.options().device(torch::kCUDA)); // kCUDA\n")
    out = cuda_device_as_cpu(line)
    assert out == line.replace("DeviceType::CUDA", "DeviceType::CPU").replace("torch::kCUDA", "torch::kCPU")


def test_the_deprecated_type_check_reads_as_the_tensors_own() -> None:
    line = '#define CHECK_CUDA(x) AT_ASSERTM(x.type().is_cuda(), #x " must be a CUDA tensor")\n'
    assert cuda_device_as_cpu(line) == '#define CHECK_CUDA(x) AT_ASSERTM(x.is_cuda(), #x " must be a CUDA tensor")\n'


@pytest.mark.parametrize("declaration", [
    "__global__ void __launch_bounds__(256, 2) k(int x) {}",
    "__global__ void __cluster_dims__(2, 1, 1) k(int x) {}",
    "template <int N> __global__ void __launch_bounds__(N) __cluster_dims__(N, (1), 1) k(float* y);",
    "__global__ void __attribute__((noinline)) k(int) {}",
])
def test_a_kernels_name_is_found_past_its_attributes(declaration: str) -> None:
    assert kernel_names(declaration) == {"k"}
