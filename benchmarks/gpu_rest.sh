#!/usr/bin/env bash
# One call on a lent GPU machine for what the other scripts leave (each part under its own limit):
#  - tensor cores on the CPU execution against the GPU's, case by case (issue 28);
#  - a backward writing 401 elements before grad_x, validated on the GPU (issue 29: a GPU fault's row);
#  - the seeds' single-.cu ops on the GPU (issue 27);
#  - brrr mutate --stage cuda on sigmoid on the GPU (CPUs 8-15), and beside it on the CPU execution
#    (CPUs 0-7, no GPU visible), for the CPU-against-GPU table (issue 29);
# Logs to $OUT (at most 8 files come back: the rest as one archive).
# usage: bash benchmarks/gpu_rest.sh   (from the repo root)
source benchmarks/gpu_setup.sh
R="$OUT/rest"
mkdir -p "$R"
part() {  # part NAME SECONDS CMD...: its output to $R/NAME.txt, with exit code and wall time
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" > "$R/$name.txt" 2>&1
  echo "$name: exit $?, $(( $(date +%s) - t0 )) s wall" | tee -a "$R/$name.txt" >> "$OUT/summary.txt"
}
( export CUDA_VISIBLE_DEVICES=
  part mutate_cpu "${MUTATE_S:-420}" taskset -c 0-7 python3 -m brrr_kernels mutate sigmoid --stage cuda --seed 29 --jobs 4 \
    --json "$R/mutate_cpu.json" ) &
cpu_side=$!
part tensor_cores 60 taskset -c 8-15 python3 benchmarks/tensor_core_agreement.py --out "$OUT/tensor_cores.md"
python3 benchmarks/blindspots_table.py plant "$R/ops" 2>/dev/null | grep guard_before_start > "$R/guard.txt"
part guard_before_start 90 taskset -c 8-15 python3 -m brrr_kernels validate "$(cat "$R/guard.txt")" --stage cuda --seed 29 \
  --json "$R/guard_before_start.json"
rm -rf "$R/ops"
part seeds 150 taskset -c 8-15 python3 -m brrr_kernels validate ./examples/seed_mul ./examples/seed_bias_gelu --jobs 1 \
  --json "$R/seeds.json"
part mutate_gpu "${MUTATE_S:-240}" taskset -c 8-15 python3 -m brrr_kernels mutate sigmoid --stage cuda --seed 29 --jobs 6 \
  --json "$R/mutate_gpu.json"
wait $cpu_side
tar czf "$OUT/rest-logs.tgz" -C "$OUT" rest
grep -E "NO|mapping" "$OUT/tensor_cores.md"; grep -E "GPU fault|FAIL|^--" "$R/guard_before_start.txt" | cut -c1-300
grep -E "^-- |FAIL|faulted" "$R/seeds.txt" | cut -c1-300; tail -3 "$R/mutate_gpu.txt" "$R/mutate_cpu.txt"
cat "$OUT/summary.txt"
