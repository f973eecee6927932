#!/usr/bin/env bash
# Compares this tree's compiled models against another tree's, run for run:
# the same benchmark binaries as scripts/bench.sh (built from this tree's
# specs and bench_model.c with each tree's tfc and runtime), each binary
# of one tree right after the same binary of the other, round after round,
# so that a drift of the machine's speed hits both alike. Prints per row
# the median ms of each and the median, min and max of the paired
# after/before ratios. The references (OpenBLAS, oneDNN, PyTorch) are the
# same code for both trees and are not run: a row's ratio to them changes
# by exactly after/before.
#
#   scripts/bench-pair.sh BEFORE_ROOT [rounds] [iterations]
#
# BEFORE_ROOT is a checkout with build/bin/tfc and build/lib built (e.g. a
# `git worktree` of the base commit after `bash scripts/build.sh`).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
before_root=$1 rounds=${2:-5} iters=${3:-5}
out="$root/out/bench-pair"
bash "$root/scripts/build.sh" >/dev/null
bash "$root/scripts/bench-build.sh" "$before_root" "$out/before"
bash "$root/scripts/bench-build.sh" "$root" "$out/after"

# row LABEL BINARY THREADS BATCH SEQ KEY
rows=()
for threads in 1 2; do
  rows+=("fwd-only gpt2 b4 s256|gpt2_block_inference|$threads|4|256|tfc_forward")
done
for job in "gpt2_block 4 256" "gpt2_block 4 1024" "copy_task 32 64"; do
  set -- $job
  for threads in 1 2; do
    rows+=("fwd $1 b$2 s$3|$1|$threads|$2|$3|tfc_forward")
    rows+=("fwd+bwd $1 b$2 s$3|$1|$threads|$2|$3|tfc_forward_backward")
    rows+=("unfused fwd+bwd $1 b$2 s$3|$1_unfused|$threads|$2|$3|tfc_forward_backward")
  done
done

# Each binary runs once per tree and round, the two trees back to back
# (which goes first alternates by round), and gives all of its rows.
log="$out/times.txt" # round tree row-index ms
: >"$log"
runs=()
for row in "${rows[@]}"; do
  IFS='|' read -r label bin threads batch seq key <<<"$row"
  run="$bin $threads $batch $seq"
  [[ " ${runs[*]/%/,} " == *" $run, "* ]] || runs+=("$run")
done
for ((round = 0; round < rounds; ++round)); do
  order="before after"
  ((round % 2 == 0)) || order="after before"
  for run in "${runs[@]}"; do
    read -r bin threads batch seq <<<"$run"
    for tree in $order; do
      result=$("$out/$tree/bench_$bin" "$threads" "$batch" "$seq" "$iters")
      for i in "${!rows[@]}"; do
        IFS='|' read -r label rbin rthreads rbatch rseq key <<<"${rows[$i]}"
        [[ "$rbin $rthreads $rbatch $rseq" == "$run" ]] || continue
        ms=$(echo "$result" | awk -v k="$key" '$1 == k {print $2}')
        echo "$round $tree $i $ms" >>"$log"
      done
    done
  done
done

echo "before: $(git -C "$before_root" log -1 --format='%h %s' 2>/dev/null ||
  echo "$before_root")"
echo "after:  $(git -C "$root" log -1 --format='%h %s')"
echo "$rounds rounds, before/after in turn; each figure the median of $iters" \
  "iterations; ms"
printf '%-34s %-7s %9s %9s %9s %14s\n' row threads before after \
  after/bef "min..max"
for i in "${!rows[@]}"; do
  IFS='|' read -r label bin threads batch seq key <<<"${rows[$i]}"
  awk -v i="$i" -v label="$label" -v threads="$threads" '
    function median(a, n,   j, k, t) {
      for (j = 1; j <= n; ++j)
        for (k = j + 1; k <= n; ++k)
          if (a[k] < a[j]) { t = a[j]; a[j] = a[k]; a[k] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $3 == i && $2 == "before" { b[$1] = $4 }
    $3 == i && $2 == "after" { a[$1] = $4 }
    END {
      n = 0
      for (r in b) { ++n; bs[n] = b[r]; as[n] = a[r]; q[n] = a[r] / b[r] }
      lo = q[1]; hi = q[1]
      for (j = 1; j <= n; ++j) { if (q[j] < lo) lo = q[j]; if (q[j] > hi) hi = q[j] }
      printf "%-34s %-7s %9.1f %9.1f %9.3f %6.3f..%.3f\n", label, threads,
        median(bs, n), median(as, n), median(q, n), lo, hi
    }' "$log"
done
