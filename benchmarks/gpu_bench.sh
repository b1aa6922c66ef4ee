#!/usr/bin/env bash
# One call on a lent GPU machine: build times (benchmarks/build_times.py), then `brrr bench` on
# every op (float32, and bfloat16 where the op has it) with a profiler trace and Nsight Compute
# on the row ops. Logs go to $OUT. usage: bash benchmarks/gpu_bench.sh   (from the repo root)
set -uo pipefail
OUT=${OUT:-/tmp/brrr-out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 BRRR_CACHE=${BRRR_CACHE:-/tmp/brrr-cache}
{
  date -u +"date: %Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | sed 's/^/gpu: /'
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  nvcc --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
python3 benchmarks/build_times.py sigmoid 2>&1 | tee "$OUT/build_times.txt"
python3 -m pipeline bench --dtype float32 --dtype bfloat16 --json "$OUT/bench.json" \
  --profile "$OUT/trace.json" 2>&1 | tee "$OUT/bench.txt"
python3 -m pipeline bench softmax layernorm --no-numba --dtype float32 --ncu "$OUT/ncu" 2>&1 | tee "$OUT/ncu.txt"
