#!/usr/bin/env bash
# Issue 29, items 5 and 6, on a lent GPU machine: what each place sees of the same bugs.
#   PART=bugs  every op's cuda-stage planted bugs (stages/*/bugs/*.bug touching kernel.cu or binding.cpp only,
#              plus guard-band and uninitialized-read plants) validated --stage cuda on the GPU, one at a time,
#              and executed on the CPU (CUDA_VISIBLE_DEVICES=: no GPU) on this machine's other cores meanwhile.
#   PART=ops   brrr sanitize over every built-in op (four tools each), compute-sanitizer's four tools on one
#              plant of each bug class, and brrr mutate --stage cuda for sigmoid and square, on the GPU and
#              on this machine's CPUs.
# Why in this order: the round before, everything at once on a cold build cache ran past every limit.
# Now the builds come first, in parallel (host compilers only); the GPU then runs one validation at a time.
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
  xargs -P 12 -I{} bash -c 'timed "build/$(basename "$(dirname "{}")")--$(basename "{}")" 240 python3 -m brrr_kernels build "{}"' \
    < "$1"
}

if [ "$PART" = bugs ]; then
  python3 benchmarks/blindspots_table.py plant "$B/ops" > "$B/bug_folders.txt" || exit 2
  echo "$(wc -l < "$B/bug_folders.txt") planted bugs"
  prebuild "$B/bug_folders.txt"
  echo "prebuilt at $(( $(date +%s) - START )) s"
  # The CPU verdicts run on the host's cores while the GPU validates one bug at a time.
  ( export CUDA_VISIBLE_DEVICES= BRRR_CPU_WORKERS=2
    xargs -P 4 -I{} bash -c 'k=$(basename "$(dirname "{}")"); timed "bugs/$k.cpu" 200 python3 -m brrr_kernels validate "{}" \
      --stage cuda --seed 29 --quiet --json "$B/bugs/$k.cpu.json"' < "$B/bug_folders.txt" ) &
  cpu_side=$!
  while read -r folder; do
    k=$(basename "$(dirname "$folder")")
    [ "$(left)" -lt 200 ] && { echo "GPU verdicts stopped at $k: time"; break; }
    timed "bugs/$k.gpu" 40 python3 -m brrr_kernels validate "$folder" --stage cuda --seed 29 --quiet --json "$B/bugs/$k.gpu.json"
  done < "$B/bug_folders.txt"
  echo "GPU verdicts done at $(( $(date +%s) - START )) s"
  timeout $(( $(left) > 10 ? $(left) : 10 )) tail --pid=$cpu_side -f /dev/null  # what the CPU side reached by now
  kill -- -$cpu_side 2>/dev/null; pkill -f "brrr_kernels validate" 2>/dev/null
else
  ls -d "$PWD"/stages/*/ | sed 's:/$::' > "$B/op_folders.txt"
  python3 benchmarks/blindspots_table.py plant "$B/ops" > "$B/bug_folders.txt" || exit 2
  python3 benchmarks/blindspots_table.py sanitize-picks "$B/bug_folders.txt" > "$B/sanitize_folders.txt"
  cat "$B/op_folders.txt" "$B/sanitize_folders.txt" > "$B/build_folders.txt"
  prebuild "$B/build_folders.txt"
  ( export CUDA_VISIBLE_DEVICES= BRRR_CPU_WORKERS=2
    for op in sigmoid square; do
      timed "mutate/$op.cpu" 240 python3 -m brrr_kernels mutate "$op" --stage cuda --seed 29 --jobs 3 --json "$B/mutate/$op.cpu.json"
    done ) &
  cpu_side=$!
  timed sanitize_ops 200 python3 -m brrr_kernels sanitize --json "$B/sanitize_ops.json"
  # compute-sanitizer on one plant of each class (the table names the class).
  while read -r folder; do
    k=$(basename "$(dirname "$folder")")
    timed "bugs/$k.sanitize" 60 python3 -m brrr_kernels sanitize "$folder" --json "$B/bugs/$k.sanitize.json"
  done < "$B/sanitize_folders.txt"
  for op in sigmoid square; do
    timed "mutate/$op.gpu" $(( $(left) / 2 > 30 ? $(left) / 2 : 30 )) python3 -m brrr_kernels mutate "$op" --stage cuda \
      --seed 29 --jobs 4 --json "$B/mutate/$op.gpu.json"
  done
  timeout $(( $(left) > 10 ? $(left) : 10 )) tail --pid=$cpu_side -f /dev/null
  kill -- -$cpu_side 2>/dev/null; pkill -f "brrr_kernels mutate" 2>/dev/null
fi
python3 benchmarks/blindspots_table.py table "$B" "$PART" | tee "$OUT/blindspots-$PART.md"
tar czf "$OUT/blindspots-$PART-logs.tgz" -C "$OUT" "blindspots-$PART" && rm -rf "$B"
