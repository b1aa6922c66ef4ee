#!/bin/bash
# The agreement of every case file (calls three to five of README.md ran these lines at their commits).
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 200 python3 benchmarks/tensor_core_agreement.py --out $OUT/agreement.md > $OUT/agreement_log.txt 2>&1
echo "== agreement: exit $?, $(( $(date +%s) - s )) s" | tee -a $OUT/agreement_log.txt
grep -A9 "ptx_alu_cases" $OUT/agreement.md
grep -c "| yes |" $OUT/agreement.md
