#!/bin/bash
# The agreement again (ptx_alu_cases.cu's add.sat now .rn), then pytest -m gpu at this commit.
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 200 python3 benchmarks/tensor_core_agreement.py --out $OUT/agreement.md > $OUT/agreement_log.txt 2>&1
echo "== agreement: exit $?, $(( $(date +%s) - s )) s" | tee -a $OUT/agreement_log.txt
grep -A6 "ptx_alu_cases" $OUT/agreement.md
grep -c "| yes |" $OUT/agreement.md
s=$(date +%s)
timeout 380 python3 -m pytest -q -m gpu -p no:cacheprovider tests > $OUT/pytest_gpu.txt 2>&1
echo "== pytest -m gpu: exit $?, $(( $(date +%s) - s )) s" | tee -a $OUT/pytest_gpu.txt
tail -5 $OUT/pytest_gpu.txt
