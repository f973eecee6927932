#!/usr/bin/env bash
# Builds the benchmark binaries of scripts/bench.sh with one tree's compiler
# and runtime, from this tree's specs and benchmark sources:
#
#   scripts/bench-build.sh TFC_ROOT OUT
#
# TFC_ROOT is a checkout whose build/ holds bin/tfc and lib/libtfc_runtime.a
# (this tree, or an older one to compare against: scripts/bench-pair.sh).
# OUT receives bench_gpt2_block_inference (--forward-only), bench_gpt2_block,
# bench_copy_task, the attention variants of the GPT-2 block (gpt2_gqa_rope:
# 12 query heads sharing 4 key/value heads, RoPE; gpt2_long: max_seq 2048;
# gpt2_window256: the same with a causal sliding window of 256 keys), each
# spec as OUT/NAME.toml, and their --no-fusion builds bench_*_unfused; the
# GPT-2 block with dtype = "bf16" (gpt2_bf16), and on a CPU with
# AVX512-BF16 also without its vdpbf16ps (gpt2_bf16_fma: --mattr=-avx512bf16,
# the rounded-f32 micro-kernel of other CPUs); the GPT-2 block and the
# copy-task model with each train.recompute policy but "none"
# (NAME_rc_POLICY).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tfc_root="$(cd "$1" && pwd)"
out=$2
mkdir -p "$out"

# build NAME SPEC [tfc flags...]: object + benchmark binary.
build() {
  local name=$1 spec=$2
  shift 2
  # `|| return`: set -e does not stop a function called in a condition.
  "$tfc_root/build/bin/tfc" "$spec" -o "$out/$name.o" "$@" || return
  cc -O2 -I "$tfc_root/runtime/include" -I "$out" \
    -DTFC_HEADER="\"$name.h\"" -DTFC_NAME="$name" \
    -DTFC_UNAME="$(echo "$name" | tr a-z A-Z)" \
    "$here/examples/benchmark/bench_model.c" "$out/$name.o" \
    -L "$tfc_root/build/lib" -ltfc_runtime -lpthread -lm \
    -o "$out/bench_$name"
}

# renamed NAME NEW: the example spec NAME under the model name NEW, so that
# each build's header and symbols have their own names.
renamed() {
  sed "s/^name = \"$1\"/name = \"$2\"/" "$here/examples/specs/$1.toml" \
    >"$out/$2.toml"
  echo "$out/$2.toml"
}

# variant NAME SED [ATTENTION KEYS...]: the GPT-2 block as NAME, edited by
# SED, with keys appended to its [attention] section (its last).
variant() {
  local name=$1 edit=$2
  shift 2
  { sed -e "s/^name = \"gpt2_block\"/name = \"$name\"/" -e "$edit" \
    "$here/examples/specs/gpt2_block.toml"; printf '%s\n' "$@"; } \
    >"$out/$name.toml"
}
cp "$here/examples/specs/gpt2_block.toml" "$here/examples/specs/copy_task.toml" \
  "$out/"
variant gpt2_gqa_rope "" "n_kv_heads = 4" 'positions = "rope"'
variant gpt2_long "s/^max_seq = 1024/max_seq = 2048/"
variant gpt2_window256 "s/^max_seq = 1024/max_seq = 2048/" \
  "sliding_window = 256"

# both NAME: the fused and the --no-fusion build of OUT/NAME.toml.
both() {
  local name=$1
  build "$name" "$out/$name.toml" || return
  sed "s/^name = \"$name\"/name = \"${name}_unfused\"/" "$out/$name.toml" \
    >"$out/${name}_unfused.toml"
  build "${name}_unfused" "$out/${name}_unfused.toml" --no-fusion
}

build gpt2_block_inference "$(renamed gpt2_block gpt2_block_inference)" \
  --forward-only
both gpt2_block
both copy_task
# An older tree (scripts/bench-pair.sh) may not know a variant's keys.
for name in gpt2_gqa_rope gpt2_long gpt2_window256; do
  both $name || echo "bench-build: $name not built by $tfc_root" >&2
done
variant gpt2_bf16 's/^\[model\]/[model]\ndtype = "bf16"/'
build gpt2_bf16 "$out/gpt2_bf16.toml" ||
  echo "bench-build: gpt2_bf16 not built by $tfc_root" >&2
if grep -qw avx512_bf16 /proc/cpuinfo; then
  sed 's/^name = "gpt2_bf16"/name = "gpt2_bf16_fma"/' "$out/gpt2_bf16.toml" \
    >"$out/gpt2_bf16_fma.toml"
  build gpt2_bf16_fma "$out/gpt2_bf16_fma.toml" --mattr=-avx512bf16 ||
    echo "bench-build: gpt2_bf16_fma not built by $tfc_root" >&2
fi
# The recompute policies: the spec with a [train] section appended.
for name in gpt2_block copy_task; do
  for policy in attention ffn block; do
    { sed "s/^name = \"$name\"/name = \"${name}_rc_$policy\"/" \
      "$out/$name.toml"; printf '\n[train]\nrecompute = "%s"\n' "$policy"; } \
      >"$out/${name}_rc_$policy.toml"
    build "${name}_rc_$policy" "$out/${name}_rc_$policy.toml" ||
      echo "bench-build: ${name}_rc_$policy not built by $tfc_root" >&2
  done
done
