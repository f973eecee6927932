#!/bin/sh
# Compiles SPEC (whose name is NAME) with the default passes (fusion on) and
# Inputs/determinism.c, then prints whether forward + backward give the same
# bits on 2, 3, 4 threads and rt = NULL as on 1 thread, and whether a second
# process with TFC_NUM_THREADS=3 (runtime created with 0 threads) gives the
# same hashes as the first. With "concurrent" also runs the two-thread test.
#   determinism.sh DIR SPEC NAME CC INCLUDE LIB [concurrent]
set -eu
dir=$1 spec=$2 name=$3 cc=$4 include=$5 lib=$6
here=$(cd "$(dirname "$0")" && pwd)
upper=$(echo "$name" | tr 'a-z' 'A-Z')
# A training build: forward and backward are what it runs.
tfc "$spec" --no-decoding -o "$dir/$name.o"
$cc -O2 -std=c11 -Wall -Werror -DTFC_HEADER="\"$name.h\"" -DTFC_NAME="$name" \
  -DTFC_UNAME="$upper" -I"$include" -I"$dir" "$here/determinism.c" \
  "$dir/$name.o" -L"$lib" -ltfc_runtime -lpthread -lm -o "$dir/det_$name"
echo "== $name"
"$dir/det_$name" hashes 1 2 3 4 0 > "$dir/$name.first"
grep -v '^[a-z_]* [0-9a-f]*$' "$dir/$name.first"
TFC_NUM_THREADS=3 "$dir/det_$name" hashes env > "$dir/$name.second"
if [ "$(head -5 "$dir/$name.first")" = "$(cat "$dir/$name.second")" ]; then
  echo "second process, TFC_NUM_THREADS=3: identical"
else
  echo "second process, TFC_NUM_THREADS=3: DIFFERENT"
  diff "$dir/$name.first" "$dir/$name.second" || true
fi
if [ "${7:-}" = concurrent ]; then
  "$dir/det_$name" concurrent
fi
