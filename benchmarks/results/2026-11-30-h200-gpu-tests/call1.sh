#!/bin/bash
# pytest -m gpu on the H200 at HEAD (last full run: 2026-11-23 on an H100).
set -uo pipefail
source benchmarks/gpu_setup.sh
s=$(date +%s)
timeout 520 python3 -m pytest -q -rs -m gpu -p no:cacheprovider --durations=25 tests/ > $OUT/pytest_gpu.txt 2>&1
echo "== pytest -m gpu: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/pytest_gpu.txt
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest_gpu.txt | tail -30
