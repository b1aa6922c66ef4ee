#!/bin/bash
# pytest -m gpu at the session's kernels (matmul_tc in float16; softmax v5 reverted).
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 420 python3 -m pytest -q -rs -m gpu -p no:cacheprovider --durations=8 tests/ > $OUT/pytest_gpu.txt 2>&1
echo "== pytest -m gpu: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/pytest_gpu.txt
grep -E "passed|failed|FAILED|ERROR|SKIP" $OUT/pytest_gpu.txt | tail -25
