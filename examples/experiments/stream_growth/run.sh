#!/usr/bin/env bash
# Experiment 3: the residual stream's growth through a pre-LN model (seed
# 001, problem 10), from the hidden_norms probe: the mean row norm after
# each of 36 blocks at initialisation and after training on the copy task,
# beside sqrt(L + 1) and the seed's 1.414, 2.235, 4.120, 6.067 at L = 1, 4,
# 16, 36.
#
#   examples/experiments/stream_growth/run.sh        short: 300 steps
#   examples/experiments/stream_growth/run.sh full   1,200 steps
#
# Writes out/experiments/stream_growth/: the run's folder (hidden_norms.csv
# every step), norms.csv (block, at init, after training, both over block
# 0's, sqrt(L + 1)), results.png and table.txt (also printed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
mode=${1:-short}
out="${OUT:-$root/out/experiments/stream_growth}"
bash "$root/scripts/build.sh" >/dev/null

args=(--out "$out")
case "$mode" in
  short) ;;
  full) args+=(--set "train.steps=1200") ;;
  *) echo "usage: run.sh [short|full]" >&2; exit 2 ;;
esac
rm -rf "$out"
mkdir -p "$out"
"$root/build/bin/tfc-train" "$here/run.toml" "${args[@]}" \
  > "$out/train.txt" 2> "$out/progress.txt"
python3 "$here/report.py" "$out" "$mode"
