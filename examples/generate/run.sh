#!/usr/bin/env bash
# Train a byte-level language model on a text corpus with tfc-compiled
# forward and backward, then prompt it: prefill + KV-cache decoding with
# the runtime's sampler, streamed, with tokens/s.
#
#   examples/generate/run.sh [steps] [prompt]
#
# steps: total training steps (default 300, a few minutes on 2 cores; the
# checkpoint out/generate/byte_lm.ckpt is resumed when it exists, so a
# second run with more steps continues the first). The corpus is the
# `fortunes` package's text (/usr/share/games/fortunes), else tfc's own
# README and docs. THREADS sets the thread count (default: every core).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
steps=${1:-300}
prompt=${2:-"The "}
threads=${THREADS:-0}
out="$root/out/generate"
here="$root/examples/generate"
mkdir -p "$out"
bash "$root/scripts/build.sh" >/dev/null

corpus="$out/corpus.txt"
rm -f "$corpus"
echo "== $(bash "$root/scripts/corpus.sh" "$corpus")"

"$root/build/bin/tfc" "$here/byte_lm.toml" -o "$out/byte_lm.o"
for prog in train generate; do
  cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I "$root/runtime/include" -I "$out" \
    "$here/$prog.c" "$out/byte_lm.o" -L "$root/build/lib" \
    -ltfc_safetensors -lcjson -ltfc_runtime -lpthread -lm -ldl -o "$out/$prog"
done

echo "== train $steps steps (batch 16 x 256 bytes) -> out/generate/byte_lm.ckpt"
"$out/train" "$corpus" "$out/byte_lm.ckpt" "$steps" 16 "$threads" | tee "$out/loss.csv" |
  awk -F, 'NR > 1 && ($1 % 50 == 0 || NR == 2) { printf "  step %5d  lr %.2e  loss %.3f  (%.2f bits/byte)\n", $1, $2, $3, $4 }'

echo "== generate: greedy, then sampled (temperature 0.8, top-k 40, top-p 0.95)"
"$out/generate" "$out/byte_lm.ckpt" "$prompt" 200 0 0 1 1 "$threads"
echo
"$out/generate" "$out/byte_lm.ckpt" "$prompt" 400 0.8 40 0.95 1 "$threads"
