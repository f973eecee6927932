//===- FuseEpilogue.cpp - Activation in the matmul's output loop -*- C++
//-*-===//
//
// tfc-fuse-epilogue (Passes.td): activation(linear(x, W, b)) becomes one
// tfc.linear_act, so the activation is applied to the register tiles before
// they are stored instead of in a separate sweep over memory.
//
//===----------------------------------------------------------------------===//

#include "transforms/FusionPipeline.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCFUSEEPILOGUE
#include "transforms/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// activation(linear(x, W, b)) -> linear_act, when the activation is the
/// linear's only use.
struct FuseLinearActivation : OpRewritePattern<ActivationOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ActivationOp act,
                                PatternRewriter &rewriter) const override {
    auto linear = act.getInput().getDefiningOp<LinearOp>();
    if (!linear)
      return rewriter.notifyMatchFailure(act, "input is not a tfc.linear");
    if (linear.getTransposeWeight())
      return rewriter.notifyMatchFailure(act, "linear has a transposed weight");
    if (!linear->hasOneUse())
      return rewriter.notifyMatchFailure(
          act, "the pre-activation has other uses than the activation");
    Location loc = rewriter.getFusedLoc({linear.getLoc(), act.getLoc()});
    auto fused = LinearActOp::create(
        rewriter, loc, act.getType(), linear.getType(), linear.getInput(),
        linear.getWeight(), linear.getBias(), act.getKind());
    markFused(fused, "epilogue");
    rewriter.replaceOp(act, fused.getResult());
    rewriter.eraseOp(linear);
    return success();
  }
};

struct TfcFuseEpilogue : tfc::impl::TfcFuseEpilogueBase<TfcFuseEpilogue> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseLinearActivation>(&getContext());
    if (failed(applyFusionPatterns(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
