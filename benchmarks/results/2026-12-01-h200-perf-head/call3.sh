#!/bin/bash
# HEAD on the H200: the backward alone by do_bench (benchmarks/bwd_indep.py), then every op's cuda stage
# validated on the GPU, one op at a time under its own limit.
set -uo pipefail
echo "commit: $(cat .carry/head.txt)"
PROBE=0 BENCH=0 INDEP_RUN=0 BWD_INDEP=1 BWD_INDEP_S=150 CUDA_ON_CPU=0 VALIDATE_S=60 PREBUILD_S=90 \
  bash benchmarks/gpu_perf.sh "sigmoid mul square softmax layernorm bias_gelu matmul matmul_tc attention"
grep -hE "passed|failed|FAIL|== " $OUT/validate.txt
