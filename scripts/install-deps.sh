#!/usr/bin/env bash
# Installs the Debian 12 packages tfc's build, tests and benchmarks need.
# Idempotent: packages already installed are skipped, and apt is not touched
# at all when nothing is missing. Extra packages named as arguments are
# installed too (scripts/fuzz.sh: clang-22 libclang-rt-22-dev).
set -euo pipefail

packages=(
  # Build
  cmake ninja-build g++ pkg-config
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libtomlplusplus-dev libfmt-dev libgtest-dev
  # libtfc_safetensors parses the safetensors header with cJSON.
  libcjson-dev
  # Tests: lit/FileCheck come with llvm-22-tools; the oracle is PyTorch.
  python3 python3-torch python3-numpy
  # Plots of the copy-task experiments.
  gnuplot-nox
  # examples/generate's training text.
  fortunes
  # tfc-train's data-parallel training (optional at build time).
  libopenmpi-dev openmpi-bin
  # Benchmark references only (never linked into tfc or its runtime).
  libopenblas-dev libdnnl-dev
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
