#!/usr/bin/env bash
# The long tier of the lit suite: the tests CI's suite (scripts/test.sh)
# samples, in full (REQUIRES: long, named *-long.test): the whole
# conformance product of norms x positions x activations x masks with the
# fused-vs-unfused comparison, decoding of every causal block, the ISA and
# emulated-CUDA conformance of the whole quick matrix, the example specs'
# determinism, and the rest of the emulator comparisons. About 40 minutes
# on 2 cores. Run it before a release and after touching the lowering.
#
#   bash scripts/test-long.sh [lit args...]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TFC_BUILD_DIR:-$root/build}"
bash "$root/scripts/build.sh" || exit 1
TFC_LONG_TESTS=1 exec /usr/lib/llvm-22/bin/lit -sv --filter='-long\.test$' \
  "$@" "$build/test"
