#!/usr/bin/env bash
# Fuzzes the spec reader, tfc-train's run config reader, the tfc IR
# parser/verifier, the safetensors
# reader (with the loader's name maps) and `tfc import` with libFuzzer:
#
#   bash scripts/fuzz.sh [SECONDS]        (default 60 s per target)
#
# Builds fuzz/ with clang-22 (-fsanitize=fuzzer,address,undefined) into
# build-fuzz/ ($TFC_FUZZ_BUILD_DIR), seeds each target from the repository
# (tfc-fuzz-spec: examples/specs and test/Spec; tfc-fuzz-ir: the .mlir tests,
# split at `// -----`, RUN lines dropped; tfc-fuzz-safetensors:
# fuzz/seeds/safetensors; tfc-fuzz-hfconfig: test/Import's configs), runs
# each for SECONDS and prints
# the executions and findings. New inputs accumulate in build-fuzz/corpus/*/work
# across runs; a crashing input lands in build-fuzz/findings/ (reproduce it
# with `build-fuzz/bin/tfc-fuzz-spec FILE`) and must become a regression test.
# Exits non-zero on any finding.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${TFC_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${1:-60}"
jobs="${TFC_FUZZ_BUILD_JOBS:-2}"

bash "$root/scripts/install-deps.sh" clang-22 libclang-rt-22-dev || exit 1
if [ ! -f "$build/build.ninja" ]; then
  CC=clang-22 CXX=clang++-22 cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release -DTFC_FUZZ=ON >/dev/null || exit 1
fi
nice -n 15 ninja -C "$build" -j "$jobs" tfc-fuzz-spec tfc-fuzz-runconfig \
  tfc-fuzz-ir tfc-fuzz-safetensors tfc-fuzz-hfconfig || exit 1

corpus="$build/corpus"
findings="$build/findings"
rm -rf "$corpus/spec/seed" "$corpus/ir/seed" "$corpus/safetensors/seed" \
  "$corpus/hfconfig/seed" "$corpus/runconfig/seed"
mkdir -p "$corpus/runconfig/seed" "$corpus/runconfig/work" \
  "$corpus/spec/seed" "$corpus/spec/work" "$corpus/ir/seed" \
  "$corpus/ir/work" "$corpus/safetensors/seed" "$corpus/safetensors/work" \
  "$corpus/hfconfig/seed" "$corpus/hfconfig/work" "$findings"
# HF config seeds: the published and the refused configs of test/Import.
n=0
for f in "$root"/test/Import/Inputs/*.json "$root"/test/Import/Inputs/*/*.json \
  "$root"/fuzz/seeds/hfconfig/*.json; do
  cp "$f" "$corpus/hfconfig/seed/$n.json"
  n=$((n + 1))
done
# Safetensors seeds: small files of each name map and dtype, and malformed
# ones (fuzz/seeds/safetensors), byte for byte.
cp "$root"/fuzz/seeds/safetensors/*.safetensors "$corpus/safetensors/seed/"

# Spec seeds: the examples and every valid and invalid spec test.
n=0
for f in "$root"/examples/specs/*.toml "$root"/test/Spec/*/*.toml \
  "$root"/test/Driver/Inputs/*.toml "$root"/test/Driver/*.toml; do
  [ -f "$f" ] || continue
  grep -v '^# *RUN:' "$f" >"$corpus/spec/seed/$n.toml"
  n=$((n + 1))
done
# Hostile inputs at the reader's limits (fuzz/seeds: nesting, dotted keys,
# invalid UTF-8, a NUL byte), copied byte for byte.
for f in "$root"/fuzz/seeds/*.toml; do
  [ -f "$f" ] || continue
  cp "$f" "$corpus/spec/seed/$n.toml"
  n=$((n + 1))
done

# Run config seeds: the examples' and tfc-train's tests' configs, valid and
# refused.
n=0
for f in "$root"/examples/*/run.toml "$root"/test/Train/Inputs/*.toml \
  "$root"/test/Train/Inputs/invalid/*.toml \
  "$root"/fuzz/seeds/runconfig/*.toml; do
  [ -f "$f" ] || continue
  cp "$f" "$corpus/runconfig/seed/$n.toml"
  n=$((n + 1))
done

# IR seeds: every .mlir test, one file per `// -----` chunk, no RUN lines.
python3 - "$root" "$corpus/ir/seed" <<'EOF'
import glob, os, re, sys
root, out = sys.argv[1], sys.argv[2]
n = 0
for path in sorted(glob.glob(os.path.join(root, "test", "**", "*.mlir"),
                          recursive=True)):
    text = open(path, encoding="utf-8", errors="replace").read()
    for chunk in re.split(r"^// -----.*$", text, flags=re.M):
        lines = [l for l in chunk.splitlines() if not l.startswith("// RUN:")]
        body = "\n".join(lines).strip()
        if body:
            with open(os.path.join(out, f"{n}.mlir"), "w") as f:
                f.write(body + "\n")
            n += 1
EOF

# IR dictionary: op mnemonics, enum attributes and words, attribute names
# from the dialect's ODS, so that it follows the dialect as ops are added.
dict_ir="$build/ir.dict"
{
  td="$root/dialect/include/tfc/Dialect"
  grep -ohE 'Tfc_Op<"[a-z0-9_]+"' "$td"/*.td | sed -E 's/.*"(.*)"/"tfc.\1"/'
  grep -ohE 'EnumAttr<Tfc_Dialect, *[A-Za-z_]+, *"[a-z_]+"' "$td"/*.td |
    sed -E 's/.*"(.*)"/"#tfc.\1<"/'
  grep -ohE 'EnumAttrCase<"[a-z0-9_]+"' "$td"/*.td | sed -E 's/.*"(.*)"/"\1"/'
  grep -ohE ':\$[a-z_]+' "$td"/*.td | sed -E 's/:\$(.*)/"\1 = "/'
  printf '%s\n' '"func.func @f("' '"return"' '"tensor<"' '"xf32>"' \
    '"tensor<?xf32>"' '"index"' '"i64"' '"f32"' '" -> "' '" : "' \
    '"arith.constant"' '"scf.for"' '"scf.yield"' '"%arg0"' '"{"' '"}"'
} | sort -u >"$dict_ir"

run_target() { # name binary dict; its lines go to $build/fuzz-NAME.summary
  local name="$1" bin="$2" dict="$3" log
  log="$build/fuzz-$name.log"
  exec >"$build/fuzz-$name.summary"
  echo "== $name: ${seconds} s"
  "$bin" "$corpus/$name/work" "$corpus/$name/seed" -dict="$dict" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$findings/$name-" >"$log" 2>&1
  local rc=$?
  local execs units
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" |
    grep -oE '[0-9]+$' | tail -n 1)
  units=$(grep -oE 'corp: [0-9]+/' "$log" | tail -n 1 | grep -oE '[0-9]+')
  if [ "$rc" -eq 0 ]; then
    echo "$name: ${execs:-0} executions, corpus ${units:-?} inputs, no findings"
  else
    echo "$name: ${execs:-0} executions, FINDING (libFuzzer exit $rc):"
    grep -E '^==[0-9]+==ERROR|^SUMMARY|^tfc-fuzz-|runtime error|Test unit written' \
      "$log" | head -n 8
    echo "  full log: $log"
  fi
}

# The targets run side by side, one per core (each fuzzes on one thread), so
# the whole takes about seconds x targets / cores; their lines are printed
# in this order when all are done.
targets=(spec runconfig ir safetensors hfconfig)
dicts=("$root/fuzz/spec.dict" "$root/fuzz/runconfig.dict" "$dict_ir"
  "$root/fuzz/safetensors.dict" "$root/fuzz/hfconfig.dict")
cores=$(nproc)
for i in "${!targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do wait -n; done
  run_target "${targets[$i]}" "$build/bin/tfc-fuzz-${targets[$i]}" "${dicts[$i]}" &
done
wait
status=0
for name in "${targets[@]}"; do
  cat "$build/fuzz-$name.summary"
  grep -q "no findings$" "$build/fuzz-$name.summary" || status=1
done
exit $status
