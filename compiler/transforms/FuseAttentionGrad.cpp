//===- FuseAttentionGrad.cpp - Fused attention's gradients, merged -------===//
//
// tfc-fuse-attention-grad (Passes.td): the head-split projections' gradient
// rules merge the heads of dQ, dK and dV (tfc.merge_heads) before their
// input and weight gradients read them, a sweep over each. The attention
// gradient's sweep stores each row once anyway: storing it merged makes
// the copy unnecessary.
//
//===----------------------------------------------------------------------===//

#include "transforms/FusionPipeline.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCFUSEATTENTIONGRAD
#include "transforms/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// merge_heads(flash_attention_grad result) -> the result merged.
struct MergeAttentionGradHeads : OpRewritePattern<MergeHeadsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MergeHeadsOp merge,
                                PatternRewriter &rewriter) const override {
    Value grad = merge.getInput();
    auto flash = grad.getDefiningOp<FlashAttentionGradOp>();
    if (!flash || !grad.hasOneUse() ||
        cast<ShapedType>(grad.getType()).getRank() != 4)
      return rewriter.notifyMatchFailure(
          merge, "the input is not a flash_attention_grad result used only "
                 "here");
    rewriter.modifyOpInPlace(flash, [&] {
      grad.setType(merge.getResult().getType());
      flash->setLoc(rewriter.getFusedLoc({flash.getLoc(), merge.getLoc()}));
    });
    rewriter.replaceOp(merge, grad);
    return success();
  }
};

struct TfcFuseAttentionGrad
    : tfc::impl::TfcFuseAttentionGradBase<TfcFuseAttentionGrad> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<MergeAttentionGradHeads>(&getContext());
    if (failed(applyFusionPatterns(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
