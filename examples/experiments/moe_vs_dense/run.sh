#!/usr/bin/env bash
# Experiment 5: mixture of experts vs dense FFN at the same active FFN
# weights per token (seed 002: "MoE splits the FFN into experts, only some
# active per token"), a byte-level LM on the fortunes corpus. Four models
# (the specs beside this script): dense SwiGLU d_ff 512; 4 experts of 256,
# top 2 (Mixtral), with and without the load-balancing loss; 8 experts of
# 512, top 1 (Switch). Loss curves, held-out loss, tokens/s and the load
# balance from the expert_counts probe.
#
#   examples/experiments/moe_vs_dense/run.sh        short: 400 steps, 1 seed
#   examples/experiments/moe_vs_dense/run.sh full   3,000 steps, 3 seeds
#
# Writes out/experiments/moe_vs_dense/: each run's folder (log.csv,
# expert_counts.csv), curves.csv, balance.csv, results.png and table.txt
# (also printed). Two runs at a time, one thread each (JOBS, THREADS).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
mode=${1:-short}
out="${OUT:-$root/out/experiments/moe_vs_dense}"
bash "$root/scripts/build.sh" >/dev/null

args=(--out "$out" --jobs "${JOBS:-2}" --set "model.threads=${THREADS:-1}")
case "$mode" in
  short) ;;
  full) args+=(--set "train.steps=3000" --set "grid.seeds=[1, 2, 3]") ;;
  *) echo "usage: run.sh [short|full]" >&2; exit 2 ;;
esac
rm -rf "$out"
mkdir -p "$out"
bash "$root/scripts/corpus.sh" "$out/corpus.txt"
args+=(--set "data.path=\"$out/corpus.txt\"")
"$root/build/bin/tfc-train" "$here/run.toml" "${args[@]}" \
  > "$out/train.txt" 2> "$out/progress.txt"
python3 "$here/report.py" "$out" "$mode"
