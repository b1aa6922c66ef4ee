#!/bin/bash
# stmatrix (LeetCUDA's macros and qualifier order), cp.async.bulk's stores and the async-copy cases: the
# CPU execution against this GPU, case by case (benchmarks/tensor_core_agreement.py).
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 450 python3 benchmarks/tensor_core_agreement.py --out $OUT/agreement.md > $OUT/agreement_log.txt 2>&1
echo "== agreement: exit $?, $(( $(date +%s) - s )) s" | tee -a $OUT/agreement_log.txt
tail -60 $OUT/agreement_log.txt
