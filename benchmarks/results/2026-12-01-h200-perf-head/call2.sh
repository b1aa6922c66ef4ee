#!/bin/bash
# HEAD on the H200: brrr bench over every op, f32 and bf16, forward, backward alone and forward+backward,
# then the independent timing (../shared/tools/gpu_indep.py, copied unchanged into .carry).
set -uo pipefail
echo "commit: $(cat .carry/head.txt)"
PROBE=0 BENCH_S=400 BENCH_ARGS="--pass forward --pass backward --pass forward+backward" INDEP_S=120 INDEP=.carry/gpu_indep.py bash benchmarks/gpu_perf.sh
