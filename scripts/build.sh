#!/usr/bin/env bash
# Configures (once) and builds tfc into build/: build/bin/{tfc,tfc-opt},
# build/lib/libtfc_runtime.a.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TFC_BUILD_DIR:-$root/build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
fi
ninja -C "$build" "$@"
