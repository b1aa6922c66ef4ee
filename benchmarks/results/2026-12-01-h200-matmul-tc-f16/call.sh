#!/bin/bash
# matmul_tc in float16 and bfloat16 on the H200: validate (every stage), its pytest file on the GPU,
# brrr bench in both dtypes, tc_indep (do_bench against cuBLAS) in both.
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 200 python3 -m brrr_kernels validate matmul_tc --json $OUT/validate.json > $OUT/validate.txt 2>&1
echo "== validate: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/validate.txt
grep -E "FAIL|passed|failed" $OUT/validate.txt | cut -c1-200 | tail -20
s=$(date +%s)
timeout 100 python3 -m brrr_kernels bench matmul_tc --dtype float16 --dtype bfloat16 --json $OUT/bench.json > $OUT/bench.txt 2>&1
echo "== bench: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/bench.txt
grep -E " cuda |eager|brrr bench" $OUT/bench.txt | tail -30
s=$(date +%s)
timeout 120 python3 benchmarks/tc_indep.py --dtype float16 --dtype bfloat16 --out $OUT/tc_indep.json > $OUT/tc_indep.txt 2>&1
echo "== tc_indep: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/tc_indep.txt
cat $OUT/tc_indep.txt
s=$(date +%s)
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/stages/test_matmul_tc.py > $OUT/pytest_tc.txt 2>&1
echo "== pytest test_matmul_tc: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/pytest_tc.txt
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest_tc.txt | tail -20
