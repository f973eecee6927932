#!/usr/bin/env bash
# Data-parallel scaling of tfc-train (issue 17): tokens/s of 1 and 2 MPI
# ranks with one thread each, and the time per step each rank spends in
# MPI_Allreduce, on the copy-task model (24 blocks, width 128, batch 32,
# seq 64) and on the GPT-2 block (d_model 768, with a byte embedding and
# head so that it has a loss; batch 4, seq 256, the fortunes text).
#
#   bash scripts/bench-train.sh [steps]      (default 30; the first 5 are
#                                             not timed)
#
# Same global batch on every rank count: 2 ranks take half each. Time it on
# a quiet machine; the table says what the load was.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
steps=${1:-30}
out="$root/out/bench-train"
train="$root/build/bin/tfc-train"
mpirun="mpirun --allow-run-as-root --oversubscribe --mca btl self,vader --mca oob_tcp_if_include lo"
bash "$root/scripts/build.sh" >/dev/null
"$train" --version | grep -q "MPI: yes" || {
  echo "bench-train: tfc-train was built without MPI (install libopenmpi-dev)"; exit 1; }
mkdir -p "$out"
corpus="$out/corpus.txt"
bash "$root/scripts/corpus.sh" "$corpus" >/dev/null

config="$root/examples/benchmark/train_scaling.toml"
copy=(--set "train.steps=$steps")
gpt2=(--set "train.steps=$steps" --set "model.spec=\"$root/examples/specs/gpt2_block.toml\""
      --set "grid.spec.embedding.vocab=[256]" --set 'grid.spec.embedding.positions=["learned"]'
      --set 'grid.spec.head.loss=["cross_entropy"]' --set 'data.source="text"'
      --set "data.path=\"$corpus\"" --set train.batch=4 --set train.seq=256)

echo "machine: $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-12s %5s %10s %8s %10s %10s\n" model ranks tok/s speedup step_ms comm_ms
for model in copy gpt2; do
  base=""
  for np in 1 2; do
    dir="$out/$model-np$np"
    rm -rf "$dir"
    if [ "$model" = copy ]; then args=("${copy[@]}"); else args=("${gpt2[@]}"); fi
    $mpirun -np "$np" "$train" "$config" --out "$dir" "${args[@]}" > /dev/null 2> "$dir.log" ||
      { cat "$dir.log"; exit 1; }
    log=$(ls "$dir"/*/log.csv)
    # Steps 6..N (the log has a header line): the wall time from elapsed_s
    # (column 7), the time in MPI_Allreduce from comm_s (column 8).
    tokens=$([ "$model" = copy ] && echo $((32 * 64)) || echo $((4 * 256)))
    read -r tps per_step comm < <(awk -F, -v k="$tokens" '
      NR == 6 { a = $7 } NR > 6 { b = $7; c += $8; n++ }
      END { printf "%.0f %.1f %.2f\n", k * n / (b - a), 1000 * (b - a) / n,
                   1000 * c / n }' "$log")
    [ -z "$base" ] && base=$tps
    speedup=$(awk -v a="$tps" -v b="$base" 'BEGIN { printf "%.2f", a / b }')
    printf "%-12s %5s %10s %8s %10s %10s\n" "$model" "$np" "$tps" "$speedup" "$per_step" "$comm"
  done
done
echo "load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
