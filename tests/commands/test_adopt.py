"""`brrr adopt`: extensions of our own, in the layouts their authors use, made into op folders whose
kernel code is byte for byte the author's, with stubs that say what is left to write."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from brrr_kernels.base.errors import UsageError
from brrr_kernels.cli import main as cli_main
from brrr_kernels.commands.adopt import adopt, function_signature, host_functions, tensor_functions
from brrr_kernels.op.loaders import load_op, load_reference

# One .cu holding kernel, wrapper and module, as load() users write it.
SINGLE = """\
#include <torch/extension.h>

__global__ void scale_kernel(float* y, const float* x, float s, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s;
}

torch::Tensor scale_forward(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    scale_kernel<<<(x.numel() + 255) / 256, 256>>>(y.data_ptr<float>(), x.data_ptr<float>(), (float)s, x.numel());
    return y;
}

torch::Tensor scale_backward(torch::Tensor grad_y, torch::Tensor x, double s) { return grad_y * s; }

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("forward", &scale_forward, "y = s x");
    // m.def("old_forward", &scale_forward);
    m.def("backward", &scale_backward);
}
"""

# A setup.py project: the wrapper in a .cpp, the kernels in a .cu including a header of the project.
SETUP = """\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(name="addone", ext_modules=[CUDAExtension("addone_cuda", ["addone.cpp", "addone_kernel.cu"])],
      cmdclass={"build_ext": BuildExtension})
"""
WRAPPER = """\
#include <torch/extension.h>
torch::Tensor addone_cuda(torch::Tensor x);
torch::Tensor addone(torch::Tensor x) { return addone_cuda(x); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("addone", &addone); }
"""
KERNELS = """\
#include <torch/extension.h>
#include "util/ceil.h"
__global__ void addone_kernel(float* y, const float* x, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
torch::Tensor addone_cuda(torch::Tensor x) {
    auto y = torch::empty_like(x);
    addone_kernel<<<CEIL(x.numel(), 256), 256>>>(y.data_ptr<float>(), x.data_ptr<float>(), x.numel());
    return y;
}
"""

# llm.c's way: kernels and host launchers, no torch at all.
KERNELS_ONLY = """\
__global__ void relu_kernel(float* out, const float* inp, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

void relu_forward(float* out, const float* inp, int N, const int block_size) {
    relu_kernel<<<(N + block_size - 1) / block_size, block_size>>>(out, inp, N);
}
"""


def test_a_single_cu_becomes_an_op_folder_naming_its_module_functions(tmp_path: Path) -> None:
    (tmp_path / "scale.cu").write_text(SINGLE)
    folder, written, left = adopt(tmp_path / "scale.cu", tmp_path / "op", None)
    assert (folder / "scale.cu").read_text() == SINGLE  # the author's code as it is
    spec = (folder / "spec.py").read_text()
    assert 'TorchModule(forward="forward", backward="backward")' in spec
    assert "inputs=('x',)" in spec
    assert "old_forward" not in spec  # a commented-out binding is not one
    assert "double s" in spec and "params={'s': 0.5}" in spec  # the non-tensor argument, a spec param
    op = load_op(str(folder))
    assert op.spec.name == "scale" and op.path("cuda").name == "scale.cu"
    reference = load_reference(op)
    with pytest.raises(NotImplementedError, match="brrr adopt: write forward"):
        reference.forward(None, 0.5)
    assert any("reference.py" in item for item in left)


def test_a_setup_py_project_brings_its_sources_and_headers(tmp_path: Path) -> None:
    project = tmp_path / "addone"
    (project / "util").mkdir(parents=True)
    (project / "setup.py").write_text(SETUP)
    (project / "addone.cpp").write_text(WRAPPER)
    (project / "addone_kernel.cu").write_text(KERNELS)
    (project / "util" / "ceil.h").write_text("#define CEIL(a, b) (((a) + (b) - 1) / (b))\n")
    folder, _, _ = adopt(project, tmp_path / "op", "addone")
    for name in ("addone.cpp", "addone_kernel.cu", "util/ceil.h"):
        assert (folder / name).read_text() == (project / name).read_text()
    spec = (folder / "spec.py").read_text()
    assert "TorchModule(forward=\"addone\", sources=('addone.cpp',))" in spec
    assert 'forward_only="TODO' in spec  # no backward found: said as a TODO, not decided
    assert load_op(str(folder)).spec.torch_module.sources == ("addone.cpp",)


def test_adopt_never_overwrites_a_different_file(tmp_path: Path) -> None:
    (tmp_path / "scale.cu").write_text(SINGLE)
    target = tmp_path / "op"
    target.mkdir()
    (target / "scale.cu").write_text("// mine\n")
    with pytest.raises(UsageError, match="never overwrites"):
        adopt(tmp_path / "scale.cu", target, None)
    assert (target / "scale.cu").read_text() == "// mine\n"


def test_a_kernels_only_cu_lists_its_launchers_for_binding_cpp(tmp_path: Path) -> None:
    (tmp_path / "relu.cu").write_text(KERNELS_ONLY)
    folder, _, left = adopt(tmp_path / "relu.cu", tmp_path / "op", None)
    assert "TorchModule" not in (folder / "spec.py").read_text()
    binding = next(item for item in left if "binding.cpp" in item)
    assert "relu_forward(float* out, const float* inp, int N, const int block_size)" in binding


def test_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "scale.cu").write_text(SINGLE)
    assert cli_main(["adopt", str(tmp_path / "scale.cu"), "--into", str(tmp_path / "op")]) == 0
    assert "left to write" in capsys.readouterr().out
    assert cli_main(["adopt", str(tmp_path / "nothing.cu")]) != 0
    assert "no such file" in capsys.readouterr().err


def test_two_cu_files_are_refused_naming_both(tmp_path: Path) -> None:
    (tmp_path / "a.cu").write_text(KERNELS_ONLY)
    (tmp_path / "b.cu").write_text(KERNELS_ONLY)
    with pytest.raises(UsageError, match=r"2 \.cu files \(.*a\.cu, .*b\.cu\) and no torch wrapper; an op folder in "):
        adopt(tmp_path, tmp_path / "op", "two")


# The module's functions bound through macros: one defined in the .cu, one in a header of the project
# (a registration macro as TORCH_LIBRARY users write them), and one from a header outside it.
BY_MACRO = """\
#include <torch/extension.h>
#include "register.h"
#include <third_party/bindings.h>

torch::Tensor scale_forward(torch::Tensor x, double s) { return x * s; }
torch::Tensor scale_backward(torch::Tensor grad_y, torch::Tensor x, double s) { return grad_y * s; }
torch::Tensor scale_fwd_half(torch::Tensor x) { return x * 0.5; }

#define BIND(name, fn) m.def(#name, &fn)

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    BIND(forward, scale_forward);
    BIND(backward,
         scale_backward);
    THIRD_PARTY_BIND(m, legacy);
    m.def("checked", [](torch::Tensor x) { TORCH_CHECK(x.is_cuda(), "x on the GPU"); return x; });
}

TORCH_LIBRARY_IMPL(scale_ops, CUDA, m) {
    REGISTER_IMPL(m, scale_fwd_half);
}
"""
REGISTER_H = """\
#pragma once
// One line per op: the impl registered under the function's own name.
#define REGISTER_IMPL(lib, fn) \\
    lib.impl(#fn, TORCH_FN(fn))
"""


def test_functions_bound_through_the_projects_macros_are_read_and_others_are_named(tmp_path: Path) -> None:
    (tmp_path / "scale.cu").write_text(BY_MACRO)
    (tmp_path / "register.h").write_text(REGISTER_H)
    folder, written, left = adopt(tmp_path / "scale.cu", tmp_path / "op", None)
    assert (folder / "scale.cu").read_text() == BY_MACRO and (folder / "register.h").read_text() == REGISTER_H
    spec = (folder / "spec.py").read_text()
    assert 'TorchModule(forward="forward", backward="backward")' in spec  # BIND(...) read through the preprocessor
    binds = next(line for line in spec.splitlines() if line.startswith("# The module binds: "))
    assert "forward (torch::Tensor x, double s)" in binds and "backward (torch::Tensor grad_y, torch::Tensor x" in binds
    assert "scale_fwd_half (torch::Tensor x)" in binds  # register.h's REGISTER_IMPL, a TORCH_FN impl
    # the macro whose definition is outside the project is said, by its line, as left to do
    assert "scale.cu:15: THIRD_PARTY_BIND(...)" in spec
    assert any("scale.cu:15: THIRD_PARTY_BIND(...)" in item and "name them in spec.py" in item for item in left)
    assert "BIND(...)" not in " ".join(left).replace("THIRD_PARTY_BIND(...)", "")
    assert "checked (signature not found)" in binds and "TORCH_CHECK" not in spec  # a lambda's own macros are no binding


def test_a_setup_py_module_of_two_cu_files_and_a_wrapper_becomes_one_op(tmp_path: Path) -> None:
    multi = Path(__file__).resolve().parent.parent / "cuda" / "byok_ops" / "multi"
    project = tmp_path / "affine"
    project.mkdir()
    for name, to in (("kernel.cu", "scale.cu"), ("shift.cu", "shift.cu"), ("bind.cpp", "bind.cpp")):
        (project / to).write_text((multi / name).read_text())
    (project / "setup.py").write_text('from setuptools import setup\nfrom torch.utils.cpp_extension import CUDAExtension\n'
                                      'setup(ext_modules=[CUDAExtension("affine", ["bind.cpp", "scale.cu", "shift.cu"])])\n')
    folder, _, _ = adopt(project, tmp_path / "op", "affine")
    spec = (folder / "spec.py").read_text()
    assert "TorchModule(forward=\"forward\", sources=('bind.cpp', 'shift.cu'))" in spec
    op = load_op(str(folder))  # the .cu the spec does not list is the op's cuda stage
    assert op.path("cuda").name == "scale.cu" and op.spec.torch_module.sources == ("bind.cpp", "shift.cu")


# PyTorch's custom-op tutorial: setup.py collects its sources with glob(), under a package folder.
GLOB_SETUP = """\
import glob, os
from setuptools import setup
from torch.utils.cpp_extension import CUDAExtension
sources = glob.glob(os.path.join("pkg", "csrc", "*.cpp")) + glob.glob(os.path.join("pkg", "csrc", "cuda", "*.cu"))
setup(name="pkg", ext_modules=[CUDAExtension("pkg._C", sources)])
"""


@pytest.mark.parametrize("given", ["setup.py", "."])
def test_a_project_whose_setup_py_globs_its_sources_is_found_under_its_folder(tmp_path: Path, given: str) -> None:
    registered = Path(__file__).resolve().parent.parent / "cuda" / "byok_ops" / "registered"
    project = tmp_path / "project"
    (project / "pkg" / "csrc" / "cuda").mkdir(parents=True)
    (project / "pkg" / "csrc" / "cuda" / "fma.cu").write_text((registered / "fma.cu").read_text())
    (project / "pkg" / "csrc" / "fma.cpp").write_text((registered / "fma.cpp").read_text())
    (project / "build" / "temp").mkdir(parents=True)
    (project / "build" / "temp" / "stale.cu").write_text("__global__ void old() {}\n")  # a build's copy: not a source
    (project / "setup.py").write_text(GLOB_SETUP)
    folder, written, _ = adopt(project / given, tmp_path / "op", "fma")
    assert sorted(Path(w).name for w in written) == ["fma.cpp", "fma.cu", "reference.py", "spec.py"]
    spec = (folder / "spec.py").read_text()
    assert 'forward="myfma_cuda"' in spec and "params={'c': 0.5}" in spec  # the double c, as a spec param
    assert "no m.def" not in spec  # the TORCH_LIBRARY_IMPL functions were read
    assert "def forward(a, b, c):" in (folder / "reference.py").read_text()


def test_a_setup_py_naming_no_sources_and_none_under_it_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "setup.py").write_text(GLOB_SETUP)
    with pytest.raises(UsageError, match=r"setup.py: names no source file brrr can read"):
        adopt(tmp_path / "setup.py", tmp_path / "op", "x")


def test_a_comment_beside_a_parameter_is_not_part_of_the_next_ones_type() -> None:
    """vLLM's wrappers comment each tensor's shape after its comma: the next parameter is still `float epsilon`."""
    text = ("void rms_norm(\n  torch::Tensor& out,      // [num_tokens, hidden_size]\n"
            "  torch::Tensor& input,    /* [num_tokens, hidden_size] */\n  float epsilon) {\n}\n")
    f = function_signature(text, "rms_norm")
    assert f is not None
    assert f.params == (("torch::Tensor&", "out"), ("torch::Tensor&", "input"), ("float", "epsilon"))


# A model file in src/ that load()s sources named from the folder above it (it is run from there), with
# a macro the kernels need among other nvcc flags; a source name and a flag are f-strings of module constants.
LOADER = """\
from torch.utils.cpp_extension import load
T_MAX = 1024
EXT = "cu"
wkv = load(name="wkv", sources=["cuda/op.cpp", f"cuda/op.{EXT}"],
           extra_cuda_cflags=["--use_fast_math", "--maxrregcount 60", f"-DTmax={T_MAX}", "-D", "FAST", "-Xptxas", "-O3"],
           extra_cflags=[f"-DPATH={unknown()}"])
"""


def test_a_load_script_brings_the_sources_it_names_from_where_it_runs_and_its_macros(tmp_path: Path) -> None:
    project = tmp_path / "rwkv"
    (project / "cuda").mkdir(parents=True)
    (project / "src").mkdir()
    (project / "src" / "model.py").write_text(LOADER)
    (project / "cuda" / "op.cpp").write_text(WRAPPER)
    (project / "cuda" / "op.cu").write_text(KERNELS.replace('#include "util/ceil.h"\n', ""))
    folder, _, left = adopt(project / "src" / "model.py", tmp_path / "op", "wkv")
    assert (folder / "op.cu").is_file() and (folder / "op.cpp").is_file()
    assert load_op(str(folder)).spec.defines == {"Tmax": "1024", "FAST": ""}
    said = " ".join(left)
    assert "--use_fast_math" in said and "--maxrregcount 60" in said
    assert "-Xptxas -O3" in said  # an option and its value that starts with '-': one flag
    assert "unknown()" in said  # a flag computed at run time is named, not guessed


def test_a_load_script_naming_sources_nowhere_near_it_is_refused_naming_them(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(LOADER)
    with pytest.raises(UsageError, match=r"names sources that are not there: .*cuda/op\.cpp"):
        adopt(tmp_path / "model.py", tmp_path / "op", "wkv")


# load_inline's ways of giving its strings: a name, a list, `+`, dedent, a file the script reads.
INLINE_CUDA = '''
__global__ void twice_kernel(const float* x, float* y, int64_t n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
'''
INLINE_WRAPPER = '''
torch::Tensor twice(torch::Tensor x) {
    auto y = torch::empty_like(x);
    twice_kernel<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}
'''
INLINE_SCRIPT = '''\
import textwrap
from pathlib import Path
from torch.utils.cpp_extension import load_inline

KERNEL = {kernel!r}
cuda_src = KERNEL + {wrapper}
ext = load_inline(name="twice_ext", cpp_sources=[textwrap.dedent("""
    torch::Tensor twice(torch::Tensor x);
""")], cuda_sources=cuda_src, functions=["twice"], extra_cuda_cflags=["-O3", "-DUNROLL=4"])
'''


@pytest.mark.parametrize("wrapper_from", ["string", "file"])
def test_a_load_inline_script_becomes_the_files_torch_would_build(tmp_path: Path, wrapper_from: str) -> None:
    (tmp_path / "wrapper.cu").write_text(INLINE_WRAPPER)
    wrapper = repr(INLINE_WRAPPER) if wrapper_from == "string" else 'Path("wrapper.cu").read_text()'
    (tmp_path / "run.py").write_text(INLINE_SCRIPT.format(kernel=INLINE_CUDA, wrapper=wrapper))
    folder, written, left = adopt(tmp_path / "run.py", tmp_path / "op", None)
    # torch's cuda.cu: its three includes, then the strings joined; main.cpp: torch/extension.h, the
    # author's declarations, the bindings load_inline writes for `functions`.
    assert (folder / "twice_ext.cu").read_text() == "\n".join(
        ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>", INLINE_CUDA + INLINE_WRAPPER]) + "\n"
    main = (folder / "twice_ext_main.cpp").read_text()
    assert main.startswith("#include <torch/extension.h>\n\ntorch::Tensor twice(torch::Tensor x);\n")
    assert 'm.def("twice", torch::wrap_pybind_function(twice), "twice");' in main
    spec = (folder / "spec.py").read_text()
    assert "TorchModule(forward=\"twice\", sources=('twice_ext_main.cpp',))" in spec and "inputs=('x',)" in spec
    assert "load_inline(name='twice_ext') at" in spec
    op = load_op(str(folder))
    assert op.spec.name == "twice_ext" and op.spec.defines == {"UNROLL": "4"}
    assert any("-O3" in item for item in left)


def test_a_load_inline_source_brrr_cannot_read_without_running_the_script_is_named_by_line(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("from torch.utils.cpp_extension import load_inline\n\n"
                                     "ext = load_inline('e', cpp_sources='', cuda_sources=make_source())\n")
    with pytest.raises(UsageError, match=r"run\.py:3: load_inline's cuda_sources is `make_source\(\)`"):
        adopt(tmp_path / "run.py", tmp_path / "op", None)
    (tmp_path / "run.py").write_text("from torch.utils.cpp_extension import load_inline\n\n"
                                     "ext = load_inline('e', cpp_sources='int f() { return 1; }', functions=['f'])\n")
    with pytest.raises(UsageError, match=r"run\.py:3: load_inline\(name='e'\) has no cuda_sources"):
        adopt(tmp_path / "run.py", tmp_path / "op", None)


def test_of_several_load_inline_calls_name_picks_one_and_none_is_refused_listing_them(tmp_path: Path) -> None:
    def call(name: str) -> str:
        return (f"load_inline(name={name!r}, cpp_sources='torch::Tensor twice(torch::Tensor x);', "
                f"cuda_sources={INLINE_CUDA + INLINE_WRAPPER!r}, functions=['twice'])\n")

    (tmp_path / "run.py").write_text("from torch.utils.cpp_extension import load_inline\n" + call("first") + call("second"))
    with pytest.raises(UsageError, match=r"2 extensions with load_inline: first \(line 2\), second \(line 3\)"):
        adopt(tmp_path / "run.py", tmp_path / "op", None)
    folder, _, _ = adopt(tmp_path, tmp_path / "op", "second")  # the folder holding the script works too
    assert (folder / "second.cu").is_file() and load_op(str(folder)).spec.name == "second"


# A csrc/*.cu whose module is declared elsewhere (vLLM binds its kernels in torch_bindings.cpp).
UNBOUND = """\
#include <torch/all.h>
__global__ void gated_kernel(float* out, const float* in, int d) {}
static inline int helper(int a) { return a; }
void gated(torch::Tensor& out,    // [..., d]
           torch::Tensor& input)  // [..., 2 * d]
{
  gated_kernel<<<1, 1>>>(out.data_ptr<float>(), input.data_ptr<float>(), 1);
}
torch::Tensor norm(torch::Tensor input, torch::Tensor weight, double epsilon) { return input; }
"""


def test_a_cu_whose_wrappers_are_bound_elsewhere_names_the_functions_taking_tensors(tmp_path: Path) -> None:
    (tmp_path / "gated.cu").write_text(UNBOUND)
    folder, _, _ = adopt(tmp_path / "gated.cu", tmp_path / "op", None)
    spec = (folder / "spec.py").read_text()
    assert "Those taking tensors: gated (torch::Tensor& out, torch::Tensor& input), norm (" in spec
    assert "helper" not in spec and "gated_kernel (" not in spec
    # gated returns nothing: an adapter allocates its output, and brrr binds gated by name for it
    assert "TorchModule(forward=forward_from_module, functions=('gated',))" in spec
    assert "# gated returns nothing: it writes into out (named like an output" in spec
    assert "inputs=('input',)" in spec and "outputs=('out',)" in spec
    assert load_op(str(folder)).spec.torch_module.function_names() == ("gated",)


# A .cu that builds as a test program unless its build passes a macro, its torch wrappers in the other
# branch (LeetCUDA's hgemm files: `#ifndef NO_MMA_HGEMM_BIN` around main, the wrappers in its #else).
GUARDED = """\
#ifndef SCALE_H
#define SCALE_H
__global__ void scale_kernel(float* y, const float* x, int64_t n) {{ if (threadIdx.x < n) y[threadIdx.x] = 2 * x[threadIdx.x]; }}
#endif
#if defined(__CUDA_ARCH__)
__device__ int unused;
#endif
{opening}
int main() {{ return 0; }}
#else
#include <torch/extension.h>
{inner}
torch::Tensor scale(torch::Tensor x) {{ auto y = torch::empty_like(x); return y; }}
{inner_end}
#endif
"""


@pytest.mark.parametrize(("opening", "inner", "defines"), [
    ("#ifndef NO_BIN", "", {"NO_BIN": ""}),
    ("#ifndef NO_BIN", "#ifdef WITH_TORCH", {"NO_BIN": "", "WITH_TORCH": ""}),
    ("#if !defined(NO_BIN)", "", {}),  # an #if expression is not judged
])
def test_the_macros_selecting_a_cus_torch_wrappers_go_into_defines(tmp_path: Path, opening: str, inner: str,
                                                                    defines: dict[str, str]) -> None:
    text = GUARDED.format(opening=opening, inner=inner, inner_end="#endif" if inner else "")
    (tmp_path / "scale.cu").write_text(text)
    folder, _, _ = adopt(tmp_path / "scale.cu", tmp_path / "op", None)
    spec = (folder / "spec.py").read_text()
    assert load_op(str(folder)).spec.defines == defines
    if defines:
        line = text.splitlines().index(opening) + 1
        assert f"#ifndef NO_BIN (scale.cu:{line})" in spec


def test_a_lone_cu_whose_module_is_declared_beside_it_says_to_adopt_the_folder(tmp_path: Path) -> None:
    project = tmp_path / "csrc"
    (project / "util").mkdir(parents=True)
    (project / "addone.cpp").write_text(WRAPPER)
    (project / "addone_kernel.cu").write_text(KERNELS)
    (project / "util" / "ceil.h").write_text("#define CEIL(a, b) (((a) + (b) - 1) / (b))\n")
    _, _, left = adopt(project / "addone_kernel.cu", tmp_path / "op", None)
    assert left[0].startswith(f"{project / 'addone.cpp'} beside it declares the extension's module"), left
    assert left[0].endswith(f"brrr adopt {project}")
    folder, _, left = adopt(project, tmp_path / "whole", None)  # as it says: the module comes along
    assert (folder / "addone.cpp").is_file() and not any("beside it" in item for item in left)


# A forward's parameters told apart: what each C++ argument of the call is, by position. O: an output
# the adapter allocates (input's shape), I: an input passed as given, P: written in place (a copy passed,
# then returned), N: an optional tensor (None), s: a spec param, F: another argument the adapter supplies.
FORWARDS = [
    pytest.param("void silu_and_mul(torch::Tensor& out, torch::Tensor& input)",
                 ("input",), ("out",), {}, "OI", id="void-out-first"),
    pytest.param("void rms_norm(torch::Tensor& out, torch::Tensor& input, torch::Tensor& weight, double epsilon)",
                 ("input", "weight"), ("out",), {"epsilon": 0.5}, "OIIs", id="vllm-rms_norm"),
    pytest.param("void scale(at::Tensor x, int64_t n, at::Tensor &Output)",
                 ("x",), ("Output",), {"n": 3}, "IsO", id="void-output-last"),
    pytest.param("void fused_add_rms_norm(torch::Tensor& input, torch::Tensor& residual, torch::Tensor& weight, "
                 "double epsilon)", ("input", "residual", "weight"), ("input_out", "residual_out", "weight_out"),
                 {"epsilon": 0.5}, "PPPs", id="in-place"),
    pytest.param("void add(torch::Tensor& out, const torch::Tensor& x, const torch::Tensor& y)",
                 ("x", "y"), ("out",), {}, "OII", id="const-refs"),
    pytest.param("void mul(torch::Tensor& out, torch::Tensor& x, torch::Tensor& y)",
                 ("x", "y"), ("out",), {}, "OII", id="a-short-name-is-an-input-beside-out"),
    pytest.param("void axpy(const torch::Tensor& out_scale, torch::Tensor& y, const torch::Tensor& x)",
                 ("out_scale", "x"), ("y",), {}, "IOI", id="const-is-never-an-output"),
    pytest.param("void copy_into(torch::Tensor& dst, torch::Tensor out, const torch::Tensor& in)",
                 ("out", "in_"), ("dst",), {}, "OII", id="a-reference-over-a-value"),
    pytest.param("torch::Tensor f(const torch::Tensor& x, c10::optional<torch::Tensor> bias, "
                 "const std::optional<at::Tensor>& scale)", ("x",), ("y",), {}, "INN", id="optional-tensors"),
    pytest.param("void fill(torch::Tensor& out, double v)", ("x",), ("out",), {"v": 0.5}, "Os",
                 id="no-input-tensor-takes-the-contracts-x"),
    pytest.param("torch::Tensor pad(torch::Tensor x, std::vector<int64_t> pads, const std::string& mode, "
                 "c10::optional<double> value, bool flag)", ("x",), ("y",), {"flag": True}, "IFFFs", id="other-arguments"),
]


def _adopted(tmp_path: Path, signature: str, module: str = "") -> tuple[Path, str]:
    """An op folder adopted from a .cu defining `signature` (empty body), bound elsewhere unless `module`."""
    (tmp_path / "ext.cu").write_text(f"#include <torch/all.h>\n__global__ void k(float* y) {{}}\n"
                                     f"{signature} {{ {'' if signature.startswith('void') else 'return {};'} }}\n{module}")
    folder, _, _ = adopt(tmp_path / "ext.cu", tmp_path / "op", None)
    spec = (folder / "spec.py").read_text()
    compile(spec, "spec.py", "exec")  # valid Python, whatever the signature's names
    return folder, spec


@pytest.mark.parametrize(("signature", "inputs", "outputs", "params", "roles"), FORWARDS)
def test_a_forwards_outputs_and_optional_tensors_are_told_from_its_inputs(
        tmp_path: Path, signature: str, inputs: tuple[str, ...], outputs: tuple[str, ...], params: dict[str, object],
        roles: str) -> None:
    folder, text = _adopted(tmp_path, signature)
    spec = load_op(str(folder)).spec
    assert (spec.inputs, spec.outputs, spec.params) == (inputs, outputs, params)
    name = signature.split("(")[0].split()[-1]
    module = spec.torch_module
    assert module is not None and module.functions == (name,) and callable(module.forward)
    assert f"m.{name}(" in text  # the function called by the name brrr binds it under
    reference = (folder / "reference.py").read_text()
    assert f"def forward({', '.join([*inputs, *params])}):" in reference

    # The adapter, called as brrr calls it, on a module recording what the C++ function is given.
    calls: list[tuple[object, ...]] = []

    def function(*args: object) -> object:
        calls.append(args)
        return None if signature.startswith("void") else "returned"

    given = tuple(torch.full((2, 3), float(k)) for k in range(len(inputs)))
    result = module.forward(type("Module", (), {name: staticmethod(function)}), *given, *params.values())
    (args,) = calls
    assert len(args) == len(roles)
    tensors, scalars = iter(given), iter(params.values())
    returned = []
    for role, arg in zip(roles, args):
        if role == "I":
            assert arg is next(tensors)
        elif role == "P":  # a copy, so the caller's tensor stays as it was made
            mine = next(tensors)
            assert isinstance(arg, torch.Tensor) and arg is not mine and torch.equal(arg, mine)
            returned.append(arg)
        elif role == "O":
            assert isinstance(arg, torch.Tensor) and arg.shape == given[0].shape and all(arg is not t for t in given)
            returned.append(arg)
        elif role == "N":
            assert arg is None
        elif role == "s":
            assert arg == next(scalars)
        else:
            assert role == "F" and arg in ([], "", None)
    if not signature.startswith("void"):
        assert result == "returned"
    elif len(returned) == 1:
        assert result is returned[0]
    else:
        assert isinstance(result, tuple) and all(r is a for r, a in zip(result, returned, strict=True))


def test_a_forward_taking_what_the_contract_does_not_pass_says_the_adapter_supplies_it(tmp_path: Path) -> None:
    _, text = _adopted(tmp_path, "torch::Tensor f(torch::Tensor x, c10::optional<at::Tensor> bias, at::IntArrayRef dims)")
    assert "# f also takes bias, dims, which the contract does not pass: forward_from_module below supplies each." in text
    assert "    bias = None  # TODO: optional (c10::optional<at::Tensor>)" in text and "    dims = []  # TODO" in text


def test_a_forward_returning_its_tensor_is_named_as_it_was(tmp_path: Path) -> None:
    folder, text = _adopted(tmp_path, "torch::Tensor gelu(torch::Tensor x, double approximate)")
    assert 'TorchModule(forward="gelu")' in text and "def forward_from_module" not in text
    assert "params={'approximate': 0.5}" in text and "inputs=('x',)" in text and 'outputs=("y",)' in text


def test_a_void_forward_bound_by_the_module_is_called_by_its_python_name(tmp_path: Path) -> None:
    folder, text = _adopted(tmp_path, "void rms_norm_impl(torch::Tensor& out, torch::Tensor& input, double eps)",
                            'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &rms_norm_impl); }\n')
    assert "m.forward(out, input, eps)" in text and "rms_norm_impl(" not in text.split("def forward_from_module")[1]
    assert load_op(str(folder)).spec.torch_module.function_names() == ("forward",)  # the module's own m.def binds it


def test_an_in_place_forward_says_so_and_which_tensors_it_copies(tmp_path: Path) -> None:
    _, text = _adopted(tmp_path, "void fused_add_rms_norm(torch::Tensor& input, torch::Tensor& residual, "
                                 "const torch::Tensor& weight, double epsilon)")
    said = " ".join(line[2:] for line in text.splitlines() if line.startswith("# "))
    assert "fused_add_rms_norm returns nothing and takes no tensor named like an output: it writes in place" in said
    assert "copies of input, residual and returns them" in said  # the const weight is read, not written
    assert "outputs=('input_out', 'residual_out')" in text


def test_a_host_function_right_below_a_kernel_is_no_kernel() -> None:
    """A one-line kernel just above (within the lines looked back over for `__global__`) is not this function's."""
    text = ("__global__ void k(float* y) {}\nvoid rms_norm(torch::Tensor& out, torch::Tensor& input) {}\n"
            "__global__\nvoid k2(float* y) {}\n")
    assert [f.name for f in tensor_functions(text)] == ["rms_norm"]
    assert [f.name for f in host_functions(text.replace("torch::Tensor&", "float*"))] == ["rms_norm"]
