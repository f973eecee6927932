//===- CpuKernels.h - The CPU's kernels -------------------------*- C++ -*-===//
//
// The kernels behind getCpuKernels() (TargetKernels.h), one file each:
// Matmul.cpp, FlashAttention.cpp, FlashAttentionGrad.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_CPU_CPUKERNELS_H
#define TFC_KERNELS_CPU_CPUKERNELS_H

#include "kernels/FlashAttention.h"
#include "kernels/Matmul.h"

namespace mlir::tfc::cpu {

void planFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &problem);
void emitFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &problem);

void planFlashAttention(KernelBuilder &l, const FlashAttentionProblem &problem);
void emitFlashAttention(KernelBuilder &l, const FlashAttentionProblem &problem);

void planFlashAttentionGrad(KernelBuilder &l,
                            const FlashAttentionGradProblem &problem);
void emitFlashAttentionGrad(KernelBuilder &l,
                            const FlashAttentionGradProblem &problem);

} // namespace mlir::tfc::cpu

#endif // TFC_KERNELS_CPU_CPUKERNELS_H
