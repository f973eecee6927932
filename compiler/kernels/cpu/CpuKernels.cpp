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

namespace {

class CpuKernels final : public TargetKernels {
public:
  bool launchesGpuKernels() const override { return false; }

  void planFusedMatmul(KernelBuilder &l,
                       const FusedMatmulProblem &p) const override {
    cpu::planFusedMatmul(l, p);
  }
  void emitFusedMatmul(KernelBuilder &l,
                       const FusedMatmulProblem &p) const override {
    cpu::emitFusedMatmul(l, p);
  }
  void planFlashAttention(KernelBuilder &l,
                          const FlashAttentionProblem &p) const override {
    cpu::planFlashAttention(l, p);
  }
  void emitFlashAttention(KernelBuilder &l,
                          const FlashAttentionProblem &p) const override {
    cpu::emitFlashAttention(l, p);
  }
  void
  planFlashAttentionGrad(KernelBuilder &l,
                         const FlashAttentionGradProblem &p) const override {
    cpu::planFlashAttentionGrad(l, p);
  }
  void
  emitFlashAttentionGrad(KernelBuilder &l,
                         const FlashAttentionGradProblem &p) const override {
    cpu::emitFlashAttentionGrad(l, p);
  }
  void forEachRow(KernelBuilder &l, Value rows,
                  function_ref<void(RowLoops &, Value)> body) const override {
    l.parallelFor(rows, [&](Value row) {
      RowLoops loops(l, Value(), Value());
      body(loops, row);
    });
  }
};

} // namespace

const TargetKernels &mlir::tfc::getCpuKernels() {
  static const CpuKernels kernels;
  return kernels;
}
