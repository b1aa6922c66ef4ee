#!/usr/bin/env bash
# One call on a lent GPU: the named ops' cuda stage validated, the timing probe (why `brrr bench`
# and triton's do_bench disagreed on forward+backward), `brrr bench` on every op in float32 and
# bfloat16 with its wall time, and the independent timing (gpu_indep.py, do_bench with L2
# flushed) beside it. Each step has a time limit so the call ends inside the lease's 10 minutes;
# what a step printed before its limit is kept. Logs go to $OUT (at most 8 files come back).
# With NCU="op:dtype op:dtype ...", Nsight Compute (--clock-control none) on one forward and backward
# of each at its bench size: achieved bandwidth, occupancy, warp stalls (ncu.txt). PROBE=0 skips the probe.
# BENCH_OPS="OP ..." and INDEP_OPS=op,op time only those (default: every op); BENCH_ARGS are added to
# brrr bench's (BENCH_ARGS="--pass backward").
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
  # The builds side by side first (10-13 s of one core each); the validations then load them.
  # shellcheck disable=SC2016
  step prebuild "${PREBUILD_S:-120}" bash -c 'for op in "$@"; do python3 -m brrr_kernels build "$op" & done; wait' _ "${ops[@]}"
  # One op at a time, each under its own limit (VALIDATE_S seconds), so a failure or a hang names its op;
  # each log joins validate.txt as it ends (the call brings back at most 8 files).
  for op in "${ops[@]}"; do
    step "validate-$op" "${VALIDATE_S:-150}" python3 -m brrr_kernels validate "$op" --stage cuda
    { echo "### $op"; cat "$OUT/validate-$op.txt"; } >>"$OUT/validate.txt" && rm -f "$OUT/validate-$op.txt"
  done
  # The same kernels executed on this machine's CPUs (cuda@cpu), where they must pass too.
  if [ "${CUDA_ON_CPU:-1}" != 0 ]; then
    step validate_cpu "${VALIDATE_CPU_S:-200}" python3 -m brrr_kernels validate "${ops[@]}" --stage cuda --cuda-on-cpu
  fi
fi
if [ "${PROBE:-1}" != 0 ]; then  # PROBE=0 skips it
  step probe "${PROBE_S:-90}" python3 benchmarks/timing_probe.py
fi
if [ "${BENCH:-1}" != 0 ]; then
  # shellcheck disable=SC2086  # BENCH_OPS: op names, split on purpose (default: every op)
  step bench "${BENCH_S:-240}" python3 -m brrr_kernels bench ${BENCH_OPS:-} --dtype float32 --dtype bfloat16 ${BENCH_ARGS:-} --json "$OUT/bench.json"
fi
# BWD_INDEP=1: the backward alone by do_bench too (benchmarks/bwd_indep.py; gpu_indep.py times none).
[ "${BWD_INDEP:-0}" != 0 ] && step bwd_indep "${BWD_INDEP_S:-150}" python3 benchmarks/bwd_indep.py --out "$OUT/bwd_indep.json"
[ "${INDEP_RUN:-1}" != 0 ] && step indep "${INDEP_S:-100}" python3 "${INDEP:-../shared/tools/gpu_indep.py}" ${INDEP_OPS:+--ops "$INDEP_OPS"} --out "$OUT/indep.json"
ncu_all() {
  local ncu
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for pair in $NCU; do
    local op=${pair%%:*} dtype=${pair##*:}
    local size
    size=$(python3 -c "from brrr_kernels.op.loaders import load_op; import json; print(json.dumps(load_op('$op').spec.bench_sizes[0]))")
    echo "### $op $dtype $size"
    # dram__bytes: achieved DRAM bandwidth in bytes/s; the stall metrics: each reason's warps stalled per
    # instruction issued (the WarpStateStats section charts them but does not print them). If this ncu
    # refuses the extra metrics, the sections alone.
    local sections=(--clock-control none --profile-from-start off --section SpeedOfLight --section Occupancy
                    --section WarpStateStats --section LaunchStats)
    local metrics="dram__bytes.sum.per_second,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
    local target=(python3 -m brrr_kernels.commands.bench "stages/$op" "$size" "$dtype")
    local log=/tmp/ncu-$op-$dtype.log
    "$ncu" "${sections[@]}" --metrics "$metrics" "${target[@]}" >"$log" 2>&1
    grep -q Duration "$log" || { echo "(ncu refused the extra metrics: $(grep -m1 -E '==ERR' "$log"))"; "$ncu" "${sections[@]}" "${target[@]}" >"$log" 2>&1; }
    grep -E "^  [a-z_]+.*\(|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Size|Grid Size|Stall|stalled|dram__bytes|Warp Cycles Per Issued|Block Limit|==ERR" "$log"
  done
}
if [ -n "${NCU:-}" ]; then
  export -f ncu_all
  export NCU
  step ncu "${NCU_S:-150}" bash -c ncu_all
fi
