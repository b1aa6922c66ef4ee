#!/bin/bash
# The two launches brrr's CPU execution now refuses, on the GPU: a tiny program (launch_limits.cu), and
# matmul_tc's planted missing opt-in through validate.
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt) + working tree" | tee -a $OUT/env.txt
nvcc -arch=sm_90a -o /tmp/ll .carry/launch_limits.cu && /tmp/ll | tee $OUT/launch_limits.txt
s=$(date +%s)
timeout 150 python3 -m pytest -q -rs -p no:cacheprovider tests/stages/test_matmul_tc.py -k opt_in > $OUT/pytest_opt_in.txt 2>&1
echo "== pytest opt_in: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/pytest_opt_in.txt
tail -3 $OUT/pytest_opt_in.txt
