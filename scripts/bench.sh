#!/usr/bin/env bash
# Benchmark (not a test): one GPT-2 block's forward pass (d_model 768, 12
# heads, batch 4, seq 256) compiled by tfc, against OpenBLAS sgemm doing only
# the same block's matmuls and against PyTorch eager, all timed in this run,
# on 1 and 2 threads. Prints median milliseconds and ratios.
#
#   scripts/bench.sh [batch] [seq] [iterations]
#
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for the references so
# OpenBLAS (and PyTorch's BLAS) use the kernels for this CPU; the run prints
# which sgemm kernel OpenBLAS picked.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
batch=${1:-4}
seq=${2:-256}
iters=${3:-10}
out="$root/out/bench"
mkdir -p "$out"
bash "$root/scripts/build.sh" >/dev/null

spec="$root/examples/specs/gpt2_block.toml"
"$root/build/bin/tfc" "$spec" -o "$out/gpt2_block.o"
cc -O2 -I "$root/runtime/include" -I "$out" \
  -DTFC_HEADER='"gpt2_block.h"' -DTFC_NAME=gpt2_block -DTFC_UNAME=GPT2_BLOCK \
  "$root/examples/benchmark/bench_block.c" "$out/gpt2_block.o" \
  -L "$root/build/lib" -ltfc_runtime -lopenblas -lpthread -lm \
  -o "$out/bench_block"

unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
kernel=$(OPENBLAS_VERBOSE=2 "$out/bench_block" 1 1 1 1 2>&1 | grep -oE 'Core: [A-Za-z0-9]+' | head -n 1 || true)
echo "gpt2 block forward: batch $batch, seq $seq, median of $iters runs (OpenBLAS ${kernel:-kernel unknown})"
printf '%-8s %12s %16s %14s %12s %12s\n' threads "tfc ms" "openblas-mm ms" "torch ms" "tfc/blas" "tfc/torch"
for threads in 1 2; do
  res=$("$out/bench_block" "$threads" "$batch" "$seq" "$iters")
  tfc=$(echo "$res" | awk '/^tfc_forward/ {print $2}')
  blas=$(echo "$res" | awk '/^openblas_matmuls/ {print $2}')
  torch=$(/usr/bin/python3 "$root/examples/benchmark/torch_block.py" "$spec" \
    "$threads" "$batch" "$seq" "$iters" | awk '{print $2}')
  awk -v t="$threads" -v a="$tfc" -v b="$blas" -v c="$torch" 'BEGIN {
    printf "%-8s %12.2f %16.2f %14.2f %12.2f %12.2f\n", t, a, b, c, a / b, a / c }'
done
