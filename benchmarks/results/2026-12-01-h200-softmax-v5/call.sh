#!/bin/bash
# softmax v5 on the H200 (helper's call_softmax_v5.sh, one bench run), then v5's blocks an SM and stages
# swept by editing the device's copy of kernel.cu (bench builds each), then matmul_tc's float16-only
# planted bug on the GPU.
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 120 python3 -m brrr_kernels validate softmax --json "$OUT/validate.json" > "$OUT/validate.txt" 2>&1
echo "== validate: exit $?, $(( $(date +%s) - s )) s wall" | tee -a "$OUT/validate.txt"
grep -E "forward_v5|FAIL|passed|failed" "$OUT/validate.txt" | cut -c1-160 | tail -12
bench() {  # $1: label
  s=$(date +%s)
  timeout 70 python3 -m brrr_kernels bench softmax --dtype bfloat16 --pass forward --no-numba > "$OUT/bench_$1.txt" 2>&1
  echo "== bench $1: exit $?, $(( $(date +%s) - s )) s wall" | tee -a "$OUT/bench_$1.txt"
  grep -E " cuda|eager" "$OUT/bench_$1.txt" | tail -6
}
bench b2s2
cp stages/softmax/kernel.cu /tmp/kernel.cu.orig
sed -i 's/^constexpr int kV5BlocksPerSm = 2;/constexpr int kV5BlocksPerSm = 4;/' stages/softmax/kernel.cu && bench b4s2
sed -i 's/^constexpr int kV5Stages = 2; /constexpr int kV5Stages = 3; /' stages/softmax/kernel.cu && bench b4s3
cp /tmp/kernel.cu.orig stages/softmax/kernel.cu
s=$(date +%s)
timeout 100 python3 -m pytest -q -rs -p no:cacheprovider tests/stages/test_matmul_tc.py -k float16_only > $OUT/pytest_tc.txt 2>&1
echo "== pytest float16_only: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/pytest_tc.txt
tail -3 $OUT/pytest_tc.txt
