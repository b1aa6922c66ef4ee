#!/bin/bash
# ld/st in inline PTX: the CPU execution against this GPU (tensor_core_agreement.py, which now builds
# ldst_cases.cu too), and the planted misaligned vector load on the GPU itself.
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 450 python3 benchmarks/tensor_core_agreement.py --out $OUT/agreement.md > $OUT/agreement_log.txt 2>&1
echo "== agreement: exit $?, $(( $(date +%s) - s )) s" | tee -a $OUT/agreement_log.txt
grep -A8 "ldst_cases\|async_copy_cases.cu case" $OUT/agreement.md
grep -c "| yes |" $OUT/agreement.md; grep "NO" $OUT/agreement.md
nvcc -std=c++20 -O2 -arch=sm_90 -Itests/cuda tests/cuda/ldst_cases.cu -o /tmp/ldst_gpu && {
  for c in misaligned_vector shared_past_end; do echo "== $c on the GPU:"; /tmp/ldst_gpu $c | cut -c1-200; done
} 2>&1 | tee $OUT/planted_on_gpu.txt
