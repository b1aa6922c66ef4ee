#!/usr/bin/env bash
# One call on a lent GPU (from the repo root), for matmul_tc and matmul together: both standalone
# benchmarks (benchmarks/matmul_tc_variants/bench.cu, benchmarks/matmul_variants/bench.cu: each
# kernel.cu's versions beside cuBLAS, checked, then timed), `brrr validate OP --stage cuda` on the
# GPU for both ops, and `brrr bench matmul_tc matmul` in float32 and bfloat16. Logs under $OUT
# (at most 8 files come back); every step has a time limit so the call ends inside 240 s.
set -uo pipefail
OUT=${OUT:-/tmp/matmul-out}
mkdir -p "$OUT"
t0=$(date +%s)
say() { echo "== $1: $(( $(date +%s) - t0 )) s"; }
{
  date -u +"date: %Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | sed 's/^/gpu: /'
  python3 -c "import torch, numba; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'numba', numba.__version__)"
  nvcc --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
inc=/usr/local/cuda/targets/x86_64-linux/include
lib=/usr/local/cuda/targets/x86_64-linux/lib
[ -f "$inc/cublas_v2.h" ] || { inc=$(dirname "$(find / -name cublas_v2.h 2>/dev/null | head -1)"); lib=$(dirname "$(find / -name 'libcublas.so*' 2>/dev/null | head -1)"); }
flags=(-std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90 -Xptxas -v -I pipeline/include -I "$inc" -L "$lib" -lcublas -Xlinker "-rpath,$lib")
export PYTHONUNBUFFERED=1 BRRR_CACHE=/tmp/brrr-cache BRRR_TEST_CACHE=/tmp/brrr-cache
# Builds side by side: the two benchmarks, and (after the editable install) both ops' extensions.
nvcc "${flags[@]}" benchmarks/matmul_tc_variants/bench.cu -o /tmp/tc_bench >"$OUT/ptxas.txt" 2>&1 &
tc_build=$!
nvcc "${flags[@]}" benchmarks/matmul_variants/bench.cu -o /tmp/f32_bench >/tmp/f32_ptxas.txt 2>&1 &
f32_build=$!
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || echo "pip install -e . failed"
for op in matmul_tc matmul; do timeout 100 python3 -m brrr_kernels build "$op" >/tmp/build-$op.txt 2>&1 & done
wait
cat /tmp/f32_ptxas.txt >>"$OUT/ptxas.txt"
say builds
timeout 50 /tmp/tc_bench >"$OUT/tc_variants.txt" 2>&1; echo "exit $?" >>"$OUT/tc_variants.txt"
sed -n '/==== summary/,$p' "$OUT/tc_variants.txt"
cuobjdump -sass /tmp/tc_bench 2>/dev/null | python3 benchmarks/matmul_tc_variants/sass_mix.py /tmp/tc_sass.txt | tee -a "$OUT/tc_variants.txt"
say tc_bench
timeout 30 /tmp/f32_bench >"$OUT/f32_variants.txt" 2>&1; echo "exit $?" >>"$OUT/f32_variants.txt"
sed -n '/==== summary/,$p' "$OUT/f32_variants.txt"
say f32_bench
timeout 80 python3 -m brrr_kernels bench matmul_tc matmul --dtype float32 --dtype bfloat16 --json "$OUT/bench.json" \
  >"$OUT/bench.txt" 2>&1; echo "exit $?" >>"$OUT/bench.txt"
grep -E "matmul|exit|copy" "$OUT/bench.txt" | grep -v Warning
say bench
# Both validations at once (correctness only, nothing timed).
timeout 70 python3 -m brrr_kernels validate matmul_tc --stage cuda >/tmp/val-tc.txt 2>&1 &
timeout 70 python3 -m brrr_kernels validate matmul --stage cuda >/tmp/val-mm.txt 2>&1 &
wait
cat /tmp/val-tc.txt /tmp/val-mm.txt >"$OUT/validate.txt"
grep -E "^cuda |passed" "$OUT/validate.txt" | cut -c1-80
say validate
