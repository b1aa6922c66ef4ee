#!/bin/bash
# Build both variant benchmarks with plain nvcc (seconds) and run them; everything printed, and the
# table copied to $OUT/variants.txt when OUT is set (ptxas reports beside the binaries, in /tmp).
# QUICK=1 leaves out the forward versions already measured. Run from the repository root.
set -o pipefail
out=${OUT:-/tmp/rowwise_out}
mkdir -p "$out" /tmp/rowwise_build
flags=(-std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90 -Xptxas -v -I pipeline/include)
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    nvcc --version | tail -1
    for b in layernorm bias_gelu; do
        nvcc "${flags[@]}" "benchmarks/rowwise_variants/${b}_bench.cu" -o "/tmp/rowwise_build/$b" \
            > "/tmp/rowwise_build/${b}_ptxas.txt" 2>&1 || { cat "/tmp/rowwise_build/${b}_ptxas.txt"; exit 1; }
    done
    for b in layernorm bias_gelu; do /tmp/rowwise_build/$b || exit 1; done
} 2>&1 | tee "$out/variants.txt"
