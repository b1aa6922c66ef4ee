#!/usr/bin/env bash
# One call on a lent GPU machine at the end of a round: every built-in op validated with the GPU as the
# verdict (one op at a time), the seed examples, the tensor-core matmul timed against cuBLAS, and the
# GPU tests. Each part under its own time limit; logs to $OUT (at most 8 files come back).
# usage: bash benchmarks/gpu_final.sh   (from the repo root)
source benchmarks/gpu_setup.sh
part() {  # part NAME SECONDS CMD...: its output to $OUT/NAME.txt, with exit code and wall time
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
  echo "$name: exit $?, $(( $(date +%s) - t0 )) s wall" | tee -a "$OUT/$name.txt" >> "$OUT/summary.txt"
}
part validate 300 python3 -m brrr_kernels validate --jobs 1 --json "$OUT/validate.json"
part seeds 120 python3 -m brrr_kernels validate ./examples/seed_mul ./examples/seed_bias_gelu --jobs 1
part bench_matmul_tc 90 python3 -m brrr_kernels bench matmul_tc --dtype bfloat16 --no-numba
part pytest_gpu 120 python3 -m pytest -q -rs -m gpu -p no:cacheprovider tests/
grep -E "^== |^-- |FAIL" "$OUT/validate.txt" | head -60
cat "$OUT/summary.txt"
