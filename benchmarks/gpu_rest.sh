#!/usr/bin/env bash
# One call on a lent GPU machine for what the other scripts leave: tensor cores on the CPU execution
# against the GPU's (issue 28), a failing verdict's time against its clean copy's on the GPU (issue 30),
# the seeds' single-.cu ops on the GPU (issue 27) and the GPU tests. Each part under its own limit;
# logs to $OUT (at most 8 files come back). usage: bash benchmarks/gpu_rest.sh   (from the repo root)
source benchmarks/gpu_setup.sh
part() {  # part NAME SECONDS CMD...: its output to $OUT/NAME.txt, with exit code and wall time
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  echo "$name: exit $?, $(( $(date +%s) - t0 )) s wall" | tee -a "$OUT/$name.txt" >> "$OUT/summary.txt"
}
part tensor_cores 90 python3 benchmarks/tensor_core_agreement.py
part verdict_times 240 python3 benchmarks/verdict_times.py --only sigmoid --only bias_gelu --out "$OUT/verdict_times"
part seeds 150 python3 -m brrr_kernels validate ./examples/seed_mul ./examples/seed_bias_gelu --jobs 1
part pytest_gpu 100 python3 -m pytest -q -rs -m gpu -p no:cacheprovider -x tests/
tar czf "$OUT/verdict_times.tgz" -C "$OUT" verdict_times 2>/dev/null && rm -rf "$OUT/verdict_times"
cat "$OUT/tensor_cores.txt"; grep -E "clean copy|failing copy" "$OUT/verdict_times.txt"; tail -5 "$OUT/seeds.txt"
cat "$OUT/summary.txt"
