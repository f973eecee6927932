//===- CudaKernels.cpp - The CUDA target's TargetKernels ------------------===//
//
// GPU launches: the shared-memory (and tensor-core) matmul, flash attention
// with a block per tile of rows, and a block of RowLoops::kGpuThreads
// threads per row of a RowLoops loop, its reductions across the block.
// Every other parallel loop becomes a kernel with a thread per iteration
// (tfc-parallel-loops-to-gpu).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/CudaKernels.h"
#include "kernels/RowLoops.h"
#include "kernels/TargetKernels.h"

using namespace mlir;
using namespace mlir::tfc;

void cuda::forEachRow(KernelBuilder &l, Value rows,
                      function_ref<void(RowLoops &, Value)> body) {
  MemRefType scratch =
      l.sharedArray(l.b.getF32Type(), RowLoops::kGpuScratchFloats);
  l.gpuLaunch({rows}, RowLoops::kGpuThreads, {scratch},
              [&](const KernelBuilder::GpuIds &ids, ValueRange shared) {
                RowLoops loops(l, ids.thread, shared[0]);
                body(loops, ids.block[0]);
              });
}

const TargetKernels &mlir::tfc::getCudaKernels() {
  static const TargetKernels kernels{/*launchesGpuKernels=*/true,
                                     cuda::planFusedMatmul,
                                     cuda::emitFusedMatmul,
                                     cuda::planFlashAttention,
                                     cuda::emitFlashAttention,
                                     cuda::planFlashAttentionGrad,
                                     cuda::emitFlashAttentionGrad,
                                     cuda::forEachRow};
  return kernels;
}
