"""A header brrr's CPU build lacks is said in the user's terms, in both layouts: which include line
pulls it in, and what brrr provides instead (cpu_includes.explain, builder.compiler_errors)."""

from __future__ import annotations

from pathlib import Path

from brrr_kernels.cuda import builder, cpu_includes

# What g++ prints when a torch header the wrapper includes pulls in a CUDA library header.
TRANSITIVE = """\
In file included from /torch/include/ATen/cuda/CUDAContext.h:3,
                 from ext/muladd.cu:7:
/torch/include/ATen/cuda/CUDAContextLight.h:10:10: fatal error: cusparse.h: No such file or directory
   10 | #include <cusparse.h>
      |          ^~~~~~~~~~~~
compilation terminated.
"""


def test_a_header_reached_through_another_names_the_users_include_line_and_what_brrr_provides() -> None:
    errors = builder.compiler_errors(TRANSITIVE, Path("ext/muladd.cu"))
    assert "from ext/muladd.cu:7:" in errors  # the chain of includes is kept
    said = cpu_includes.explain(errors, cpu_includes.Includes((), {}))
    assert "brrr's CPU build does not provide <cusparse.h>" in said
    assert "cuda_runtime.h" in said and "cooperative_groups.h" in said  # what brrr provides


def test_brrrs_stand_ins_for_torchs_cuda_headers_are_provided() -> None:
    provided = cpu_includes.provided()
    for header in ("ATen/cuda/CUDAContext.h", "c10/cuda/CUDAStream.h", "c10/cuda/CUDAGuard.h"):
        assert header in provided


def test_a_used_header_brrr_stood_in_for_names_its_include_line_in_brrrs_layout(tmp_path: Path) -> None:
    folder = tmp_path / "op"
    folder.mkdir()
    (folder / "kernel.cu").write_text('#include "brrr_kernel.cuh"\n#include <cusolverDn.h>\n__global__ void k() {}\n')
    includes = cpu_includes.prepare(folder, [folder / "kernel.cu"], "op", [builder.INCLUDE_DIR])
    assert list(includes.stubbed) == ["cusolverDn.h"]  # brrr_kernel.cuh is brrr's, found
    assert includes.stubbed["cusolverDn.h"].endswith("kernel.cu:2")
    said = cpu_includes.explain("kernel.cu:5: error: 'cusolverDnCreate' was not declared in this scope", includes)
    assert "<cusolverDn.h>" in said and "kernel.cu:2" in said and "brrr provides:" in said


def test_cublas_is_a_partial_stand_in_and_a_routine_it_lacks_is_named() -> None:
    # llm.c's common.h declares cuBLAS handles and sets them up: those build; a GEMM call does not.
    assert "cublas_v2.h" in cpu_includes.provided() and "cublasLt.h" in cpu_includes.provided()
    said = cpu_includes.explain("matmul.cu:40:5: error: ‘cublasSgemm’ was not declared in this scope",
                                cpu_includes.Includes((), {}))
    assert "brrr's CPU stand-in for <cublas_v2.h> declares its handles, types and setup calls only: cublasSgemm" in said


HIP_GUARDED = """\
#include "brrr_kernel.cuh"
#ifndef USE_ROCM
  #include <cusolverDn.h>
#else
  #include <hipcub/hipcub.hpp>
#endif
#if defined(__HIP_PLATFORM_AMD__) && defined(FAST)
#include <hip/hip_bf16.h>
#elif defined(OTHER)
#include <other_lib.h>
#endif
#if defined(USE_ROCM) || defined(ALSO)
#include <either.h>
#endif
__global__ void k() {}
"""


def test_a_header_only_a_hip_build_includes_is_never_named_as_what_left_a_name_undeclared(tmp_path: Path) -> None:
    """causal-conv1d's way: hipcub under #else of #ifndef USE_ROCM. A CUDA build never reads those lines."""
    folder = tmp_path / "op"
    folder.mkdir()
    (folder / "kernel.cu").write_text(HIP_GUARDED)
    includes = cpu_includes.prepare(folder, [folder / "kernel.cu"], "op", [builder.INCLUDE_DIR])
    assert set(includes.stubbed) == {"cusolverDn.h", "hipcub/hipcub.hpp", "hip/hip_bf16.h", "other_lib.h", "either.h"}
    assert includes.hip_only == {"hipcub/hipcub.hpp", "hip/hip_bf16.h"}
    said = cpu_includes.explain("kernel.cu:9:5: error: 'cusolverDnHandle_t' does not name a type", includes)
    assert "<cusolverDn.h> (" in said and "<other_lib.h> (" in said and "<either.h> (" in said
    assert "hipcub" not in said and "hip_bf16" not in said
