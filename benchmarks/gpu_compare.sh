#!/usr/bin/env bash
# One call on a lent GPU machine: the numba stages of the named ops on the GPU (profiled), the
# full validation with the GPU as the verdict, and the same cuda stage executed on the CPU
# (--cuda-on-cpu) on the same machine, so the two verdicts and their wall times can be compared.
# usage: bash benchmarks/gpu_compare.sh "NUMBA_GPU_OPS" (may be "")   (from the repo root; logs under $OUT)
source benchmarks/gpu_setup.sh
read -r -a numba_ops <<< "$1"
timed() {  # timed NAME SECONDS CMD...: run with a limit, log to $OUT/NAME.txt, append exit and wall time
  local name=$1 limit=$2; shift 2
  local t0=$EPOCHREALTIME
  timeout "$limit" "$@" >> "$OUT/$name.txt" 2>&1
  local rc=$?
  printf '%s: exit %s, %s s wall\n' "$name" "$rc" "$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))")" | tee -a "$OUT/$name.txt" "$OUT/summary.txt"
}
[ -n "$1" ] && timed numba_gpu 200 python3 -m brrr_kernels validate "${numba_ops[@]}" --gpu --stage numba
timed cuda_on_cpu 200 python3 -m brrr_kernels validate --stage cuda --cuda-on-cpu --json "$OUT/cuda_on_cpu.json"
timed cuda_gpu 200 python3 -m brrr_kernels validate --stage cuda --json "$OUT/cuda_gpu.json"
timed warm 80 python3 -m brrr_kernels validate --stage cuda
timed warm 80 python3 -m brrr_kernels validate --stage cuda --cuda-on-cpu
