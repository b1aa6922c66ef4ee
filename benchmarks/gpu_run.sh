#!/usr/bin/env bash
# One call on a lent GPU machine: environment, `brrr validate` on the named ops (all three
# stages with numba in the simulator; numba on the GPU; --huge), the walkthrough, and the GPU
# tests. Logs go to $OUT (at most 8 files come back).
# usage: bash benchmarks/gpu_run.sh "OP OP ..." [tests]   (from the repo root; "tests": also pytest -m gpu)
source benchmarks/gpu_setup.sh
read -r -a ops <<< "$1"
tests=${2:-}
start=$(date +%s)
python3 -m brrr_kernels validate "${ops[@]}" --json "$OUT/validate.json" 2>&1 | tee "$OUT/validate.txt"
echo "validate exit: $? ($(( $(date +%s) - start )) s wall)" | tee -a "$OUT/validate.txt"
python3 -m brrr_kernels validate "${ops[@]}" --gpu --stage numba 2>&1 | tee "$OUT/validate_numba_gpu.txt"
echo "validate --gpu exit: $?" | tee -a "$OUT/validate_numba_gpu.txt"
python3 -m brrr_kernels validate "${ops[@]}" --stage cuda --huge 2>&1 | grep -E "^==|^--|huge|FAIL|^    " | tee "$OUT/huge.txt"
python3 -m brrr_kernels walkthrough --no-pause > "$OUT/walkthrough.txt" 2>&1
echo "walkthrough exit: $?" | tee -a "$OUT/walkthrough.txt"
if [ -n "$tests" ]; then
  python3 -m pytest -q -rs -m gpu tests/ 2>&1 | tee "$OUT/pytest_gpu.txt"
fi
