#!/usr/bin/env bash
# GPU benchmark (not a test; needs an NVIDIA GPU): one GPT-2 block (d_model
# 768, 12 heads) at batch 8, seq 1024, compiled with `tfc --target=cuda`,
# forward and forward + backward, against PyTorch eager on the same GPU
# (when this machine's torch has CUDA), medians in milliseconds, in one run.
# Twice: the spec as it is (f32, SIMT matmuls) against f32 PyTorch, and with
# `dtype = "bf16"` (tensor-core matmuls) against PyTorch under
# torch.autocast(bfloat16).
#
#   scripts/bench-cuda.sh [iterations] [batch] [seq]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
iters=${1:-10}
batch=${2:-8}
seq=${3:-1024}
out="$root/out/bench-cuda"
mkdir -p "$out"
bash "$root/scripts/build.sh" >/dev/null

ratio() { # tfc_output tfc_label torch_line
  local a b
  a=$(echo "$1" | awk -v l="$2" '$1 == l {print $2}')
  b=$(echo "$3" | awk '$1 ~ /^torch_eager/ {print $2}')
  if [ -n "$a" ] && [ -n "$b" ]; then
    awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f\n", a / b}'
  else
    echo "n/a"
  fi
}

for dtype in f32 bf16; do
  dir="$out/$dtype"
  mkdir -p "$dir"
  spec="$dir/gpt2_block.toml"
  sed "s/^\[model\]$/[model]\ndtype = \"$dtype\"/" \
    "$root/examples/specs/gpt2_block.toml" >"$spec"
  "$root/build/bin/tfc" "$spec" --target=cuda -o "$dir/gpt2_block.o"
  cc -O2 -I "$root/runtime/include" -I "$dir" -DTFC_HEADER='"gpt2_block.h"' \
    -DTFC_NAME=gpt2_block -DTFC_UNAME=GPT2_BLOCK \
    "$root/examples/benchmark/bench_cuda.c" "$dir/gpt2_block.o" \
    -L "$root/build/lib" -ltfc_runtime -lpthread -lm -ldl -o "$dir/bench_cuda"

  echo "gpt2_block dtype $dtype batch $batch seq $seq, $iters iterations (medians, ms)"
  tfc=$("$dir/bench_cuda" "$batch" "$seq" "$iters") || { echo "$tfc"; exit 1; }
  echo "$tfc"
  amp=()
  [ "$dtype" = bf16 ] && amp=(--autocast-bf16)
  torch_fwd=$(/usr/bin/python3 "$root/examples/benchmark/torch_model.py" \
    "$spec" 1 "$batch" "$seq" "$iters" --device=cuda "${amp[@]}" 2>&1 |
    grep -v '^torch_threads' | tail -n 1) || true
  torch_fb=$(/usr/bin/python3 "$root/examples/benchmark/torch_model.py" \
    "$spec" 1 "$batch" "$seq" "$iters" --device=cuda --train "${amp[@]}" 2>&1 |
    grep -v '^torch_threads' | tail -n 1) || true
  echo "$torch_fwd"
  echo "$torch_fb"
  echo "ratio tfc/torch $dtype forward: $(ratio "$tfc" tfc_cuda_forward "$torch_fwd")"
  echo "ratio tfc/torch $dtype forward+backward:" \
    "$(ratio "$tfc" tfc_cuda_forward_backward "$torch_fb")"
done
