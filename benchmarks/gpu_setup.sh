# Sourced first by the gpu_*.sh scripts on a lent GPU machine: $OUT, brrr installed (an editable
# install, offline: brrr_kernels is pipeline/ and stages/ mapped by setuptools), a build cache
# under /tmp, and what the machine is in $OUT/env.txt.
set -uo pipefail
OUT=${OUT:-/tmp/brrr-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || { echo "pip install -e . failed"; exit 2; }
export PYTHONUNBUFFERED=1 BRRR_CACHE=${BRRR_CACHE:-/tmp/brrr-cache} BRRR_TEST_CACHE=${BRRR_CACHE:-/tmp/brrr-cache}
{
  date -u +"date: %Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv,noheader | sed 's/^/gpu: /'
  python3 -c "import torch, numba, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'numba', numba.__version__, 'numpy', numpy.__version__)"
  nvcc --version | tail -1
  nproc | sed 's/^/cpus: /'
  echo "CXX=${CXX:-} c++=$(command -v c++) g++=$(command -v g++) ld.gold=$(command -v ld.gold)"
  c++ --version | head -1
} 2>&1 | tee "$OUT/env.txt"
