#!/usr/bin/env bash
# Compiles a language-model spec forward-only and runs one forward pass,
# reporting what a user of a large model asks first: compile time, memory,
# forward time (examples/benchmark/run_forward.c).
#
#   scripts/run-forward.sh [SPEC] [SEQ] [THREADS] [ITERATIONS]
#
# Defaults: examples/specs/qwen3vl4b_text.toml (Qwen3-VL-4B's language
# model, 16 GB of f32 parameters), batch 1, seq 128, every core, 1 pass.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
spec=${1:-$here/examples/specs/qwen3vl4b_text.toml}
seq=${2:-128}
threads=${3:-$(nproc)}
iters=${4:-1}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
name=$(sed -n 's/^name = "\(.*\)"/\1/p' "$spec")

start=$(date +%s.%N)
/usr/bin/time -f "compile peak resident %M KB" \
  "$here/build/bin/tfc" "$spec" --forward-only -o "$out/$name.o"
echo "compile seconds $(echo "$(date +%s.%N) - $start" | bc)"
cc -O2 -I "$here/runtime/include" -I "$out" -I "$here/examples/benchmark" \
  -DTFC_HEADER="\"$name.h\"" -DTFC_NAME="$name" \
  -DTFC_UNAME="$(echo "$name" | tr a-z A-Z)" \
  "$here/examples/benchmark/run_forward.c" "$out/$name.o" \
  -L "$here/build/lib" -ltfc_runtime -lpthread -lm -o "$out/run_forward"
echo "running $name forward at batch 1, seq $seq, $threads threads"
"$out/run_forward" "$threads" 1 "$seq" "$iters"
