#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: install what is missing, build
# tfc, compile examples/specs/gpt2.toml to an object and a header, link them
# into examples/gpt2/main.c with the runtime, and run a forward pass; then
# train the copy task of seed 001 briefly (pre- vs post-LN) with compiled
# forward and backward, and print where the plots went; then train a
# byte-level language model for a few minutes and prompt it (prefill +
# KV-cache decoding + sampling, examples/generate).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/out"
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"
mkdir -p "$out"

echo "== tfc examples/specs/gpt2.toml -o out/gpt2.o"
"$root/build/bin/tfc" "$root/examples/specs/gpt2.toml" -o "$out/gpt2.o"
ls -l "$out/gpt2.o" "$out/gpt2.h"

echo "== cc examples/gpt2/main.c out/gpt2.o -ltfc_runtime"
cc -O2 -I "$root/runtime/include" -I "$out" "$root/examples/gpt2/main.c" \
  "$out/gpt2.o" -L "$root/build/lib" -ltfc_runtime -lpthread -lm \
  -o "$out/gpt2_demo"

echo "== out/gpt2_demo (batch 2, seq 64)"
"$out/gpt2_demo" 2 64

echo
echo "== examples/copy_task/run.sh short (seed 001's copy task, pre- vs post-LN)"
bash "$root/examples/copy_task/run.sh" short

echo
echo "== examples/generate/run.sh 300 (a byte-level LM: train, then generate with a KV cache)"
# A fresh run each time (the script resumes a checkpoint that exists).
rm -f "$out/generate/byte_lm.ckpt"
bash "$root/examples/generate/run.sh" 300
