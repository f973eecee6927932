#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, then runs the unit
# tests (GoogleTest), the lit suite (Spec, Dialect, Conversion, Driver and
# the PyTorch conformance in Numerics) and each libFuzzer target for 45 s
# (scripts/fuzz.sh; TFC_FUZZ_SECONDS=0 skips them). Prints one closing line
# "N passed, M failed" and exits non-zero on any failure.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TFC_BUILD_DIR:-$root/build}"

bash "$root/scripts/install-deps.sh" || exit 1
bash "$root/scripts/build.sh" || exit 1

passed=0
failed=0
skipped=0

echo "== unit tests"
unit_log=$(mktemp)
"$build/test/unit/tfc-unit-tests" --gtest_brief=1 2>&1 | tee "$unit_log" | tail -n 5
unit_rc=${PIPESTATUS[0]}
unit_total=$(grep -oE '^\[==========\] ([0-9]+) tests? from' "$unit_log" | grep -oE '[0-9]+' | head -n 1)
unit_failed=$(grep -oE '^\[  FAILED  \] ([0-9]+) tests?,' "$unit_log" | grep -oE '[0-9]+' | head -n 1)
# Skipped tests (the GPU ones without a GPU) are neither passed nor failed.
unit_skipped=$(grep -oE '^\[  SKIPPED \] ([0-9]+) tests?' "$unit_log" | grep -oE '[0-9]+' | head -n 1)
unit_total=${unit_total:-0}
unit_failed=${unit_failed:-0}
unit_skipped=${unit_skipped:-0}
[ "$unit_rc" -ne 0 ] && [ "$unit_failed" -eq 0 ] && unit_failed=1
passed=$((passed + unit_total - unit_failed - unit_skipped))
skipped=$((unit_skipped))
failed=$((failed + unit_failed))
rm -f "$unit_log"

echo "== lit"
lit_log=$(mktemp)
/usr/lib/llvm-22/bin/lit -sv "$build/test" 2>&1 | tee "$lit_log" | grep -E '^(FAIL|XPASS|UNRESOLVED|  Passed|  Failed|  Unsupported|Total)' 
lit_rc=${PIPESTATUS[0]}
lit_passed=$(grep -oE '^ *Passed *: *[0-9]+' "$lit_log" | grep -oE '[0-9]+$' || true)
lit_failed=$(grep -oE '^ *Failed *: *[0-9]+' "$lit_log" | grep -oE '[0-9]+$' || true)
lit_unsupported=$(grep -oE '^ *Unsupported *: *[0-9]+' "$lit_log" | grep -oE '[0-9]+$' || true)
lit_passed=${lit_passed:-0}
skipped=$((skipped + ${lit_unsupported:-0}))
lit_failed=${lit_failed:-0}
[ "$lit_rc" -ne 0 ] && [ "$lit_failed" -eq 0 ] && lit_failed=1
passed=$((passed + lit_passed))
failed=$((failed + lit_failed))
rm -f "$lit_log"

# libFuzzer: each target for TFC_FUZZ_SECONDS (default 45; 0 skips), built
# with clang-22 into build-fuzz/; the targets run one per core (about 2.5
# minutes on 2 cores, build included).
fuzz_seconds="${TFC_FUZZ_SECONDS:-45}"
if [ "$fuzz_seconds" -gt 0 ]; then
  echo "== fuzz (${fuzz_seconds} s per target)"
  fuzz_log=$(mktemp)
  bash "$root/scripts/fuzz.sh" "$fuzz_seconds" 2>&1 | tee "$fuzz_log" |
    grep -E '^(spec|runconfig|ir|safetensors|hfconfig): |^  |ninja: build stopped|error'
  fuzz_rc=${PIPESTATUS[0]}
  fuzz_passed=$(grep -cE '^(spec|runconfig|ir|safetensors|hfconfig): .*no findings$' "$fuzz_log")
  fuzz_failed=$(grep -cE '^(spec|runconfig|ir|safetensors|hfconfig): .*FINDING' "$fuzz_log")
  [ "$fuzz_rc" -ne 0 ] && [ "$fuzz_failed" -eq 0 ] && fuzz_failed=1
  passed=$((passed + fuzz_passed))
  failed=$((failed + fuzz_failed))
  rm -f "$fuzz_log"
fi

echo "$passed passed, $failed failed ($skipped skipped: unit tests and lit tests that need a GPU or tool this machine lacks)"
[ "$failed" -eq 0 ]
