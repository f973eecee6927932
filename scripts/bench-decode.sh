#!/usr/bin/env bash
# Decoding with a KV cache: time per token at contexts 128, 1024 and 4096
# (examples/benchmark/bench_decode.c), each beside the full forward over
# that context (what a token costs without a cache) and the time to read
# every weight once at the copy bandwidth measured in the same run.
# examples/benchmark/decode_llama.toml: ~140M parameters, GQA, RoPE.
#
#   scripts/bench-decode.sh [threads] [iterations] [contexts...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
threads=${1:-0}
iters=${2:-20}
shift 2 || shift $# || true
out="$root/out/bench-decode"
mkdir -p "$out"
bash "$root/scripts/build.sh" >/dev/null
"$root/build/bin/tfc" "$root/examples/benchmark/decode_llama.toml" \
  --forward-only -o "$out/decode_llama.o"
cc -O2 -std=c11 -D_POSIX_C_SOURCE=200112L -I "$root/runtime/include" \
  -I "$out" -I "$root/examples/benchmark" \
  -DTFC_HEADER='"decode_llama.h"' -DTFC_NAME=decode_llama \
  -DTFC_UNAME=DECODE_LLAMA "$root/examples/benchmark/bench_decode.c" \
  "$out/decode_llama.o" -L "$root/build/lib" -ltfc_runtime -lpthread -lm \
  -o "$out/bench_decode"
"$out/bench_decode" "$threads" "$iters" "$@"
