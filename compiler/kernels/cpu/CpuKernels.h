//===- CpuKernels.h - The CPU's kernels -------------------------*- C++ -*-===//
//
// The kernels behind getCpuKernels() (TargetKernels.h), one file each:
// Matmul.cpp, FlashAttention.cpp, FlashAttentionGrad.cpp; forEachRow and the
// table in CpuKernels.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_CPU_CPUKERNELS_H
#define TFC_KERNELS_CPU_CPUKERNELS_H

#include "kernels/FlashAttention.h"
#include "kernels/Matmul.h"

namespace mlir::tfc {
class RowLoops;
} // namespace mlir::tfc

namespace mlir::tfc::cpu {

void planFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &problem);
void emitFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &problem);

void planFlashAttention(KernelBuilder &l, const FlashAttentionProblem &problem);
void emitFlashAttention(KernelBuilder &l, const FlashAttentionProblem &problem);

void planFlashAttentionGrad(KernelBuilder &l,
                            const FlashAttentionGradProblem &problem);
void emitFlashAttentionGrad(KernelBuilder &l,
                            const FlashAttentionGradProblem &problem);

/// A parallel loop over the rows, a RowLoops per iteration.
void forEachRow(KernelBuilder &l, Value rows,
                function_ref<void(RowLoops &, Value)> body);

} // namespace mlir::tfc::cpu

#endif // TFC_KERNELS_CPU_CPUKERNELS_H
