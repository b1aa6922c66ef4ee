#!/usr/bin/env bash
# One call on a lent GPU: the named ops' cuda stage validated, the timing probe (why `brrr bench`
# and triton's do_bench disagreed on forward+backward), `brrr bench` on every op in float32 and
# bfloat16 with its wall time, and the independent timing (gpu_indep.py, do_bench with L2
# flushed) beside it. Each step has a time limit so the call ends inside the lease's 10 minutes;
# what a step printed before its limit is kept. Logs go to $OUT (at most 8 files come back).
# usage: bash benchmarks/gpu_perf.sh "OP OP ..."   (from the repo root)
source benchmarks/gpu_setup.sh
read -r -a ops <<< "${1:-}"
step() {  # step NAME SECONDS COMMAND...: run with a limit, log to $OUT/NAME.txt, say how long it took
  local name=$1 limit=$2
  shift 2
  local start
  start=$(date +%s)
  timeout "$limit" "$@" 2>&1 | tee "$OUT/$name.txt"
  echo "== $name: exit ${PIPESTATUS[0]}, $(( $(date +%s) - start )) s wall (limit $limit s)" | tee -a "$OUT/$name.txt"
}
if [ ${#ops[@]} -gt 0 ]; then
  step validate "${VALIDATE_S:-150}" python3 -m brrr_kernels validate "${ops[@]}" --stage cuda
fi
step probe "${PROBE_S:-90}" python3 benchmarks/timing_probe.py
step bench "${BENCH_S:-240}" python3 -m brrr_kernels bench --dtype float32 --dtype bfloat16 --json "$OUT/bench.json"
step indep "${INDEP_S:-100}" python3 "${INDEP:-../shared/tools/gpu_indep.py}" --out "$OUT/indep.json"
