#!/usr/bin/env bash
# The whole test suite (unit tests, lit, numerics) with the compiler, the
# runtime, the unit tests and every C program the tests link against the
# runtime built with AddressSanitizer + UndefinedBehaviorSanitizer, into
# build-sanitize/ ($TFC_SANITIZE_BUILD_DIR). Any sanitizer report fails the
# test it happens in (-fno-sanitize-recover=all, halt_on_error). Prints the
# suite's "N passed, M failed" line and the wall time of build + suite.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TFC_SANITIZE_BUILD_DIR:-$root/build-sanitize}"
start=$(date +%s)

bash "$root/scripts/install-deps.sh" || exit 1
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DTFC_SANITIZE=address,undefined || exit 1
fi

# Leaks are checked too (LeakSanitizer, part of ASan).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:check_initialization_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# The fuzz targets are sanitized builds of their own (scripts/fuzz.sh).
TFC_BUILD_DIR="$build" TFC_FUZZ_SECONDS=0 bash "$root/scripts/test.sh"
rc=$?
echo "sanitized build + suite: $(($(date +%s) - start)) s"
exit $rc
