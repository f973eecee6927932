#!/usr/bin/env bash
# Fused against --no-fusion, forward and forward + backward, in one process
# (examples/benchmark/bench_fusion.c alternates the two), 1 and 2 threads:
# gpt2_block (batch 4, seq 256), copy_task (batch 32, seq 64) and a
# one-block LLaMA-style SwiGLU model (batch 4, seq 256). Also prints how far
# the two disagree (max |fused - unfused| / max |unfused| per tensor).
#
#   scripts/bench-fusion.sh [iterations] [tfc flags for the fused build...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
iters=${1:-10}
shift || true
out="$root/out/bench-fusion"
mkdir -p "$out"
bash "$root/scripts/build.sh" >/dev/null

# variant SPEC NAME [flags]: SPEC compiled under NAME.
variant() {
  local spec=$1 name=$2
  shift 2
  sed -E "s/^name = \".*\"/name = \"$name\"/" "$spec" >"$out/$name.toml"
  "$root/build/bin/tfc" "$out/$name.toml" -o "$out/$name.o" "$@"
}

# pair NAME SPEC: the benchmark binary of NAME fused against NAME unfused.
pair() {
  local name=$1 spec=$2
  variant "$spec" "${name}_f" "${fused_flags[@]}"
  variant "$spec" "${name}_u" --no-fusion
  cc -O2 -I "$root/runtime/include" -I "$out" \
    -I "$root/examples/benchmark" \
    -DA_NAME="${name}_f" -DA_UNAME="$(echo "${name}_f" | tr a-z A-Z)" \
    -DA_HEADER="\"${name}_f.h\"" \
    -DB_NAME="${name}_u" -DB_UNAME="$(echo "${name}_u" | tr a-z A-Z)" \
    -DB_HEADER="\"${name}_u.h\"" \
    "$root/examples/benchmark/bench_fusion.c" "$out/${name}_f.o" \
    "$out/${name}_u.o" -L "$root/build/lib" -ltfc_runtime -lpthread -lm \
    -o "$out/bench_$name"
}

fused_flags=("$@")
# A LLaMA-style block without embedding and head: RMSNorm, SwiGLU, no bias.
sed -e 's/^depth = 8/depth = 1/' -e '/^\[embedding\]/,$d' \
  "$root/examples/specs/llama.toml" >"$out/llama_block.toml"
pair gpt2 "$root/examples/specs/gpt2_block.toml"
pair copy "$root/examples/specs/copy_task.toml"
pair llama "$out/llama_block.toml"

for job in "gpt2 4 256" "copy 32 64" "llama 4 256"; do
  set -- $job
  for threads in 1 2; do
    echo "== $1 batch $2 seq $3 threads $threads"
    "$out/bench_$1" "$threads" "$2" "$3" "$iters"
  done
done
