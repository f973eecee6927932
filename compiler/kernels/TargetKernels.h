//===- TargetKernels.h - The kernels of one target --------------*- C++ -*-===//
//
// The op lowerings ask the target for a kernel through this table and
// never test which target it is: the CPU's (kernels/cpu: packed-panel
// micro-kernels, flash attention in register tiles, a parallel iteration
// per row) or CUDA's (kernels/cuda: shared-memory and tensor-core matmuls,
// a block per attention tile and per row). tfc-lower-to-loops picks one
// for the whole model.
//
// Each kernel comes as plan + emit over the same problem: plan reserves its
// scratch (KernelBuilder::allocate), emit takes it back in the same order
// (takeScratch). The problem's flat buffers may be null while planning;
// its shapes and flags must be those emit gets.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_TARGETKERNELS_H
#define TFC_KERNELS_TARGETKERNELS_H

#include "kernels/FlashAttention.h"
#include "kernels/Matmul.h"

namespace mlir::tfc {

class RowLoops;

/// A table, not a class hierarchy: each target's kernels are plain
/// functions (kernels/cpu/CpuKernels.h, kernels/cuda/CudaKernels.h), and the
/// table is all that differs between targets.
struct TargetKernels {
  /// Whether kernels are GPU launches (gpuLaunch, the CUDA target).
  bool launchesGpuKernels;

  /// The packed/tiled matmul with its epilogues (kernels/Matmul.h).
  void (*planFusedMatmul)(KernelBuilder &l, const FusedMatmulProblem &problem);
  void (*emitFusedMatmul)(KernelBuilder &l, const FusedMatmulProblem &problem);

  /// Fused attention and its gradient (kernels/FlashAttention.h).
  void (*planFlashAttention)(KernelBuilder &l,
                             const FlashAttentionProblem &problem);
  void (*emitFlashAttention)(KernelBuilder &l,
                             const FlashAttentionProblem &problem);
  void (*planFlashAttentionGrad)(KernelBuilder &l,
                                 const FlashAttentionGradProblem &problem);
  void (*emitFlashAttentionGrad)(KernelBuilder &l,
                                 const FlashAttentionGradProblem &problem);

  /// Runs `body` for every row < `rows`, rows in parallel (RowLoops.h):
  /// a parallel iteration per row, or a block of threads per row.
  void (*forEachRow)(KernelBuilder &l, Value rows,
                     function_ref<void(RowLoops &, Value)> body);
};

/// The CPU's kernels (kernels/cpu).
const TargetKernels &getCpuKernels();
/// The CUDA target's kernels (kernels/cuda).
const TargetKernels &getCudaKernels();

} // namespace mlir::tfc

#endif // TFC_KERNELS_TARGETKERNELS_H
