#!/bin/bash
# The last GPU call of this work, most needed first, each step under a time limit so the call ends
# inside its lease: brrr's cuda stage of layernorm and bias_gelu validated on the GPU (VALIDATE=1),
# `brrr bench` of both in float32 and bfloat16 (BENCH=1), the variant benchmarks (run.sh), and
# gpu_indep.py (triton do_bench, L2 flushed) beside bench when INDEP names it. Logs under $OUT.
# From the repo root.
set -o pipefail
export OUT=${OUT:-/tmp/rowwise_out}
mkdir -p "$OUT"
if [ "${VALIDATE:-0}" = 1 ] || [ "${BENCH:-0}" = 1 ]; then
    source benchmarks/gpu_setup.sh
fi
if [ "${VALIDATE:-0}" = 1 ]; then
    for op in layernorm bias_gelu; do
        timeout "${VALIDATE_S:-60}" python3 -m brrr_kernels validate "$op" --stage cuda 2>&1 | tee -a "$OUT/validate.txt" \
            | grep -E "^--|FAIL"
    done
fi
if [ "${BENCH:-0}" = 1 ]; then
    start=$(date +%s)
    timeout "${BENCH_S:-100}" python3 -m brrr_kernels bench layernorm bias_gelu --dtype float32 --dtype bfloat16 \
        --no-numba --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt" | grep -E "^(layernorm|bias_gelu) .* (eager|compile|cuda)|copy"
    echo "== bench $(( $(date +%s) - start )) s" | tee -a "$OUT/bench.txt"
fi
timeout "${VARIANTS_S:-60}" bash benchmarks/rowwise_variants/run.sh | grep -E "copy|ships|v2 |v5|v4 kernel, 2|early|%"
if [ -n "${INDEP:-}" ]; then
    timeout "${INDEP_S:-40}" python3 "$INDEP" --ops layernorm,bias_gelu --out "$OUT/indep.json" 2>&1 | tee "$OUT/indep.txt"
fi
