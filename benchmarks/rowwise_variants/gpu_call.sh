#!/bin/bash
# A GPU call of this work: the variant benchmarks (run.sh), then, with VALIDATE=1, brrr's cuda stage of
# layernorm and bias_gelu validated on the GPU, and with BENCH=1 `brrr bench` of both in float32 and
# bfloat16 (and gpu_indep.py beside it when INDEP is a path). Logs under $OUT. From the repo root.
set -o pipefail
export OUT=${OUT:-/tmp/rowwise_out}
bash benchmarks/rowwise_variants/run.sh || echo "== variants failed"
if [ "${VALIDATE:-0}" = 1 ] || [ "${BENCH:-0}" = 1 ]; then
    source benchmarks/gpu_setup.sh
fi
if [ "${VALIDATE:-0}" = 1 ]; then
    for op in layernorm bias_gelu; do
        timeout 100 python3 -m brrr_kernels validate "$op" --stage cuda 2>&1 | tail -40 | tee "$OUT/validate-$op.txt"
    done
fi
if [ "${BENCH:-0}" = 1 ]; then
    timeout "${BENCH_S:-120}" python3 -m brrr_kernels bench layernorm bias_gelu --dtype float32 --dtype bfloat16 \
        --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
fi
if [ -n "${INDEP:-}" ]; then
    timeout "${INDEP_S:-60}" python3 "$INDEP" --out "$OUT/indep.json" 2>&1 | tee "$OUT/indep.txt"
fi
