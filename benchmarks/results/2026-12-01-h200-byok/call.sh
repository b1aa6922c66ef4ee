#!/bin/bash
# GPU: author modules built with torch's nvcc macros (the examples and tests/cuda/byok_ops), and a
# load_inline script adopted as written (GPU MODE lecture style, .carry/lecture.py, not committed).
set -uo pipefail
source benchmarks/gpu_setup.sh
git log --oneline -1 2>/dev/null | tee -a $OUT/env.txt
for op in examples/seed_mul examples/seed_bias_gelu examples/cross_entropy examples/rmsnorm_shuffle examples/rowscan \
          tests/cuda/byok_ops/xent tests/cuda/byok_ops/registered tests/cuda/byok_ops/gridnorm tests/cuda/byok_ops/multi tests/cuda/byok_ops/rowsum; do
  [ -d "$op" ] || continue
  s=$(date +%s)
  timeout 200 python3 -m brrr_kernels validate "$op" --stage cuda > "$OUT/$(basename $op).txt" 2>&1
  echo "== $op: exit $?, $(( $(date +%s) - s )) s: $(grep -E '^-- ' $OUT/$(basename $op).txt | tail -1)"
done
REPO=$(pwd)
rm -rf /tmp/adopt && mkdir /tmp/adopt && cp .carry/lecture.py /tmp/adopt/ && cd /tmp/adopt
python3 -m brrr_kernels adopt lecture.py --into sq > $OUT/adopt.txt 2>&1; echo "adopt exit $?"
cp $REPO/.carry/square_li/reference.py sq/
sed -i 's|forward_only="TODO.*|forward_only="a lecture example",|' sq/spec.py
s=$(date +%s)
timeout 200 python3 -m brrr_kernels validate sq --stage cuda > $OUT/load_inline_gpu.txt 2>&1
echo "== load_inline script on the GPU: exit $?, $(( $(date +%s) - s )) s"
grep -E "^cuda|cause:|^-- " $OUT/load_inline_gpu.txt | cut -c1-220
