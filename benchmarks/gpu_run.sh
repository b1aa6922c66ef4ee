#!/usr/bin/env bash
# One call on a lent GPU machine: environment, `brrr validate` on the named ops (all three
# stages, numba in the simulator, then numba on the GPU), and the GPU tests. Logs go to $OUT.
# usage: bash benchmarks/gpu_run.sh OP [OP ...]   (from the repo root)
set -uo pipefail
OUT=${OUT:-/tmp/brrr-out}
mkdir -p "$OUT"
export PYTHONPATH=. PYTHONUNBUFFERED=1 BRRR_CACHE=/tmp/brrr-cache BRRR_TEST_CACHE=/tmp/brrr-cache
ops=("$@")
{
  date -u +"date: %Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
  python3 -c "import torch, numba, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'numba', numba.__version__, 'numpy', numpy.__version__)"
  nvcc --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
python3 -m pipeline validate "${ops[@]}" --json "$OUT/validate.json" 2>&1 | tee "$OUT/validate.txt"
echo "validate exit: $?" | tee -a "$OUT/validate.txt"
python3 -m pipeline validate "${ops[@]}" --gpu --stage numba 2>&1 | tee "$OUT/validate_numba_gpu.txt"
echo "validate --gpu exit: $?" | tee -a "$OUT/validate_numba_gpu.txt"
k=$(printf ' or %s' "${ops[@]}"); k="unwritten${k}"
python3 -m pytest -q -rs tests/test_runner.py -k "$k" 2>&1 | tee "$OUT/pytest_gpu.txt"
