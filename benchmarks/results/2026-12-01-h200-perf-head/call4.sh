#!/bin/bash
# HEAD on the H200: the three ops whose cuda stage took past call 3's 60 s limit, 150 s each.
set -uo pipefail
echo "commit: $(cat .carry/head.txt)"
PROBE=0 BENCH=0 INDEP_RUN=0 CUDA_ON_CPU=0 VALIDATE_S=150 PREBUILD_S=60 \
  bash benchmarks/gpu_perf.sh "bias_gelu matmul_tc attention" > /dev/null 2>&1
grep -hE "passed|failed|FAIL|== " $OUT/validate.txt
