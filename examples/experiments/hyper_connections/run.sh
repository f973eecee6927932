#!/usr/bin/env bash
# Experiment 4: does hyper-connection change seed 001's post-LN failure?
# The copy task at 24 blocks (width 128) with one residual stream or four
# mHC streams (docs/hyper_connections.md: H_res doubly stochastic by 20
# Sinkhorn-Knopp iterations), pre- and post-LN, with and without warm-up.
#
#   examples/experiments/hyper_connections/run.sh       short: 1 seed, 300
#       steps at batch 32, no warm-up (about 10 minutes on 2 cores)
#   examples/experiments/hyper_connections/run.sh full  3 seeds, 1,200
#       steps at batch 64, warm-up 0 and 400 (about 6 hours on 2 cores: mHC
#       runs the model at about 60% of the single stream's tokens/s), a
#       checkpoint every 100 steps
#   examples/experiments/hyper_connections/run.sh full --resume
#       continues a full run that was stopped (a session's end, ^C): each
#       run from its last checkpoint, bit-identical to one that never
#       stopped (docs/train.md); the finished runs are left as they are
#
# Writes out/experiments/hyper_connections/: each run's folder,
# results.csv, curves.csv, results.png and table.txt (also printed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
mode=${1:-short}
resume=${2:-}
out="${OUT:-$root/out/experiments/hyper_connections}"
# shellcheck source=../resume.sh
source "$here/../resume.sh"

case "$mode" in
  short) args=(--set "train.steps=300" --set "train.batch=32"
               --set "grid.optimizer.warmup=[0]" --set "grid.seeds=[1]") ;;
  full) args=(--set "train.steps=1200" --set "train.batch=64"
              --set "train.checkpoint_every=100"
              --set "grid.optimizer.warmup=[0, 400]" --set "grid.seeds=[1, 2, 3]") ;;
  *) usage ;;
esac
if check_resume "$mode" "$resume" "$out"; then args+=(--resume); fi
bash "$root/scripts/build.sh" >/dev/null
if [ -z "$resume" ]; then
  rm -rf "$out"
  mkdir -p "$out"
  echo "$mode" > "$out/mode"
fi
"$root/build/bin/tfc-train" "$here/run.toml" --jobs 2 --out "$out" "${args[@]}" \
  > "$out/train.txt" 2>> "$out/progress.txt"
python3 "$here/report.py" "$out" "$mode"
