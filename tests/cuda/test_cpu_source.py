"""cpu_source: kernel.cu rewritten for the CPU keeps its lines, and what it cannot rewrite is named."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import STAGES

from brrr_kernels.cuda import builder, cpu_build
from brrr_kernels.cuda.cpu_source import CpuSourceError, masked, rewrite

OPS = ("sigmoid", "mul", "square", "bias_gelu", "softmax", "layernorm", "matmul")
KERNEL = Path("/ops/demo/kernel.cu")
ASM = re.compile(r"\b(asm|__asm__)\b\s*(volatile\b|__volatile__\b)?\s*\(")  # an asm statement starts here


def body(text: str, shims_off: bool = True) -> list[str]:
    """The rewritten kernel.cu's own lines (after the runtime's includes and the #line directive), less
    the deduction shims after template kernels (shims_off; tests/cuda/test_cpu_runtime_launch.py runs them)."""
    out = rewrite(text, KERNEL)
    prelude, rest = out.split(f'#line 1 "{KERNEL}"\n', 1)
    includes = prelude.splitlines()
    assert includes == ['#include "brrr_cpu_prelude.h"']
    return [SHIM.sub("", line) for line in rest.split("\n")] if shims_off else rest.split("\n")


# What cpu_deduce.py adds after a template kernel, on the line its declaration ends.
SHIM = re.compile(r" template <.*> auto __brrr_deduce_\w+\(.*\) -> ::std::integral_constant<.*>;$")
# What cpu_source.py adds as a kernel's first statement, on the line its body opens.
FIRST_STATEMENT = re.compile(r"( ::brrr_cpu::(launch_bounds|cluster_dims)_declared\(.*?, __FILE__, __LINE__\);)+$")


@pytest.mark.parametrize("op", OPS)
def test_every_builtin_kernel_keeps_its_line_numbers(op: str) -> None:
    text = (STAGES / op / "kernel.cu").read_text()
    lines = body(text)
    assert len(lines) == len(text.split("\n")) and len(body(text, shims_off=False)) == len(lines)
    original = text.split("\n")
    for i, (old, new) in enumerate(zip(original, lines)):
        new = FIRST_STATEMENT.sub("", new) if old.rstrip().endswith("{") else new
        if "<<<" not in old and ">>>" not in old and "__shared__" not in old and not ASM.search(old) and old != new:
            # Only the line a construct starts on changes; the lines it spanned are left empty.
            assert new == "" and "<<<" not in "".join(original[max(0, i - 3):i + 1]) or new == old, (i + 1, old, new)
    assert "<<<" not in "\n".join(lines) and "__shared__" not in "\n".join(lines)


def test_a_launch_becomes_a_runtime_call_on_the_same_line() -> None:
    lines = body("void f(float* y, int n, cudaStream_t s) {\n"
                 "    k<float, 4><<<dim3(n, 2), 256, 0,\n       s>>>(y,\n n);\n}\n")
    assert lines[1].strip().startswith("::brrr_cpu::launch(::brrr_cpu::LaunchConfig(dim3(n, 2), 256, 0,")
    assert '::brrr_cpu::Site{__FILE__, 2, "k<float, 4>", "y, n"}, k<float, 4>, y,' in lines[1] + lines[2]
    assert lines[3] == " n);" and lines[4] == "}"


def test_shared_declarations_become_per_block_storage() -> None:
    lines = body("__global__ void k() {\n"
                 "    __shared__ __align__(16) float tile[8][132];  // a comment, [with] brackets\n"
                 "    extern __shared__ double dyn[];\n"
                 "    __shared__ int a, b[4];\n}\n")
    assert "using brrr_shared_t1 = float [8][132];" in lines[1]
    assert "shared_at<brrr_shared_t1>(&brrr_shared_site1, 16, \"tile\"" in lines[1]
    # a reference to an array of unknown bound, as CUDA's: reinterpret_cast<T&>(dyn) names the memory
    assert "brrr_shared_t2 (&dyn)[] = *reinterpret_cast<brrr_shared_t2 (*)[]>(::brrr_cpu::dynamic_shared<" in lines[2]
    assert '"a"' in lines[3] and '"b"' in lines[3] and "int [4]" in lines[3]


def test_known_ptx_becomes_cpp() -> None:
    lines = body('float f(float d) {\n    float r;\n    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));\n'
                 '    asm volatile("" ::: "memory");\n    return r;\n}\n')
    assert lines[2].strip().endswith(" ::brrr_cpu::ptx::put(r, ::brrr_cpu::ptx::rcp_approx_ftz_f32((d))); }")
    assert lines[2].count("static_assert(::brrr_cpu::ptx::operand_fits<'f', decltype(") == 2  # r and d: floats, as nvcc wants
    assert lines[3].strip() == ";"


@pytest.mark.parametrize("macro", [
    '#define COMMIT() asm volatile("cp.async.commit_group;\\n" ::)\n',
    '#define COMMIT()   \\\n    asm volatile("cp.async.commit_group;\\n" \\\n                 ::)  \n',
])
def test_an_asm_that_ends_a_macro_is_a_statement_its_use_ends(macro: str) -> None:
    """LeetCUDA's and many kernels' PTX wrappers: `#define CP_ASYNC_COMMIT_GROUP() asm volatile(...)`, the
    `;` written where the macro is used."""
    source = macro + "__global__ void k() { COMMIT(); }\n"
    lines = body(source)
    assert len(lines) == len(source.split("\n"))
    joined = " ".join(lines[:macro.count("\n")]).replace("\\", " ")
    assert "do { ::brrr_cpu::ptx::cp_async_commit_group(__FILE__, __LINE__); } while (0)" in joined
    assert lines[macro.count("\n")] == "__global__ void k() { COMMIT(); }"


@pytest.mark.parametrize("source", [
    'void f() {\n  int r = (asm volatile("cp.async.commit_group;" ::), 0);\n}\n',  # not a statement
    '#define W(x) (asm volatile("cp.async.commit_group;" ::), x)\n',              # nor inside a macro
])
def test_an_asm_expression_elsewhere_is_still_refused(source: str) -> None:
    with pytest.raises(CpuSourceError, match="not a statement of its own"):
        rewrite(source, KERNEL)


BULK_REDUCE = ('#define BULK_ADD(dst, src) asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 '
               '[%0], [%1], 16;" :: "l"(dst), "r"(src))\n__device__ void f(float* d) { }\n')


@pytest.mark.parametrize("used", [False, True])
def test_ptx_brrr_cannot_run_in_a_macro_is_an_error_only_where_the_macro_is_used(tmp_path: Path, used: bool) -> None:
    """A header of PTX wrappers defines more than a kernel calls: an unused one must not stop the build."""
    source = BULK_REDUCE + ("__device__ void g(float* d) {\n  BULK_ADD(d, 0u);\n}\n" if used else "")
    errors = syntax_errors(source, tmp_path)
    if not used:
        assert errors == ""
    else:
        assert "kernel.cu:4:" in errors  # the use
        assert "kernel.cu:1: not supported on the CPU: inline PTX 'cp.reduce.async.bulk" in errors  # the macro


def test_an_asm_template_may_paste_a_string_macro() -> None:
    lines = body('#define TY "bf16"\nvoid f(unsigned& d) {\n'
                 '  asm("cvt.rn." TY "x2.f32 %0, %1, %2;" : "=r"(d) : "f"(1.f), "f"(2.f));\n}\n')
    assert " ::brrr_cpu::ptx::set_reg(d, ::brrr_cpu::ptx::cvt_rn_bf16x2_f32((1.f), (2.f))); }" in lines[2]


def test_an_asm_template_pasting_an_unknown_name_is_refused_naming_it() -> None:
    source = 'void f(unsigned& d) {\n  asm("cvt.rn." TY /* a type */ "x2.f32 %0, %1, %2;" : "=r"(d) : "f"(1.f), "f"(2.f));\n}\n'
    with pytest.raises(CpuSourceError) as e:
        rewrite(source, KERNEL)
    assert "kernel.cu:2:" in str(e.value) and "pastes TY" in str(e.value)


@pytest.mark.parametrize("spelling", ["ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                                      "ldmatrix.sync.aligned.x4.trans.m8n8.shared.b16"])
def test_ldmatrix_qualifiers_may_come_in_any_order(spelling: str) -> None:
    lines = body(f'void f(unsigned* r, unsigned a) {{\n  asm("{spelling} {{%0, %1, %2, %3}}, [%4];"'
                 ' : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));\n}\n')
    assert "::brrr_cpu::ptx::ldmatrix<4, true>(brrr_d, " in lines[1]


# What nvcc 13.0 said of `asm volatile("" :: "C"(v))` with v of each type (tried on this machine):
# "asm operand type size(N) does not match type/size implied by constraint" or "must have scalar type".
OPERANDS_NVCC_TAKES = [("unsigned", "r"), ("int", "r"), ("unsigned short", "h"), ("long", "l"), ("size_t", "l"),
                       ("int*", "l"), ("const float* __restrict__", "l"), ("float", "f"), ("double", "d")]
OPERANDS_NVCC_REFUSES = [("long long", "r"), ("int", "l"), ("short", "r"), ("bool", "r"), ("float", "r"),
                         ("double", "f"), ("float", "d"), ("int", "h"), ("char", "h"), ("double", "l"), ("__half", "h")]


def syntax_errors(source: str, tmp_path: Path) -> str:
    """g++'s errors for the rewritten `source` (empty when it compiles)."""
    (tmp_path / "k.cpp").write_text(rewrite(source, KERNEL))
    done = subprocess.run([builder.find_cxx(), "-std=c++20", "-fsyntax-only", f"-I{cpu_build.CPU_INCLUDE}",
                           str(tmp_path / "k.cpp")], capture_output=True, text=True)
    return done.stderr if done.returncode else ""


def operand_cases(pairs: list[tuple[str, str]]) -> str:
    return "#include <cuda_fp16.h>\n" + "".join(
        f'__device__ void f{i}() {{ {t} v{{}}; asm volatile("cp.async.commit_group;" :: "{c}"(v)); }}\n'
        for i, (t, c) in enumerate(pairs))


def test_asm_operands_nvcc_takes_build_on_the_cpu(tmp_path: Path) -> None:
    assert syntax_errors(operand_cases(OPERANDS_NVCC_TAKES), tmp_path) == ""


def test_asm_operands_nvcc_refuses_are_refused_on_the_cpu_at_their_line(tmp_path: Path) -> None:
    errors = syntax_errors(operand_cases(OPERANDS_NVCC_REFUSES), tmp_path)
    for line, (_, c) in enumerate(OPERANDS_NVCC_REFUSES, start=2):
        assert f'kernel.cu:{line}: the asm operand "{c}"(v) is not ' in errors, (line, errors[-2000:])


@pytest.mark.parametrize("declaration", [
    "__global__ void __cluster_dims__(2, 1, 1) k(float* y) {",
    "__global__ void __launch_bounds__(64) __cluster_dims__(4) k(float* y) {",
    "template <int N>\n__global__ void __cluster_dims__(N, 2) k(float* y) {",
])
def test_cluster_dims_become_the_kernels_first_statement(declaration: str) -> None:
    lines = body(declaration + "\n    y[0] = 1;\n}\n")
    dims = declaration.split("__cluster_dims__(")[1].split(")")[0]
    first = len(declaration.split("\n")) - 1
    assert "__cluster_dims__" not in "\n".join(lines) and lines[first + 1:] == ["    y[0] = 1;", "}", ""]
    assert f"{{ ::brrr_cpu::cluster_dims_declared(dim3({dims}), __FILE__, __LINE__);" in lines[first]


@pytest.mark.parametrize("declaration, bound", [
    ("__global__ void __launch_bounds__(64) k(float* y) {", "64"),
    ("__global__ void __launch_bounds__(64) __cluster_dims__(4) k(float* y) {", "64"),
    ("template <class T>\n__global__ void __launch_bounds__(T::threads, T::min_blocks)\nk(float* y) {", "T::threads"),
])
def test_launch_bounds_become_a_check_of_the_block_first_in_the_kernel(declaration: str, bound: str) -> None:
    lines = body(declaration + "\n    y[0] = 1;\n}\n")
    first = len(declaration.split("\n")) - 1
    assert lines[first + 1:] == ["    y[0] = 1;", "}", ""]
    assert (f"::brrr_cpu::launch_bounds_declared(static_cast<unsigned long long>({bound}), __FILE__, __LINE__);"
            in lines[first]), lines[first]


def test_launch_bounds_on_a_prototype_or_in_a_macro_add_nothing() -> None:
    text = "#define LB __launch_bounds__(64)\n__global__ void __launch_bounds__(64) k(float* y);\n"
    assert "launch_bounds_declared" not in "\n".join(body(text))


@pytest.mark.parametrize("source, named", [
    ("__global__ void __cluster_dims__() k() {}\n", "one to three dimensions"),
    ("__cluster_dims__(2) int x;\n", "not on a kernel's declaration"),
    ('void f(unsigned a) {\n  unsigned r;\n  asm("mapa.shared::cluster.u32 %0, %1, 1;" : "=r"(r) : "r"(a));\n}\n',
     ".shared::cluster address (mapa.shared::cluster, ld/st.shared::cluster) is not emulated"),
    ('void f() {\n  int r;\n  asm("vote.sync.all.pred %0, %1;" : "=r"(r) : "r"(1));\n}\n',
     'inline PTX "vote.sync.all.pred %0, %1"'),
    ("__shared__ float g[32];\n", "outside a function body"),
    ("namespace n {\n__shared__ float g[32];\n}\n", "outside a function body"),
    ("void f() {\n\n  __shared__ float s = 0;\n}\n", "initializer"),
    ("void f(void (*p)()) {\n  (p)<<<1, 1>>>();\n}\n", "kernel is not a name"),
])
def test_what_cannot_be_rewritten_is_an_error_naming_the_line(source: str, named: str) -> None:
    with pytest.raises(CpuSourceError) as e:
        rewrite(source, KERNEL)
    line = next(i + 1 for i, text in enumerate(source.split("\n"))
                if any(w in text for w in ("asm", "__shared__", "<<<", "__cluster_dims__")))
    assert f"kernel.cu:{line}: not supported on the CPU" in str(e.value) and named in str(e.value)
    # After a prelude that ends in `#line 1` (a .cu with its own torch wrapper gets torch first on the
    # CPU), the same line is named, not the line of the text as compiled.
    with pytest.raises(CpuSourceError) as e:
        rewrite(f'#include <torch/extension.h>\n#define is_cuda() is_cpu()\n#line 1 "kernel.cu"\n{source}', KERNEL)
    assert f"kernel.cu:{line}: not supported on the CPU" in str(e.value)


def test_comments_and_strings_are_not_rewritten() -> None:
    text = 'void f() {\n  // k<<<1, 1>>>(); __shared__ x;\n  const char* s = "__shared__ <<<";\n}\n'
    assert masked(text).count("__shared__") == 0
    assert body(text)[:4] == text.split("\n")[:4]


def test_an_extern_shared_struct_is_a_reference_to_the_dynamic_shared_memory() -> None:
    """`extern __shared__ Tiles s;` (a struct of tiles over the dynamic shared memory, as Hopper GEMMs
    declare it) is a reference to the block's dynamic window; a fixed-size extern array is an error."""
    text = rewrite("struct Tiles { float a[8]; };\n__global__ void k() {\n    extern __shared__ Tiles s;\n}\n", Path("k.cu"))
    line = text.splitlines()[4]
    assert "using brrr_shared_t1 = Tiles; brrr_shared_t1& s = *::brrr_cpu::dynamic_shared<brrr_shared_t1>" in line, line
    with pytest.raises(CpuSourceError) as e:
        rewrite("__global__ void k() {\n    extern __shared__ float s[8];\n}\n", Path("k.cu"))
    assert "k.cu:2" in str(e.value) and "extern __shared__ array of a fixed size" in str(e.value)


def test_a_template_kernel_gets_a_deduction_shim_on_the_line_it_ends_and_its_bare_launch_uses_it() -> None:
    text = ("template <typename F, int N = 2>\n__global__ void __launch_bounds__(64) k(const F* x,\n F* y) {\n"
            "  y[0] = x[0];\n}\nvoid run(float* x, float* y) { k<<<1, 1>>>(x, y); k<float><<<1, 1>>>(x, y); }\n")
    lines = body(text, shims_off=False)
    assert len(lines) == len(text.split("\n"))
    assert lines[4] == ("} template <typename F, int N = 2> auto __brrr_deduce_k(const F* x, F* y) -> "
                        "::std::integral_constant<decltype(&k<F, N>), &k<F, N>>;")
    assert "decltype(__brrr_deduce_k(x, y))::value, x, y)" in lines[5]
    # explicit template arguments: through the same declaration, so any not given are deduced
    assert '"k<float>", "x, y"}, decltype(__brrr_deduce_k<float>(x, y))::value, x, y)' in lines[5]


def test_a_template_kernel_of_an_op_header_is_deduced_where_the_cu_launches_it(tmp_path: Path) -> None:
    header = tmp_path / "kernels.cuh"
    header.write_text("template <typename F>\n__global__ void scale(F* y, const F* x) { y[0] = 2 * x[0]; }\n")
    launch = '#include "kernels.cuh"\nvoid run(float* y, const float* x) { scale<<<1, 1>>>(y, x); }\n'
    lines = rewrite(launch, KERNEL, [header]).split("\n")
    assert any("decltype(__brrr_deduce_scale(y, x))::value, y, x)" in line for line in lines)
    assert "__brrr_deduce_scale(F* y, const F* x)" in rewrite(header.read_text(), header)  # declared there
