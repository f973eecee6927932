//===- RowLoops.h - Loops over the columns of independent rows --*- C++ -*-===//
//
// Norms and their gradients walk each row's columns a few times: sums for
// the statistics, then an elementwise pass. On the CPU a row is one parallel
// iteration and its columns a sequential loop. On the CUDA target a row is
// one block of threads: thread t takes the columns t, t + threads, ..., so
// a warp's loads are contiguous, and each sum is reduced across the block
// (warp shuffles, then the warps' partials through shared memory) in a
// fixed order, so results do not vary from run to run.
//
// Code in a row's body outside forEachColumn runs on every thread of the
// block on the CUDA target: it may compute, but stores go through
// forEachColumn or onFirstThread.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_ROWLOOPS_H
#define TFC_KERNELS_ROWLOOPS_H

#include "kernels/KernelBuilder.h"

namespace mlir::tfc {

class RowLoops {
public:
  /// Threads per row on the CUDA target: d_model 512-8192 gives each thread
  /// 4-64 columns, and four warps keep the final reduction short.
  static constexpr int64_t kGpuThreads = 128;
  /// Sums reduced at once (the norm gradients need two), and the floats of
  /// shared memory a row's block needs for them.
  static constexpr int64_t kMaxSums = 4;
  static constexpr int64_t kGpuScratchFloats = kGpuThreads / 32 * kMaxSums;

  /// Runs `body` for every row < `rows`, rows in parallel: the target's
  /// TargetKernels::forEachRow.
  static void forEachRow(KernelBuilder &l, Value rows,
                         function_ref<void(RowLoops &, Value)> body);

  /// The loops of one row for a target's forEachRow: `thread` is the
  /// thread's index in the row's block and `scratch` kGpuScratchFloats of
  /// shared memory (CUDA), both null on the CPU.
  RowLoops(KernelBuilder &l, Value thread, Value scratch)
      : l(l), thread(thread), scratch(scratch) {}

  /// Runs `fn(i)` for every column i < `width` (on the CUDA target, for this
  /// thread's columns).
  void forEachColumn(Value width, function_ref<void(Value)> fn);
  /// The sums over i < `width` of each of `terms(i)` (`count` values),
  /// known to every thread of the row.
  SmallVector<Value> sum(Value width, int64_t count,
                         function_ref<SmallVector<Value>(Value)> terms);
  Value sum(Value width, function_ref<Value(Value)> term);
  /// The maximum over i < `width` of `term(i)` (-inf for no columns).
  Value max(Value width, function_ref<Value(Value)> term);
  /// Runs `fn` once per row (on the first thread of the block).
  void onFirstThread(function_ref<void()> fn);

  /// A norm's statistics of the row x = `load(i)`, i < `width`: the mean
  /// (0 without `subtractMean`: RMSNorm) and 1 / sqrt(mean((x - mean)^2) +
  /// eps). `sum`, when given, is the row's sum already (a fused add's).
  /// Forward and backward call this, so a gradient's recomputed statistics
  /// are the forward's bit for bit.
  struct NormStatistics {
    Value mean, rstd;
  };
  NormStatistics normStatistics(int64_t width, double eps, bool subtractMean,
                                function_ref<Value(Value)> load,
                                Value sum = Value());

  /// The row terms of a norm's input gradient. With xhat = (x - mean) *
  /// rstd and g = dy * gamma, dx = rstd * (g - mean(g) - xhat * mean(g *
  /// xhat)); RMSNorm (no `subtractMean`) has no mean(g) term. `g(i)` and
  /// `xhat(i)` are column i's values. The norm gradient and the fused
  /// residual-norm gradient both use these, so they agree bit for bit.
  struct NormGradTerms {
    Value meanG;  // Null without subtractMean.
    Value meanGX; // mean(g * xhat).
  };
  NormGradTerms normGradTerms(int64_t width, bool subtractMean,
                              function_ref<Value(Value)> g,
                              function_ref<Value(Value)> xhat);
  /// Column i's dx from the terms, its g and its xhat.
  Value normInputGrad(const NormGradTerms &terms, Value rstd, Value g,
                      Value xhat);

private:
  enum class Combine { Add, Max };
  Value combine(Combine kind, Value a, Value c);
  /// sum and max: `count` reductions of `terms(i)` over i < `width`.
  SmallVector<Value> reduce(Combine kind, Value width, int64_t count,
                            function_ref<SmallVector<Value>(Value)> terms);
  /// The block-wide reductions of this thread's partial results.
  SmallVector<Value> reduceAcrossBlock(Combine kind, ValueRange partials);

  KernelBuilder &l;
  Value thread;  // The thread's index in the block; null on the CPU.
  Value scratch; // Shared memory for the warps' partial sums (CUDA).
};

} // namespace mlir::tfc

#endif // TFC_KERNELS_ROWLOOPS_H
