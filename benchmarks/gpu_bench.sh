#!/usr/bin/env bash
# One call on a lent GPU machine: build times (benchmarks/build_times.py), then `brrr bench` on
# every op (float32, and bfloat16 where the op has it) with a profiler trace and Nsight Compute
# on the row ops. Logs go to $OUT. usage: bash benchmarks/gpu_bench.sh   (from the repo root)
set -uo pipefail
OUT=${OUT:-/tmp/brrr-out}
mkdir -p "$OUT"
# brrr_kernels is pipeline/ and stages/ mapped by setuptools: an editable install, offline.
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || { echo "pip install -e . failed"; exit 2; }
export PYTHONUNBUFFERED=1 BRRR_CACHE=${BRRR_CACHE:-/tmp/brrr-cache}
{
  date -u +"date: %Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | sed 's/^/gpu: /'
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  nvcc --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
python3 benchmarks/build_times.py sigmoid 2>&1 | tee "$OUT/build_times.txt"
python3 -m brrr_kernels bench --dtype float32 --dtype bfloat16 --json "$OUT/bench.json" \
  --profile "$OUT/trace.json" 2>&1 | tee "$OUT/bench.txt"
python3 -m brrr_kernels bench softmax layernorm --no-numba --dtype float32 --ncu "$OUT/ncu" 2>&1 | tee "$OUT/ncu.txt"
