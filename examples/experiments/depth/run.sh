#!/usr/bin/env bash
# Experiment 2: post-LN, pre-LN and DeepNorm at depth 100 and 1000 on the
# copy task (width 32), and tfc's compile time and object size at depth 1000
# against depth 1.
#
#   examples/experiments/depth/run.sh         short: 1 seed, 600 steps at
#       depth 100, 60 at depth 1000 (about 8 minutes on 2 cores)
#   examples/experiments/depth/run.sh full    1,200 steps, 3 seeds at depth
#       100, 1 at depth 1000 (about 2.7 hours on 2 cores: 18 runs of ~5
#       minutes at depth 100 and 6 of ~36 minutes at depth 1000, two at a
#       time), a checkpoint every 100 steps
#   examples/experiments/depth/run.sh full --resume
#       continues a full run that was stopped (a session's end, ^C): the
#       grids not finished, each run from its last checkpoint, bit-identical
#       to one that never stopped (docs/train.md)
#
# Each at warm-up 0 and 400 steps (linear, to lr 1e-3).
#
# Writes out/experiments/depth/: each run's folder, results.csv, curves.csv,
# compile.csv, results.png and table.txt (also printed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
mode=${1:-short}
resume=${2:-}
out="${OUT:-$root/out/experiments/depth}"
# shellcheck source=../resume.sh
source "$here/../resume.sh"

extra=()
case "$mode" in
  short) steps100=600 steps1000=60 seeds100="[1]" seeds1000="[1]" ;;
  full) steps100=1200 steps1000=1200 seeds100="[1, 2, 3]" seeds1000="[1]"
        extra=(--set "train.checkpoint_every=100") ;;
  *) usage ;;
esac
if check_resume "$mode" "$resume" "$out"; then extra+=(--resume); fi
bash "$root/scripts/build.sh" >/dev/null
tfc="$root/build/bin/tfc"
train="$root/build/bin/tfc-train"

# Compile time and object size: the block is one loop over the layers'
# parameters, so depth should change neither much.
measure_compile() {
  echo "depth,compile_s,object_bytes,params" > "$out/compile.csv"
  for depth in 1 1000; do
    sed "s/^depth = .*/depth = $depth/" "$here/copy_task_w32.toml" > "$out/compile/d$depth.toml"
    start=$(date +%s%N)
    "$tfc" "$out/compile/d$depth.toml" -o "$out/compile/d$depth.o"
    ms=$((($(date +%s%N) - start) / 1000000))
    params=$(grep -m1 'PARAM_COUNT' "$out/compile/d$depth.h" | awk '{print $3}')
    printf "%d,%d.%03d,%d,%s\n" "$depth" $((ms / 1000)) $((ms % 1000)) \
      "$(stat -c %s "$out/compile/d$depth.o")" "$params" >> "$out/compile.csv"
  done
}

if [ -z "$resume" ]; then
  rm -rf "$out"
  mkdir -p "$out/compile"
  echo "$mode" > "$out/mode"
  measure_compile
fi

# One grid per depth (their step counts differ), two runs at a time; a
# grid's runs move to $out when all of them are done (a resumed full run
# skips the grids that are).
for depth in 100 1000; do
  [ ! -f "$out/train-d$depth.done" ] || continue
  steps=$steps100 seeds=$seeds100
  if [ "$depth" = 1000 ]; then steps=$steps1000 seeds=$seeds1000; fi
  "$train" "$here/run.toml" --jobs 2 --out "$out/train-d$depth" \
    --set "train.steps=$steps" --set "grid.seeds=$seeds" \
    --set "grid.spec.model.depth=[$depth]" "${extra[@]}" \
    > "$out/train-d$depth.txt" 2>> "$out/progress-d$depth.txt"
  for run in "$out/train-d$depth"/*/; do
    if [ -f "$run/log.csv" ]; then mv "$run" "$out/"; fi
  done
  touch "$out/train-d$depth.done"
done
python3 "$here/report.py" "$out" "$mode"
