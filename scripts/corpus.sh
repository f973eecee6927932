#!/usr/bin/env bash
# Writes the small text corpus the examples train byte-level models on to
# FILE (kept when it is already there) and prints where it came from: the
# `fortunes` package's text (/usr/share/games/fortunes, the files beside the
# .dat indexes, without the % separators), else tfc's own README and docs.
#
#   scripts/corpus.sh FILE
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
corpus=${1:?usage: corpus.sh FILE}
fortunes=/usr/share/games/fortunes
source="tfc's docs"
ls "$fortunes"/*.dat >/dev/null 2>&1 && source=fortunes
if [ ! -s "$corpus" ]; then
  mkdir -p "$(dirname "$corpus")"
  if [ "$source" = fortunes ]; then
    for dat in "$fortunes"/*.dat; do cat "${dat%.dat}"; done | grep -v '^%$' > "$corpus"
  else
    cat "$root/README.md" "$root"/docs/*.md > "$corpus"
  fi
fi
echo "corpus: $corpus, $(wc -c < "$corpus") bytes ($source)"
