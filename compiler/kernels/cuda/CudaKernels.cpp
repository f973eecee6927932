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

namespace {

class CudaKernels final : public TargetKernels {
public:
  bool launchesGpuKernels() const override { return true; }

  void planFusedMatmul(KernelBuilder &l,
                       const FusedMatmulProblem &p) const override {
    cuda::planFusedMatmul(l, p);
  }
  void emitFusedMatmul(KernelBuilder &l,
                       const FusedMatmulProblem &p) const override {
    cuda::emitFusedMatmul(l, p);
  }
  void planFlashAttention(KernelBuilder &l,
                          const FlashAttentionProblem &p) const override {
    cuda::planFlashAttention(l, p);
  }
  void emitFlashAttention(KernelBuilder &l,
                          const FlashAttentionProblem &p) const override {
    cuda::emitFlashAttention(l, p);
  }
  void
  planFlashAttentionGrad(KernelBuilder &l,
                         const FlashAttentionGradProblem &p) const override {
    cuda::planFlashAttentionGrad(l, p);
  }
  void
  emitFlashAttentionGrad(KernelBuilder &l,
                         const FlashAttentionGradProblem &p) const override {
    cuda::emitFlashAttentionGrad(l, p);
  }
  void forEachRow(KernelBuilder &l, Value rows,
                  function_ref<void(RowLoops &, Value)> body) const override {
    MemRefType scratch =
        l.sharedArray(l.b.getF32Type(), RowLoops::kGpuScratchFloats);
    l.gpuLaunch({rows}, RowLoops::kGpuThreads, {scratch},
                [&](const KernelBuilder::GpuIds &ids, ValueRange shared) {
                  RowLoops loops(l, ids.thread, shared[0]);
                  body(loops, ids.block[0]);
                });
  }
};

} // namespace

const TargetKernels &mlir::tfc::getCudaKernels() {
  static const CudaKernels kernels;
  return kernels;
}
