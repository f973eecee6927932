//===- CudaKernels.h - The CUDA target's kernels -------------*- C++ -*-===//
//
// The kernels behind getCudaKernels() (TargetKernels.h), one file each:
// Matmul.cpp, FlashAttention.cpp (forward and backward); forEachRow and the
// table in CudaKernels.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_CUDA_CUDAKERNELS_H
#define TFC_KERNELS_CUDA_CUDAKERNELS_H

#include "kernels/FlashAttention.h"
#include "kernels/Matmul.h"

namespace mlir::tfc {
class RowLoops;
} // namespace mlir::tfc

namespace mlir::tfc::cuda {

void planFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &problem);
void emitFusedMatmul(KernelBuilder &l, const FusedMatmulProblem &problem);

void planFlashAttention(KernelBuilder &l, const FlashAttentionProblem &problem);
void emitFlashAttention(KernelBuilder &l, const FlashAttentionProblem &problem);

void planFlashAttentionGrad(KernelBuilder &l,
                            const FlashAttentionGradProblem &problem);
void emitFlashAttentionGrad(KernelBuilder &l,
                            const FlashAttentionGradProblem &problem);

/// A parallel loop over the rows: a block of RowLoops::kGpuThreads threads per
/// row.
void forEachRow(KernelBuilder &l, Value rows,
                function_ref<void(RowLoops &, Value)> body);

} // namespace mlir::tfc::cuda

#endif // TFC_KERNELS_CUDA_CUDAKERNELS_H
