#!/usr/bin/env bash
# One call on a lent GPU (from the repo root): build bench.cu against the machine's cuBLAS, time every
# tiling beside cuBLAS, Nsight Compute on the shipped v4 at 4096^3 (NCU=0 skips it), and with
# VALIDATE=1 `brrr validate matmul_tc --stage cuda` and with BENCH=1 `brrr bench matmul_tc` on the GPU.
# Logs under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/tc-out}
mkdir -p "$OUT"
here=benchmarks/matmul_tc_variants
{
  date -u +"date: %Y-%m-%d %H:%M UTC"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader | sed 's/^/gpu: /'
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  nvcc --version | tail -1
} 2>&1 | tee "$OUT/env.txt"
# cuBLAS: the toolkit's, else the nvidia-cublas wheel's.
inc=$(dirname "$(find /usr/local/cuda*/ /usr/include -name cublas_v2.h 2>/dev/null | head -1)" 2>/dev/null)
lib=$(dirname "$(find /usr/local/cuda*/ /usr/lib -name 'libcublas.so*' 2>/dev/null | head -1)" 2>/dev/null)
if [ -z "$inc" ] || [ "$inc" = . ]; then
  wheel=$(python3 -c "import nvidia.cu13, os; print(os.path.dirname(nvidia.cu13.__file__))" 2>/dev/null ||
          python3 -c "import nvidia.cublas, os; print(nvidia.cublas.__path__[0])")
  inc=$(dirname "$(find "$wheel" -name cublas_v2.h | head -1)")
  lib=$(dirname "$(find "$wheel" -name 'libcublas.so*' | head -1)")
fi
echo "cublas: include $inc lib $lib" | tee -a "$OUT/env.txt"
start=$(date +%s)
nvcc -std=c++20 -O3 --expt-relaxed-constexpr -arch=sm_90a -Xptxas -v -I pipeline/include -I "$inc" \
  "$here/bench.cu" -L "$lib" -lcublas -Xlinker -rpath,"$lib" -o /tmp/tc_bench >"$OUT/ptxas.txt" 2>&1 ||
  { tail -30 "$OUT/ptxas.txt"; exit 1; }
echo "== build: $(( $(date +%s) - start )) s"
timeout 150 /tmp/tc_bench 2>&1 | tee "$OUT/variants.txt"
if [ "${NCU:-1}" != 0 ]; then
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  sections=(--clock-control none --kernel-name regex:wgmma_kernel --launch-count 1 --section SpeedOfLight
            --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables
            --section Occupancy --section WarpStateStats --section LaunchStats --section InstructionStats)
  metrics="dram__bytes.sum.per_second,lts__t_bytes.sum.per_second,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio"
  timeout 90 "$ncu" "${sections[@]}" --metrics "$metrics" /tmp/tc_bench ncu >"$OUT/ncu.txt" 2>&1
  grep -q Duration "$OUT/ncu.txt" || timeout 60 "$ncu" "${sections[@]}" /tmp/tc_bench ncu >"$OUT/ncu.txt" 2>&1
  grep -E "Duration|Throughput|Occupancy|Registers Per|Pipe|Issue|Executed Ipc|Bank|bytes.sum.per|stalled_(wait|long|short|mio|barrier|math|not_sel|dispatch|lg_th|selected)[a-z_]*_per|Warp Cycles Per Issued|Hit Rate|==ERR" "$OUT/ncu.txt"
fi
if [ "${VALIDATE:-0}" != 0 ] || [ "${BENCH:-0}" != 0 ]; then
  python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || echo "pip install -e . failed"
  export PYTHONUNBUFFERED=1 BRRR_CACHE=/tmp/brrr-cache BRRR_TEST_CACHE=/tmp/brrr-cache
  python3 -c "import numba; print('numba', numba.__version__)" | tee -a "$OUT/env.txt"
fi
if [ "${VALIDATE:-0}" != 0 ]; then
  timeout 150 python3 -m brrr_kernels validate matmul_tc --stage cuda 2>&1 | tee "$OUT/validate.txt"
  echo "== validate: exit ${PIPESTATUS[0]}" | tee -a "$OUT/validate.txt"
fi
if [ "${BENCH:-0}" != 0 ]; then
  timeout 150 python3 -m brrr_kernels bench matmul_tc --dtype float32 --dtype bfloat16 --json "$OUT/bench.json" 2>&1 | tee "$OUT/bench.txt"
  echo "== bench: exit ${PIPESTATUS[0]}" | tee -a "$OUT/bench.txt"
fi
if [ "${SASS:-1}" != 0 ]; then  # the shipped forward kernel's instruction mix (cuobjdump), whole SASS in sass.txt
  cuobjdump -sass /tmp/tc_bench 2>/dev/null | python3 "$here/sass_mix.py" "$OUT/sass.txt"
fi
