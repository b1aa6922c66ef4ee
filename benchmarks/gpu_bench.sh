#!/usr/bin/env bash
# One call on a lent GPU machine: build times (benchmarks/build_times.py), then `brrr bench` on
# every op (float32, and bfloat16 where the op has it) with a profiler trace and Nsight Compute
# on the row ops. Logs go to $OUT. usage: bash benchmarks/gpu_bench.sh   (from the repo root)
source benchmarks/gpu_setup.sh
python3 benchmarks/build_times.py sigmoid 2>&1 | tee "$OUT/build_times.txt"
python3 -m brrr_kernels bench --dtype float32 --dtype bfloat16 --json "$OUT/bench.json" \
  --profile "$OUT/trace.json" 2>&1 | tee "$OUT/bench.txt"
python3 -m brrr_kernels bench softmax layernorm --no-numba --dtype float32 --ncu "$OUT/ncu" 2>&1 | tee "$OUT/ncu.txt"
