#!/usr/bin/env bash
# Benchmarks (not tests), every reference timed in the same run, on 1 and 2
# threads, medians in milliseconds:
#  1. forward: one GPT-2 block (d_model 768, 12 heads; batch 4, seq 256),
#     compiled --forward-only;
#  2. forward + backward: the same block at seq 256 and 1024, with grouped
#     query attention (12 query / 4 key-value heads) and RoPE at seq 1024,
#     at seq 2048 plain and with a causal sliding window of 256 keys, and
#     the copy-task model (24 blocks, width 128; batch 32, seq 64), fused
#     (the default) and unfused (tfc --no-fusion);
#  3. bf16: the GPT-2 block (batch 4, seq 256) with dtype = "bf16" against
#     f32, forward and forward + backward; on a CPU with AVX512-BF16 also
#     the bf16 build without vdpbf16ps (the rounded-f32 micro-kernel);
#  4. where the time goes: the per-op profile (TFC_PROFILE=1) of the block's
#     and the copy-task model's forward + backward, 1 and 2 threads;
#  5. memory for time: the block and the copy-task model with each
#     train.recompute policy, forward + backward time beside the workspace
#     and its saved values (tfc --emit=memory-report).
# Beside tfc on each row:
#  - GFLOP/s and % of the machine's FP32 FMA peak, measured first
#    (examples/benchmark/fma_peak.c), from the matmul FLOPs the model needs
#    (examples/benchmark/model_flops.py: causal attention's half, the
#    backward's recompute);
#  - the machine's memory bandwidth, 1 and 2 threads, measured first
#    (examples/benchmark/mem_bandwidth.c: STREAM's triad), which bounds the
#    row-wise ops and how they scale, so how close a small model's 2-thread
#    row can come to 2x;
#  - OpenBLAS and oneDNN doing only the model's matmuls (bench_matmuls.c);
#  - PyTorch eager on the oracle's model (torch_model.py, which sets
#    OPENBLAS_NUM_THREADS before torch loads);
#  - `used`: CPU time over wall time of each program's timed part, the
#    cores tfc / OpenBLAS / oneDNN / PyTorch really kept busy (below the
#    row's threads when the machine lends less than whole cores).
#
#   scripts/bench.sh [iterations [ROWS]]
#
# ROWS, an extended regex, keeps the rows whose model name matches it
# (e.g. 'gpt2_(long|window)'); the default runs them all.
#
# OpenBLAS picks its kernel from the CPU; a version older than the CPU
# falls back to a generic SSE kernel (Prescott), which would make it an
# unfair reference: then OPENBLAS_CORETYPE is set to the best kernel the
# CPU's features allow, for OpenBLAS and PyTorch alike, and the run says so.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
iters=${1:-10}
rows=${2:-.}
out="$root/out/bench"
bench="$root/examples/benchmark"
mkdir -p "$out"
bash "$root/scripts/build.sh" >/dev/null
bash "$root/scripts/bench-build.sh" "$root" "$out"
cc -O2 -fopenmp -I "$root/runtime/include" "$bench/bench_matmuls.c" \
  -ldnnl -lopenblas -o "$out/bench_matmuls"
cc -O2 -pthread "$bench/fma_peak.c" -o "$out/fma_peak"
cc -O2 -pthread "$bench/mem_bandwidth.c" -o "$out/mem_bandwidth"

value() { echo "$1" | awk -v k="$2" '$1 == k {print $2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
gflops() { awk -v f="$1" -v ms="$2" 'BEGIN {printf "%.0f", f / ms / 1e6}'; }
percent() { awk -v g="$1" -v p="$2" 'BEGIN {printf "%.0f%%", 100 * g / p}'; }

# The OpenBLAS kernel: its own choice unless that is a generic one.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
echo "forward 1 64 64 64" >"$out/tiny.txt"
core=$(OPENBLAS_VERBOSE=2 "$out/bench_matmuls" openblas 1 "$out/tiny.txt" 1 \
  2>&1 | grep -oE 'Core: [A-Za-z0-9]+' | head -n 1 | cut -d' ' -f2 || true)
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { [[ " $flags " == *" $1 "* ]]; }
best=""
if has avx512_bf16; then best=Cooperlake
elif has avx512f && has avx512bw && has avx512vl; then best=SkylakeX
elif has avx2; then best=Haswell; fi
case "${core:-unknown}" in
Prescott | Nehalem | Core2 | Penryn | Dunnington | Atom | Katmai | unknown)
  if [ -n "$best" ]; then
    export OPENBLAS_CORETYPE=$best
    blas_note="$best (OPENBLAS_CORETYPE; its own choice was the generic ${core:-unknown})"
  else
    blas_note="${core:-unknown}"
  fi ;;
*) blas_note="$core (its own choice)" ;;
esac

peak1=$(value "$("$out/fma_peak" 1)" fma_peak_gflops)
peak_out=$("$out/fma_peak" 2)
peak2=$(value "$peak_out" fma_peak_gflops)
bw1=$(value "$("$out/mem_bandwidth" 1)" mem_bandwidth_gbs)
bw2=$(value "$("$out/mem_bandwidth" 2)" mem_bandwidth_gbs)
dnnl_isa=$(value "$("$out/bench_matmuls" onednn 1 "$out/tiny.txt" 1)" onednn_isa)

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "FP32 FMA peak ($(value "$peak_out" fma_isa), measured): 1 thread $peak1 GFLOP/s, 2 threads $peak2 GFLOP/s"
echo "memory bandwidth (STREAM triad, measured): 1 thread $bw1 GB/s, 2 threads $bw2 GB/s ($(ratio "$bw2" "$bw1")x)"
echo "OpenBLAS kernel $blas_note; oneDNN kernels $dnnl_isa"
echo "median of $iters runs; ms. GF/s, %peak: tfc's; used: cores busy (CPU/wall) of tfc/openblas/onednn/torch"

# refs SPEC THREADS BATCH SEQ [--train]: the references' output, one line
# each: the matmul-only libraries, then PyTorch.
refs() {
  local spec=$1 threads=$2 batch=$3 seq=$4 train=${5:-}
  local pass='^forward'
  [ -z "$train" ] || pass='.'
  /usr/bin/python3 "$bench/model_flops.py" "$spec" "$batch" "$seq" --matmuls |
    grep "$pass" >"$out/matmuls.txt"
  "$out/bench_matmuls" openblas "$threads" "$out/matmuls.txt" "$iters"
  "$out/bench_matmuls" onednn "$threads" "$out/matmuls.txt" "$iters"
  /usr/bin/python3 "$bench/torch_model.py" "$spec" "$threads" "$batch" \
    "$seq" "$iters" $train
  /usr/bin/python3 "$bench/model_flops.py" "$spec" "$batch" "$seq"
}

used() { printf '%.1f/%.1f/%.1f/%.1f' "$@"; }

echo
echo "1. forward: gpt2 block (d_model 768, 12 heads), batch 4, seq 256"
printf '%-7s %8s %6s %6s %9s %8s %8s %9s %9s %9s  %s\n' threads tfc GF/s \
  %peak openblas onednn torch tfc/blas tfc/dnnl tfc/torch used
spec="$out/gpt2_block_inference.toml"
for threads in 1 2; do
  [[ gpt2_block_inference =~ $rows ]] || continue
  peak=$([ "$threads" = 1 ] && echo "$peak1" || echo "$peak2")
  r=$("$out/bench_gpt2_block_inference" "$threads" 4 256 "$iters")
  x=$(refs "$spec" "$threads" 4 256)
  tfc=$(value "$r" tfc_forward)
  blas=$(value "$x" openblas_forward) dnnl=$(value "$x" onednn_forward)
  torch=$(value "$x" torch_eager)
  g=$(gflops "$(value "$x" forward_flops)" "$tfc")
  printf '%-7s %8.1f %6s %6s %9.1f %8.1f %8.1f %9s %9s %9s  %s\n' "$threads" \
    "$tfc" "$g" "$(percent "$g" "$peak")" "$blas" "$dnnl" "$torch" \
    "$(ratio "$tfc" "$blas")" "$(ratio "$tfc" "$dnnl")" \
    "$(ratio "$tfc" "$torch")" "$(used "$(value "$r" tfc_threads)" \
    "$(value "$x" openblas_threads)" "$(value "$x" onednn_threads)" \
    "$(value "$x" torch_threads)")"
done

echo
echo "2. forward + backward (fused = default, unfused = --no-fusion)"
printf '%-24s %-3s %7s %7s %7s %5s %5s %8s %7s %7s %7s %7s %7s %8s  %s\n' \
  model thr fwd fused unfused GF/s %peak openblas onednn torch fu/unfu \
  fu/blas fu/dnnl fu/torch used
for job in "gpt2_block 4 256" "gpt2_block 4 1024" "gpt2_gqa_rope 4 1024" \
  "gpt2_long 2 2048" "gpt2_window256 2 2048" "copy_task 32 64"; do
  set -- $job
  name=$1 batch=$2 seq=$3
  [[ $name =~ $rows ]] || continue
  spec="$out/$name.toml"
  for threads in 1 2; do
    peak=$([ "$threads" = 1 ] && echo "$peak1" || echo "$peak2")
    r=$("$out/bench_$name" "$threads" "$batch" "$seq" "$iters")
    ru=$("$out/bench_${name}_unfused" "$threads" "$batch" "$seq" "$iters")
    x=$(refs "$spec" "$threads" "$batch" "$seq" --train)
    fwd=$(value "$r" tfc_forward) fb=$(value "$r" tfc_forward_backward)
    unfused=$(value "$ru" tfc_forward_backward)
    blas=$(value "$x" openblas_forward_backward)
    dnnl=$(value "$x" onednn_forward_backward)
    torch=$(value "$x" torch_eager_train)
    g=$(gflops "$(value "$x" forward_backward_flops)" "$fb")
    printf '%-24s %-3s %7.1f %7.1f %7.1f %5s %5s %8.1f %7.1f %7.1f %7s %7s %7s %8s  %s\n' \
      "$name b$batch s$seq" "$threads" "$fwd" "$fb" "$unfused" "$g" \
      "$(percent "$g" "$peak")" "$blas" "$dnnl" "$torch" \
      "$(ratio "$fb" "$unfused")" "$(ratio "$fb" "$blas")" \
      "$(ratio "$fb" "$dnnl")" "$(ratio "$fb" "$torch")" \
      "$(used "$(value "$r" tfc_threads)" "$(value "$x" openblas_threads)" \
      "$(value "$x" onednn_threads)" "$(value "$x" torch_threads)")"
  done
done
echo
echo "3. bf16 linear layers (dtype = \"bf16\"): gpt2 block, batch 4, seq 256"
printf '%-7s %8s %8s %8s %7s %8s %8s %8s %7s\n' threads f32_fwd bf16_fwd \
  fma_fwd f32/bf16 f32_fb bf16_fb fma_fb f32/bf16
for threads in 1 2; do
  [[ gpt2_bf16 =~ $rows ]] || continue
  [ -x "$out/bench_gpt2_bf16" ] || continue
  r32=$("$out/bench_gpt2_block" "$threads" 4 256 "$iters")
  r16=$("$out/bench_gpt2_bf16" "$threads" 4 256 "$iters")
  fma_fwd=- fma_fb=-
  if [ -x "$out/bench_gpt2_bf16_fma" ]; then
    rf=$("$out/bench_gpt2_bf16_fma" "$threads" 4 256 "$iters")
    fma_fwd=$(printf '%.1f' "$(value "$rf" tfc_forward)")
    fma_fb=$(printf '%.1f' "$(value "$rf" tfc_forward_backward)")
  fi
  f32_fwd=$(value "$r32" tfc_forward) f32_fb=$(value "$r32" tfc_forward_backward)
  bf_fwd=$(value "$r16" tfc_forward) bf_fb=$(value "$r16" tfc_forward_backward)
  printf '%-7s %8.1f %8.1f %8s %7s %8.1f %8.1f %8s %7s\n' "$threads" \
    "$f32_fwd" "$bf_fwd" "$fma_fwd" "$(ratio "$f32_fwd" "$bf_fwd")" \
    "$f32_fb" "$bf_fb" "$fma_fb" "$(ratio "$f32_fb" "$bf_fb")"
done
echo
echo "4. where the time goes (TFC_PROFILE=1, runtime.h): forward + backward by op, ms"
echo "   summed over the $iters timed steps, % of the entry point's time"
for job in "gpt2_block 4 256" "copy_task 32 64"; do
  set -- $job
  name=$1 batch=$2 seq=$3
  [[ $name =~ $rows ]] || continue
  for threads in 1 2; do
    echo "$name b$batch s$seq, $threads thread(s):"
    TFC_PROFILE=1 "$out/bench_$name" "$threads" "$batch" "$seq" "$iters" |
      sed -n '/^profile of/,$p' | tail -n +2 | sed 's/^/  /'
  done
done
echo
echo "5. recompute (train.recompute): forward + backward ms, and MiB of the workspace"
echo "   and of the values forward saves for backward (tfc --emit=memory-report)"
printf '%-20s %-10s %9s %9s %8s %8s %8s %8s\n' model recompute workspace saved \
  fb_1thr x_none fb_2thr x_none
for job in "gpt2_block 4 256" "copy_task 32 64"; do
  set -- $job
  model=$1 batch=$2 seq=$3
  [[ ${model}_rc =~ $rows ]] || continue
  base1="" base2=""
  for policy in none attention ffn block; do
    name=$model
    [ "$policy" = none ] || name=${model}_rc_$policy
    [ -x "$out/bench_$name" ] || continue
    report=$("$root/build/bin/tfc" "$out/$name.toml" --emit=memory-report \
      --batch "$batch" --seq "$seq")
    ws=$(echo "$report" | awk '$3 == "workspace" {printf "%.1f", $1 / 1048576}')
    saved=$(echo "$report" |
      awk '$3 == "saved" && $5 == "backward" {printf "%.1f", $1 / 1048576}')
    t1=$(value "$("$out/bench_$name" 1 "$batch" "$seq" "$iters" tfc-only)" \
      tfc_forward_backward)
    t2=$(value "$("$out/bench_$name" 2 "$batch" "$seq" "$iters" tfc-only)" \
      tfc_forward_backward)
    [ -n "$base1" ] || base1=$t1 base2=$t2
    printf '%-20s %-10s %9s %9s %8.1f %8s %8.1f %8s\n' "$model b$batch s$seq" \
      "$policy" "$ws" "${saved:-0}" "$t1" "$(ratio "$t1" "$base1")" "$t2" \
      "$(ratio "$t2" "$base2")"
  done
done
echo
echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
