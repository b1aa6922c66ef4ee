#!/bin/bash
# layernorm forward: weight and bias loaded at different points (WB_WHEN variants), two processes.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
T0=$(date +%s)
left() { local l=$(( 400 - ($(date +%s) - T0) )); [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }
step() { local name=$1 limit; limit=$(left "$2"); shift 2; local s; s=$(date +%s); local log=$OUT/$name.txt
  timeout "$limit" "$@" >> "$log" 2>&1; echo "== $name: exit $?, $(( $(date +%s) - s )) s wall (limit $limit s)" | tee -a "$log"; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; nvcc --version | tail -1; python3 -c "import torch; print(torch.__version__, torch.version.cuda)"; } > $OUT/env.txt 2>&1
cat $OUT/env.txt
step build 120 nvcc -std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90 -Xptxas -v -I pipeline/include benchmarks/rowwise_variants/layernorm_bench.cu -o /tmp/ln_bench
step wb1 90 env WB_WHEN=1 /tmp/ln_bench
step wb2 90 env WB_WHEN=1 /tmp/ln_bench
grep -E "fwd|copy|%" $OUT/wb1.txt $OUT/wb2.txt | grep -v "^.*Compiling" | tail -40
