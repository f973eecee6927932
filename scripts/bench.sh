#!/usr/bin/env bash
# Benchmarks (not tests), all references timed in the same run, 1 and 2
# threads, medians in milliseconds:
#  1. forward: one GPT-2 block (d_model 768, 12 heads; batch 4, seq 256),
#     compiled --forward-only, against OpenBLAS sgemm doing only the block's
#     matmuls and against PyTorch eager (no_grad);
#  2. forward + backward: the same block at seq 256 and 1024, and the
#     copy-task model (24 blocks, width 128; batch 32, seq 64), fused (the
#     default) and unfused (tfc --no-fusion), against OpenBLAS doing the
#     same matmuls (forward, input and weight gradients) and PyTorch eager
#     autograd.
#
#   scripts/bench.sh [iterations]
#
# OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset for the references so
# OpenBLAS (and PyTorch's BLAS) use this CPU's kernels; the run prints which
# sgemm kernel OpenBLAS picked.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
iters=${1:-10}
out="$root/out/bench"
mkdir -p "$out"
bash "$root/scripts/build.sh" >/dev/null
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

# build NAME SPEC SOURCE [tfc flags...]: object + benchmark binary.
build() {
  local name=$1 spec=$2 source=$3
  shift 3
  "$root/build/bin/tfc" "$spec" -o "$out/$name.o" "$@"
  cc -O2 -I "$root/runtime/include" -I "$out" -DTFC_HEADER="\"$name.h\"" \
    -DTFC_NAME="$name" -DTFC_UNAME="$(echo "$name" | tr a-z A-Z)" \
    "$root/examples/benchmark/$source" "$out/$name.o" \
    -L "$root/build/lib" -ltfc_runtime -lopenblas -lpthread -lm \
    -o "$out/bench_$name"
}

# The forward benchmark compiles the block under its own name so the
# forward-only header does not clash with the training one.
sed 's/^name = "gpt2_block"/name = "gpt2_block_inference"/' \
  "$root/examples/specs/gpt2_block.toml" > "$out/gpt2_block_inference.toml"
build gpt2_block_inference "$out/gpt2_block_inference.toml" bench_model.c --forward-only
for name in gpt2_block copy_task; do
  build $name "$root/examples/specs/$name.toml" bench_model.c
  sed "s/^name = \"$name\"/name = \"${name}_unfused\"/" \
    "$root/examples/specs/$name.toml" > "$out/${name}_unfused.toml"
  build ${name}_unfused "$out/${name}_unfused.toml" bench_model.c --no-fusion
done

kernel=$(OPENBLAS_VERBOSE=2 "$out/bench_gpt2_block_inference" 1 1 1 1 2>&1 |
  grep -oE 'Core: [A-Za-z0-9]+' | head -n 1 || true)
echo "OpenBLAS ${kernel:-kernel unknown}; median of $iters runs; ms"

value() { echo "$1" | awk -v k="$2" '$1 == k {print $2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

echo
echo "1. forward: gpt2 block (d_model 768, 12 heads), batch 4, seq 256"
printf '%-8s %10s %14s %10s %10s %10s\n' threads tfc openblas-mm torch tfc/blas tfc/torch
for threads in 1 2; do
  r=$("$out/bench_gpt2_block_inference" "$threads" 4 256 "$iters")
  tfc=$(value "$r" tfc_forward); blas=$(value "$r" openblas_matmuls)
  torch=$(/usr/bin/python3 "$root/examples/benchmark/torch_model.py" \
    "$out/gpt2_block_inference.toml" "$threads" 4 256 "$iters" | awk '{print $2}')
  printf '%-8s %10.2f %14.2f %10.2f %10s %10s\n' "$threads" "$tfc" "$blas" \
    "$torch" "$(ratio "$tfc" "$blas")" "$(ratio "$tfc" "$torch")"
done

echo
echo "2. forward + backward (fused = default, unfused = --no-fusion)"
printf '%-22s %-7s %9s %9s %9s %12s %9s %9s %9s %9s\n' model threads fwd \
  fused unfused openblas-mm torch fu/unfu fu/blas fu/torch
for job in "gpt2_block 4 256" "gpt2_block 4 1024" "copy_task 32 64"; do
  set -- $job
  name=$1 batch=$2 seq=$3
  spec="$root/examples/specs/$name.toml"
  for threads in 1 2; do
    r=$("$out/bench_$name" "$threads" "$batch" "$seq" "$iters")
    fwd=$(value "$r" tfc_forward); fb=$(value "$r" tfc_forward_backward)
    blas=$(value "$r" openblas_matmuls)
    ru=$("$out/bench_${name}_unfused" "$threads" "$batch" "$seq" "$iters")
    unfused=$(value "$ru" tfc_forward_backward)
    torch=$(/usr/bin/python3 "$root/examples/benchmark/torch_model.py" \
      "$spec" "$threads" "$batch" "$seq" "$iters" --train | awk '{print $2}')
    printf '%-22s %-7s %9.1f %9.1f %9.1f %12.1f %9.1f %9s %9s %9s\n' \
      "$name b$batch s$seq" "$threads" "$fwd" "$fb" "$unfused" "$blas" \
      "$torch" "$(ratio "$fb" "$unfused")" "$(ratio "$fb" "$blas")" \
      "$(ratio "$fb" "$torch")"
  done
done
