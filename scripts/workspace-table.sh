#!/usr/bin/env bash
# The workspace a training build of the GPT-2 block asks for (forward +
# backward, batch 1) at seq 1024, 2048 and 4096, fused (the default) and
# unfused (tfc --no-fusion), in MiB. Fused attention keeps no [seq x seq]
# array, so the fused column grows linearly in seq; the unfused one
# quadratically.
#
#   scripts/workspace-table.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/out/workspace"
mkdir -p "$out"
bash "$root/scripts/build.sh" >/dev/null

for variant in fused unfused; do
  name="gpt2_block_$variant"
  sed -e "s/^name = \"gpt2_block\"/name = \"$name\"/" \
    -e 's/^max_seq = .*/max_seq = 4096/' -e 's/^max_batch = .*/max_batch = 1/' \
    "$root/examples/specs/gpt2_block.toml" > "$out/$name.toml"
  flags=()
  [ "$variant" = unfused ] && flags=(--no-fusion)
  "$root/build/bin/tfc" "$out/$name.toml" -o "$out/$name.o" "${flags[@]}"
  cc -O2 -I "$root/runtime/include" -I "$out" -DTFC_HEADER="\"$name.h\"" \
    -DTFC_NAME="$name" "$root/examples/benchmark/workspace_size.c" \
    "$out/$name.o" -L "$root/build/lib" -ltfc_runtime -lpthread -lm \
    -o "$out/ws_$variant"
done

echo "gpt2 block (d_model 768, 12 heads), training build, batch 1: workspace MiB"
printf '%-6s %12s %12s %8s\n' seq fused unfused ratio
paste <("$out/ws_fused" 1 1024 2048 4096) <("$out/ws_unfused" 1 1024 2048 4096) |
  awk '{printf "%-6s %12.1f %12.1f %8.2f\n", $1, $2 / 1048576, $4 / 1048576, $4 / $2}'
