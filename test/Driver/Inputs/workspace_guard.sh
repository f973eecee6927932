#!/bin/sh
# Compiles SPEC (named NAME) with TFC_FLAGS and Inputs/workspace_guard.c,
# then runs forward (+ backward) at each B:S[:E] with the workspace ending
# at a PROT_NONE page (see workspace_guard.c).
#   workspace_guard.sh DIR SPEC NAME CC INCLUDE LIB "TFC_FLAGS" B:S ...
# The environment may name another compiler (WG_TFC=tfc-emu, for an emulated
# CUDA build) and add C flags (WG_CFLAGS=-DTFC_CUDA_EMU).
set -eu
dir=$1 spec=$2 name=$3 cc=$4 include=$5 lib=$6 flags=$7
shift 7
here=$(cd "$(dirname "$0")" && pwd)
upper=$(echo "$name" | tr 'a-z' 'A-Z')
# shellcheck disable=SC2086
${WG_TFC:-tfc} "$spec" $flags -o "$dir/$name.o"
# shellcheck disable=SC2086
$cc -O1 -std=c11 -Wall -Werror ${WG_CFLAGS:-} -DTFC_HEADER="\"$name.h\"" -DTFC_NAME="$name" \
  -DTFC_UNAME="$upper" -I"$include" -I"$dir" "$here/workspace_guard.c" \
  "$dir/$name.o" -L"$lib" -ltfc_runtime -lpthread -lm -o "$dir/wg_$name"
echo "== $name $flags"
"$dir/wg_$name" "$@"
