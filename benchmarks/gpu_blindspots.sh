#!/usr/bin/env bash
# Issue 29, items 5 and 6, on a lent GPU machine: what each place sees of the same bugs.
#   PART=bugs    every op's cuda-stage planted bugs (stages/*/bugs/*.bug touching kernel.cu or binding.cpp only,
#                plus guard-band and uninitialized-read plants) validated --stage cuda on the GPU, GPU_JOBS at once.
#   PART=cpu     the same bugs executed on the CPU (CUDA_VISIBLE_DEVICES=: no GPU), CPU_JOBS at once; beside them
#                brrr sanitize over every built-in op (four tools each) and on one plant of each bug class, and
#                the GPU verdicts of GPU_AGAIN (keys op--bug, |-separated) taken again.
#   PART=sanitize  compute-sanitizer's four tools over every op, 3 ops at once, and on one plant of each
#                bug class with its class's tool; GPU_AGAIN's GPU verdicts again.
#   PART=mutate  brrr mutate --stage cuda for sigmoid and square, on the GPU and on the CPU execution.
# Why so: the round before, everything at once on a cold build cache ran past every limit, and the next
# call's GPU verdicts waited on CPU verdicts that took every core. Builds come first, in parallel; each
# validation is pinned to its own CPUs (taskset), so brrr sizes its threads to them and none takes turns.
# Each step has its own limit, so the call ends inside the lease's 10 minutes with what it reached.
# Writes $OUT/blindspots-<part>.md (the tables, made by benchmarks/blindspots_table.py) and the logs as one archive.
# usage: PART=bugs bash benchmarks/gpu_blindspots.sh   (from the repo root)
source benchmarks/gpu_setup.sh
PART=${PART:-bugs}
B="$OUT/blindspots-$PART"
mkdir -p "$B/bugs" "$B/mutate" "$B/build"
export B
START=$(date +%s)
left() { echo $(( ${BUDGET_S:-560} - ($(date +%s) - START) )); }  # seconds left of this call's plan

timed() {  # timed NAME SECONDS CMD...: log to $B/NAME.txt with exit code and wall time
  local name=$1 limit=$2; shift 2
  local t0=$EPOCHREALTIME
  timeout -k 5 "$limit" "$@" >> "$B/$name.txt" 2>&1
  local rc=$?
  printf '%s: exit %s, %s s wall\n' "$name" "$rc" "$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))")" \
    | tee -a "$B/$name.txt" >> "$B/summary.txt"
}
export -f timed

prebuild() {  # every folder built for the GPU at once: nvcc and the host compiler on all cores
  xargs -P ${BUILD_JOBS:-12} -I{} bash -c 'timed "build/$(basename "$(dirname "{}")")--$(basename "{}")" 240 python3 -m brrr_kernels build "{}"' \
    < "$1"
}

# Each validation pinned to its own CPUs (brrr sizes its threads to its affinity): N at once on 16
# cores, none taking turns with the others. verdicts SIDE JOBS CPUS_EACH < FOLDERS
verdicts() {
  local side=$1 jobs=$2 each=$3
  SIDE=$side EACH=$each xargs -P "$jobs" --process-slot-var=SLOT -I{} bash -c '
    k=$(basename "$(dirname "{}")"); first=$(( ${BASE:-0} + SLOT * EACH ))
    taskset -c "$first-$(( first + EACH - 1 ))" bash -c "timed \"bugs/$k.$SIDE\" ${LIMIT:-150} python3 -m brrr_kernels \
      validate \"{}\" --stage cuda --seed 29 --quiet --json \"$B/bugs/$k.$SIDE.json\""'
}
export -f verdicts

if [ "$PART" = bugs ]; then  # the GPU's verdicts, GPU_JOBS at once (the GPU is idle while each checks on the CPU)
  python3 benchmarks/blindspots_table.py plant "$B/ops" > "$B/bug_folders.txt" || exit 2
  echo "$(wc -l < "$B/bug_folders.txt") planted bugs"
  prebuild "$B/bug_folders.txt"
  echo "prebuilt at $(( $(date +%s) - START )) s"
  timeout "$(left)" bash -c "verdicts gpu ${GPU_JOBS:-4} 4" < "$B/bug_folders.txt"
  echo "GPU verdicts done at $(( $(date +%s) - START )) s"
elif [ "$PART" = cpu ]; then  # the CPU execution's verdicts (no GPU visible), CPU_JOBS at once, and the sanitizer
  python3 benchmarks/blindspots_table.py plant "$B/ops" > "$B/bug_folders.txt" || exit 2
  ( export CUDA_VISIBLE_DEVICES=; timeout "$(( $(left) - 20 ))" bash -c "verdicts cpu ${CPU_JOBS:-6} 2" < "$B/bug_folders.txt" ) &
  cpu_side=$!
  ls -d "$PWD"/stages/*/ | sed 's:/$::' > "$B/op_folders.txt"
  python3 benchmarks/blindspots_table.py sanitize-picks "$B/bug_folders.txt" > "$B/sanitize_folders.txt"
  cat "$B/op_folders.txt" "$B/sanitize_folders.txt" > "$B/build_folders.txt"
  grep -E "/(${GPU_AGAIN:-none})/" "$B/bug_folders.txt" >> "$B/build_folders.txt"  # GPU verdicts to take again
  taskset -c 12-15 bash -c "$(declare -f prebuild); prebuild $B/build_folders.txt"
  grep -E "/(${GPU_AGAIN:-none})/" "$B/bug_folders.txt" | BASE=12 bash -c "verdicts gpu 1 4"
  taskset -c 12-15 bash -c "timed sanitize_ops 240 python3 -m brrr_kernels sanitize --json $B/sanitize_ops.json"
  while read -r folder; do  # compute-sanitizer on one plant of each class (the table names the class)
    k=$(basename "$(dirname "$folder")")
    [ "$(left)" -lt 30 ] && break
    taskset -c 12-15 bash -c "timed bugs/$k.sanitize 60 python3 -m brrr_kernels sanitize $folder --json $B/bugs/$k.sanitize.json"
  done < "$B/sanitize_folders.txt"
  wait $cpu_side
elif [ "$PART" = sanitize ]; then  # compute-sanitizer: every op, four tools, 3 ops at once; each plant with its class's tool
  python3 benchmarks/blindspots_table.py plant "$B/ops" > "$B/bug_folders.txt" || exit 2
  ls -d "$PWD"/stages/*/ | sed 's:/$::' > "$B/op_folders.txt"
  python3 benchmarks/blindspots_table.py sanitize-picks "$B/bug_folders.txt" > "$B/sanitize_folders.txt"
  grep -E "/(${GPU_AGAIN:-none})/" "$B/bug_folders.txt" > "$B/again.txt"
  cat "$B/op_folders.txt" "$B/sanitize_folders.txt" "$B/again.txt" | sort -u > "$B/build_folders.txt"
  BUILD_JOBS=16 prebuild "$B/build_folders.txt"
  BASE=12 verdicts gpu 1 4 < "$B/again.txt"
  mkdir -p "$B/sanitize"
  timeout "$(( $(left) - 90 ))" xargs -P 3 -I{} bash -c 'op=$(basename {}); timed "sanitize/$op" 200 python3 -m brrr_kernels \
    sanitize {} --json "$B/sanitize/$op.json"' < "$B/op_folders.txt"
  python3 -c "import json, pathlib, sys; b = pathlib.Path(sys.argv[1]); print(json.dumps(sum((json.loads(p.read_text()) \
    for p in sorted((b / 'sanitize').glob('*.json'))), [])))" "$B" > "$B/sanitize_ops.json"
  timeout "$(( $(left) - 20 ))" xargs -P 3 -I{} bash -c 'k=$(basename "$(dirname {})"); timed "bugs/$k.sanitize" 90 python3 -m \
    brrr_kernels sanitize {} $(python3 benchmarks/blindspots_table.py tool-of "$k") --json "$B/bugs/$k.sanitize.json"' \
    < "$B/sanitize_folders.txt"
else  # mutate: brrr mutate --stage cuda on the GPU and on the CPU execution
  ( export CUDA_VISIBLE_DEVICES=
    for op in sigmoid square; do
      taskset -c 0-7 bash -c "timed mutate/$op.cpu 250 python3 -m brrr_kernels mutate $op --stage cuda --seed 29 --jobs 4 \
        --json $B/mutate/$op.cpu.json"
    done ) &
  cpu_side=$!
  for op in sigmoid square; do
    taskset -c 8-15 bash -c "timed mutate/$op.gpu 250 python3 -m brrr_kernels mutate $op --stage cuda --seed 29 --jobs 4 \
      --json $B/mutate/$op.gpu.json"
  done
  wait $cpu_side
fi
python3 benchmarks/blindspots_table.py table "$B" "$PART" | tee "$OUT/blindspots-$PART.md"
tar czf "$OUT/blindspots-$PART-logs.tgz" -C "$OUT" "blindspots-$PART" && rm -rf "$B"
