#!/bin/bash
# HEAD on the H200: every built-in op validated (every stage), then pytest -m gpu.
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 330 python3 -m brrr_kernels validate --json $OUT/validate.json > $OUT/validate.txt 2>&1
echo "== validate: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/validate.txt
grep -E "passed|failed|FAIL" $OUT/validate.txt | tail -15
s=$(date +%s)
timeout 240 python3 -m pytest -q -rs -m gpu -p no:cacheprovider --durations=10 tests/ > $OUT/pytest_gpu.txt 2>&1
echo "== pytest -m gpu: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/pytest_gpu.txt
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest_gpu.txt | tail -20
