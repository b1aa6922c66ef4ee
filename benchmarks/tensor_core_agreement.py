"""Tensor cores on the CPU execution against a GPU's, case by case (issue 28).

    python3 benchmarks/tensor_core_agreement.py [--out FILE]     # on a machine with a GPU and nvcc

tests/cuda/tensor_core_cases.cu is built twice: by nvcc for this GPU, and for the CPU execution as the
tests build it. Each case runs in both, and the table says, for each:
- products (mma.sync, wmma): how many elements are bit for bit the GPU's, the largest difference
  between the two, and that difference and each side's error against a float64 product of the
  rounded inputs, over the bound the README states (`tensor_core_bound(K)` times the sum of the
  magnitudes): at most 1 is agreement within the bound;
- layouts (ldmatrix, stmatrix, the wmma fragment mapping, packing): equal or not, as integers.

tests/cuda/async_copy_cases.cu (cp.async, the pipeline primitives, cuda::barrier, tensor and bulk
copies both ways), ldst_cases.cu (ld and st in PTX), ptx_alu_cases.cu and fp8_cases.cu (cuda_fp8.h's
conversions and PTX's fp8 cvt; not yet run on a GPU) are built the same two ways, and each of their
correct cases prints the same numbers in both, or the table says how many differ.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "cuda"))
from cpu_programs import build, run  # noqa: E402
from test_cpu_tensor_cores import PRODUCTS, excess, matrices  # noqa: E402

from brrr_kernels.op.tolerances import tensor_core_bound  # noqa: E402

CASES = ROOT / "tests" / "cuda" / "tensor_core_cases.cu"
# Other case programs whose correct cases must print the same numbers on both.
SAME = {
    ROOT / "tests" / "cuda" / "async_copy_cases.cu": (
        "ptx_double_buffer", "ptx_zero_fill", "primitives", "thread_pipeline", "block_barrier", "tensor_copies",
        "bulk_copies", "bulk_one_waits_then_syncthreads", "bulk_lanes_wait_then_syncwarp", "bulk_stores",
        "tensor_stores", "cvta_round_trip"),
    ROOT / "tests" / "cuda" / "ldst_cases.cu": ("vector_copy", "widening", "shared_and_ordered", "bits"),
    ROOT / "tests" / "cuda" / "ptx_alu_cases.cu": ("integers", "floats", "atomics", "guarded", "setp_pairs", "warps",
                                                   "named_barriers", "conversions", "int8_mma", "cache_hinted"),
    # approx16 is not bit for bit: an H200's ex2/tanh.approx on 16-bit types were 1 ulp below the exact
    # value brrr gives in 123 of 384 halves (benchmarks/results/2026-12-01-h200-ptx-alu)
    ROOT / "tests" / "cuda" / "fp8_cases.cu": ("encode", "decode", "classes", "ptx_pairs"),
}
EXTRA_PRODUCTS = {"mma_f16_acc": (16, 8, 16)}  # f16 accumulators: the bound gains half an f16 ulp
LAYOUTS = ("ldmatrix_x1", "ldmatrix_x2_trans", "ldmatrix_x4", "ldmatrix_x4_trans", "stmatrix_x1", "stmatrix_x2_trans",
           "stmatrix_x4", "stmatrix_x4_trans", "wmma_mapping_16x16x16",
           "wmma_mapping_32x8x16", "wmma_mapping_8x32x16", "pack_pairs",
           *(f"wmma_{ab}_mapping_{shape}" for shape in ("16x16x16", "32x8x16", "8x32x16") for ab in "ab"))


def gpu_program(cases: Path, folder: Path) -> Path:
    exe = folder / f"{cases.stem}_gpu"
    arch = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                          text=True, check=True).stdout.split()[0].replace(".", "")
    subprocess.run(["nvcc", "-std=c++20", "-O2", f"-arch=sm_{arch}", f"-I{cases.parent}", str(cases), "-o", str(exe),
                    "-lcuda"], check=True)
    return exe


def same_rows(cases: tuple[str, ...], cpu_exe: Path, gpu_exe: Path) -> tuple[list[str], list[str]]:
    """A row a case, whether both print the same numbers; both outputs of a case that differs."""
    rows, raw = [], []
    for case in cases:
        cpu, gpu = run(cpu_exe, case).split(), gpu_run(gpu_exe, case).split()
        differ = sum(a != b for a, b in zip(cpu, gpu)) + abs(len(cpu) - len(gpu))
        rows.append(f"| {case} | {'yes' if not differ else f'NO: {differ} values differ'} |")
        if differ:
            raw += [f"{case} GPU: {' '.join(gpu)}", f"{case} CPU: {' '.join(cpu)}"]
    return rows, raw


def gpu_run(exe: Path, case: str) -> str:
    return subprocess.run([str(exe), case], capture_output=True, text=True, check=True, timeout=60).stdout.strip()


def product_row(case: str, cpu: str, gpu: str) -> str:
    m, n, k = {**PRODUCTS, **EXTRA_PRODUCTS}[case]
    c, g = matrices(cpu, m, n, k), matrices(gpu, m, n, k)
    same_inputs = all(np.array_equal(c[x], g[x]) for x in ("A", "B", "C"))
    extra = 2.0**-11 if case in EXTRA_PRODUCTS else 0.0
    magnitude = np.abs(c["C"]) + np.abs(c["A"]) @ np.abs(c["B"])
    bound = tensor_core_bound(k) * magnitude + extra * np.abs(c["D"]) + 1e-30
    diff = np.abs(c["D"] - g["D"])
    bitwise = int(np.sum(c["D"] == g["D"]))
    return (f"| {case} | {m}x{n}x{k} | {'yes' if same_inputs else 'NO'} | {bitwise} of {c['D'].size} | "
            f"{diff.max():.3g} | {float(np.max(diff / bound)):.3f} | {excess(c, k, extra):.3f} | {excess(g, k, extra):.3f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="brrr-tc-") as tmp:
        folder = Path(tmp)
        gpu_exe, cpu_exe = gpu_program(CASES, folder), build(CASES, folder)
        lines = ["| case | M x N x K | same inputs | bit for bit | max abs diff | diff / bound | CPU error / bound "
                 "| GPU error / bound |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for case in sorted(PRODUCTS) + sorted(EXTRA_PRODUCTS):
            lines.append(product_row(case, run(cpu_exe, case), gpu_run(gpu_exe, case)))
        layouts, raw = same_rows(LAYOUTS, cpu_exe, gpu_exe)
        lines += ["", "| layout case | CPU execution equals the GPU |", "| --- | --- |", *layouts]
        for cases, names in SAME.items():
            (folder / cases.stem).mkdir()
            rows, differing = same_rows(names, build(cases, folder / cases.stem), gpu_program(cases, folder / cases.stem))
            lines += ["", f"| {cases.name} case | CPU execution equals the GPU |", "| --- | --- |", *rows]
            raw += differing
        lines += [""] + raw if raw else []
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
