#!/bin/bash
# HEAD on the H200 at the session's end: every built-in op validated, then pytest -m gpu.
set -uo pipefail
source benchmarks/gpu_setup.sh
git log --oneline -1 2>/dev/null | tee -a $OUT/env.txt
s=$(date +%s)
timeout 300 python3 -m brrr_kernels validate --json $OUT/validate.json > $OUT/validate.txt 2>&1
echo "== validate: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/validate.txt
grep -E "passed|failed|FAIL" $OUT/validate.txt | tail -15
s=$(date +%s)
timeout 200 python3 -m pytest -q -rs -m gpu -p no:cacheprovider --durations=10 tests/ > $OUT/pytest_gpu.txt 2>&1
echo "== pytest -m gpu: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/pytest_gpu.txt
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest_gpu.txt | tail -20
