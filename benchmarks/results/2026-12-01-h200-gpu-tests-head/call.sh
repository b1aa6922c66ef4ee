#!/bin/bash
# The GPU tests at the session's last code commit.
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 520 python3 -m pytest -m gpu -q -p no:cacheprovider -x > $OUT/pytest_gpu.txt 2>&1
echo "== pytest -m gpu: exit $?, $(( $(date +%s) - s )) s" | tee -a $OUT/pytest_gpu.txt
tail -5 $OUT/pytest_gpu.txt
