#!/bin/sh
# Compiles SPEC (whose name is NAME, without a [train] section) once per
# train.recompute policy and runs forward + backward of each on the same
# parameters and inputs (Inputs/determinism.c, 1 and 2 threads). Prints, per
# policy, whether every output and gradient has the bits of "none"'s, and the
# bytes its memory report (batch 2, seq 7, enc_seq 7) gives the saved values and the
# workspace, and whether that workspace is NAME_workspace_size(2, 7).
#   recompute.sh DIR SPEC NAME CC INCLUDE LIB
set -eu
dir=$1 spec=$2 name=$3 cc=$4 include=$5 lib=$6
here=$(cd "$(dirname "$0")" && pwd)
upper=$(echo "$name" | tr 'a-z' 'A-Z')
echo "== $name"
for policy in none attention ffn block; do
  out="$dir/$name-$policy"
  mkdir -p "$out"
  { cat "$spec"; printf '\n[train]\nrecompute = "%s"\n' "$policy"; } > "$out/$name.toml"
  tfc "$out/$name.toml" -o "$out/$name.o"
  # workspace_size.c asks with enc_seq = seq.
  enc= has_enc=
  grep -q '^cross = true' "$spec" && enc="--enc-seq 7" has_enc=-DTFC_HAS_ENC_SEQ
  tfc "$out/$name.toml" --emit=memory-report --batch 2 --seq 7 $enc \
    -o "$out/report.txt"
  $cc -O2 -std=c11 -Wall -Werror -DTFC_HEADER="\"$name.h\"" -DTFC_NAME="$name" \
    -DTFC_UNAME="$upper" -I"$include" -I"$out" "$here/determinism.c" \
    "$out/$name.o" -L"$lib" -ltfc_runtime -lpthread -lm -o "$out/det"
  "$out/det" hashes 1 2 > "$out/hashes"
  $cc -O1 -I"$include" -I"$out" -DTFC_HEADER="\"$name.h\"" -DTFC_NAME="$name" $has_enc \
    "$here/../../../examples/benchmark/workspace_size.c" "$out/$name.o" \
    -L"$lib" -ltfc_runtime -lpthread -lm -o "$out/ws"
  saved=$(awk '$3 == "saved" && $5 == "backward" {print $1}' "$out/report.txt")
  workspace=$(awk '$3 == "workspace" {print $1}' "$out/report.txt")
  asked=$("$out/ws" 2 7 | awk '{print $2}')
  same=identical
  [ "$policy" = none ] || cmp -s "$dir/$name-none/hashes" "$out/hashes" ||
    same=DIFFERENT
  grep -q 'threads 2 (2): identical' "$out/hashes" || same="$same, threads differ"
  saved=${saved:-0}
  check=$([ "$workspace" = "$asked" ] && echo "= workspace_size" || echo "!= workspace_size $asked")
  if [ "$policy" = none ]; then
    none_saved=$saved less=""
  elif [ "$saved" -lt "$none_saved" ]; then
    less=", saves less"
  else
    less=", saves NOT less"
  fi
  echo "$policy: $same$less; saved $saved workspace $workspace $check"
done
