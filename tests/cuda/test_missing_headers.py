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
