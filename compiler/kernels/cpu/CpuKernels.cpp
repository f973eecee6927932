//===- CpuKernels.cpp - The CPU's TargetKernels ---------------------------===//
//
// Vector code for a thread pool: the packed micro-kernels, flash attention
// in register tiles, and a parallel iteration per row of a RowLoops loop
// (its columns a sequential loop).
//
//===----------------------------------------------------------------------===//

#include "kernels/cpu/CpuKernels.h"
#include "kernels/RowLoops.h"
#include "kernels/TargetKernels.h"

using namespace mlir;
using namespace mlir::tfc;

void cpu::forEachRow(KernelBuilder &l, Value rows,
                     function_ref<void(RowLoops &, Value)> body) {
  l.parallelFor(rows, [&](Value row) {
    RowLoops loops(l, Value(), Value());
    body(loops, row);
  });
}

const TargetKernels &mlir::tfc::getCpuKernels() {
  static const TargetKernels kernels{/*launchesGpuKernels=*/false,
                                     cpu::planFusedMatmul,
                                     cpu::emitFusedMatmul,
                                     cpu::planFlashAttention,
                                     cpu::emitFlashAttention,
                                     cpu::planFlashAttentionGrad,
                                     cpu::emitFlashAttentionGrad,
                                     cpu::forEachRow};
  return kernels;
}
