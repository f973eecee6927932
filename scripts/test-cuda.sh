#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one command (for a machine with a
# device; everything else runs in scripts/test.sh, where these skip):
#  1. the runtime's CUDA unit tests (a hand-written PTX kernel, errors,
#     cubin/PTX fallback, contexts, threads) with no test skipped;
#  2. the lit tests that run generated kernels (REQUIRES: cuda-device): every
#     block feature and an LM against the CPU build, forward and backward,
#     and the quick conformance matrix against the float64 PyTorch oracle;
#     dtype = "bf16" specs on the tensor cores against both;
#  3. scripts/bench-cuda.sh: the GPT-2 block at batch 8, seq 1024 against
#     PyTorch eager on the same GPU, f32 and bf16 (tensor cores, against
#     torch.autocast).
#
#   scripts/test-cuda.sh [iterations]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/build.sh" >/dev/null || exit 1
status=0
"$root/build/test/unit/tfc-unit-tests" --gtest_filter='Cuda*' --gtest_brief=1 || status=1
if "$root/build/test/unit/tfc-unit-tests" --gtest_filter='CudaGpu*' 2>&1 | grep -q SKIPPED; then
  echo "CudaGpu tests skipped: no usable GPU"; status=1
fi
/usr/lib/llvm-22/bin/lit -v "$root/build/test/Driver/run-cuda-vs-cpu.test" \
  "$root/build/test/Driver/run-cuda-errors.test" \
  "$root/build/test/Conversion/cuda-ptx.test" \
  "$root/build/test/Conversion/cuda-ptxas.test" \
  "$root/build/test/Conversion/cuda-matmul-bf16.test" \
  "$root/build/test/Numerics/conformance-cuda.test" || status=1
bash "$root/scripts/bench-cuda.sh" "${1:-10}" || status=1
exit $status
