//===- FuseBiasGrad.cpp - Bias gradients summed in the weight gradient ----===//
//
// tfc-fuse-bias-grad (Passes.td): a linear layer with a bias that no other
// fusion merged (the FFN's second linear, the attention's output
// projection) gets its gradients from tfc.linear's rule as a weight
// gradient and a tfc.reduce_rows of the same dy. On the CPU the weight
// gradient reads dy in place, K block by K block, and its first row block's
// tiles sum the bias gradient from the rows they load anyway; the
// reduce_rows was a sweep over dy of its own.
//
//===----------------------------------------------------------------------===//

#include "transforms/FusionPipeline.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCFUSEBIASGRAD
#include "transforms/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// The weight gradient that reads `dy` (of a weight stored [in, out], as
/// tfc.merged_weight_grad's), in the same block as `use`; null if none.
LinearWeightGradOp weightGradOf(Value dy, Operation *use) {
  for (Operation *user : dy.getUsers())
    if (auto grad = dyn_cast<LinearWeightGradOp>(user))
      if (grad.getGrad() == dy && !grad.getTransposeWeight() &&
          grad->getBlock() == use->getBlock())
        return grad;
  return nullptr;
}

/// reduce_rows(dy) and linear_weight_grad(x, dy) -> merged_weight_grad x
/// grads(dy) with its bias gradient.
struct SumBiasInWeightGrad : OpRewritePattern<ReduceRowsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReduceRowsOp reduce,
                                PatternRewriter &rewriter) const override {
    Value dy = reduce.getInput();
    LinearWeightGradOp weightGrad = weightGradOf(dy, reduce);
    if (!weightGrad)
      return rewriter.notifyMatchFailure(
          reduce, "no [in, out] weight gradient reads its input");
    // The merged op goes where the first of the two was, which x must
    // precede (dy precedes both).
    Operation *first = weightGrad->isBeforeInBlock(reduce)
                           ? weightGrad.getOperation()
                           : reduce.getOperation();
    Value x = weightGrad.getInput();
    if (Operation *def = x.getDefiningOp();
        def && def->getBlock() == first->getBlock() &&
        !def->isBeforeInBlock(first))
      return rewriter.notifyMatchFailure(reduce,
                                         "x is defined after the reduction");
    rewriter.setInsertionPoint(first);
    auto merged = MergedWeightGradOp::create(
        rewriter, rewriter.getFusedLoc({weightGrad.getLoc(), reduce.getLoc()}),
        TypeRange{weightGrad.getType()}, TypeRange{reduce.getType()}, x,
        ValueRange{dy});
    markFused(merged, "epilogue");
    rewriter.replaceOp(weightGrad, merged.getWeightGrads()[0]);
    rewriter.replaceOp(reduce, merged.getBiasGrads()[0]);
    return success();
  }
};

struct TfcFuseBiasGrad : tfc::impl::TfcFuseBiasGradBase<TfcFuseBiasGrad> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SumBiasInWeightGrad>(&getContext());
    if (failed(applyFusionPatterns(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
