#!/usr/bin/env bash
# Builds the benchmark binaries of scripts/bench.sh with one tree's compiler
# and runtime, from this tree's specs and benchmark sources:
#
#   scripts/bench-build.sh TFC_ROOT OUT
#
# TFC_ROOT is a checkout whose build/ holds bin/tfc and lib/libtfc_runtime.a
# (this tree, or an older one to compare against: scripts/bench-pair.sh).
# OUT receives bench_gpt2_block_inference (--forward-only), bench_gpt2_block,
# bench_copy_task and their --no-fusion builds bench_*_unfused.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
tfc_root="$(cd "$1" && pwd)"
out=$2
mkdir -p "$out"

# build NAME SPEC [tfc flags...]: object + benchmark binary.
build() {
  local name=$1 spec=$2
  shift 2
  "$tfc_root/build/bin/tfc" "$spec" -o "$out/$name.o" "$@"
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

build gpt2_block_inference "$(renamed gpt2_block gpt2_block_inference)" \
  --forward-only
for name in gpt2_block copy_task; do
  build $name "$here/examples/specs/$name.toml"
  build ${name}_unfused "$(renamed $name ${name}_unfused)" --no-fusion
done
