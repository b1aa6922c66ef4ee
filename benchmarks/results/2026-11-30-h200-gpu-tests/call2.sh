#!/bin/bash
# The bias_gelu GPU test fixed in 1bb6d3a, then every planted cuda-stage bug validated on the GPU.
set -uo pipefail
source benchmarks/gpu_setup.sh
s=$(date +%s)
timeout 90 python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/stages/test_bias_gelu.py > $OUT/pytest_bias_gelu.txt 2>&1
echo "== pytest bias_gelu -m gpu: exit $?, $(( $(date +%s) - s )) s" | tee -a $OUT/pytest_bias_gelu.txt
tail -3 $OUT/pytest_bias_gelu.txt
BUDGET_S=$(( 560 - ($(date +%s) - s) )) PART=bugs GPU_JOBS=4 bash benchmarks/gpu_blindspots.sh 2>&1 | tail -60
