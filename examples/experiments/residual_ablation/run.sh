#!/usr/bin/env bash
# Experiment 1: the residual ablation of seed 000 on seed 001's copy task.
#
#   examples/experiments/residual_ablation/run.sh         short: 1 seed,
#       200 steps, 12 runs (a few minutes on 2 cores)
#   examples/experiments/residual_ablation/run.sh full    3 seeds, 1,200 steps
#
# Writes out/experiments/residual_ablation/: each run's folder, results.csv
# (depth, residual, seed, loss at steps 100/200/last, learned), curves.csv,
# results.png and table.txt, the table also printed beside the seed's words.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
mode=${1:-short}
out="${OUT:-$root/out/experiments/residual_ablation}"
bash "$root/scripts/build.sh" >/dev/null

args=(--out "$out")
case "$mode" in
  short) ;;
  full) args+=(--set "train.steps=1200" --set "grid.seeds=[1, 2, 3]") ;;
  *) echo "usage: run.sh [short|full]" >&2; exit 2 ;;
esac
rm -rf "$out"
mkdir -p "$out"
"$root/build/bin/tfc-train" "$here/run.toml" --jobs 2 "${args[@]}" \
  > "$out/train.txt" 2> "$out/progress.txt"
python3 "$here/report.py" "$out" "$mode"
