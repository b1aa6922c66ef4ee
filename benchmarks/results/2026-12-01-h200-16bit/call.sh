#!/bin/bash
# The 16-bit matmul and attention kernels and the TorchModule build change on the H200: validate both ops
# (every stage), pytest -m gpu (the byok modules build through module_build), bench both in f32/f16/bf16.
set -uo pipefail
source benchmarks/gpu_setup.sh
echo "commit: $(cat .carry/head.txt)" | tee -a $OUT/env.txt
s=$(date +%s)
timeout 200 python3 -m brrr_kernels validate matmul attention --json $OUT/validate.json > $OUT/validate.txt 2>&1
echo "== validate: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/validate.txt
grep -E "FAIL|passed|failed" $OUT/validate.txt | cut -c1-200 | tail -20
s=$(date +%s)
timeout 150 python3 -m brrr_kernels bench matmul attention --dtype float32 --dtype float16 --dtype bfloat16 --json $OUT/bench.json > $OUT/bench.txt 2>&1
echo "== bench: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/bench.txt
grep -E " cuda |eager|brrr bench" $OUT/bench.txt | tail -30
s=$(date +%s)
timeout 240 python3 -m pytest -q -rs -m gpu -p no:cacheprovider --durations=5 tests/ > $OUT/pytest_gpu.txt 2>&1
echo "== pytest -m gpu: exit $?, $(( $(date +%s) - s )) s wall" | tee -a $OUT/pytest_gpu.txt
grep -E "passed|failed|FAILED|ERROR" $OUT/pytest_gpu.txt | tail -20
