//===- CudaKernels.h - The CUDA target's kernels -------------*- C++ -*-===//
//
// The kernels behind getCudaKernels() (TargetKernels.h), one file each:
// Matmul.cpp, FlashAttention.cpp (forward and backward).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_CUDA_CUDAKERNELS_H
#define TFC_KERNELS_CUDA_CUDAKERNELS_H

#include "kernels/FlashAttention.h"
#include "kernels/Matmul.h"

namespace mlir::tfc::cuda {

void planFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &problem);
void emitFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &problem);

void planFlashAttention(KernelBuilder &l, const FlashAttentionProblem &problem);
void emitFlashAttention(KernelBuilder &l, const FlashAttentionProblem &problem);

void planFlashAttentionGrad(KernelBuilder &l,
                            const FlashAttentionGradProblem &problem);
void emitFlashAttentionGrad(KernelBuilder &l,
                            const FlashAttentionGradProblem &problem);

} // namespace mlir::tfc::cuda

#endif // TFC_KERNELS_CUDA_CUDAKERNELS_H
