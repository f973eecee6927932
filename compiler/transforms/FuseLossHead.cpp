//===- FuseLossHead.cpp - linear + cross_entropy -> loss_head ---*- C++ -*-===//
//
// The loss-head fusion (Passes.td has the rewrite and why the loss sweep
// follows the matmul instead of running inside it).
//
//===----------------------------------------------------------------------===//

#include "transforms/FusionPipeline.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCFUSELOSSHEAD
#include "transforms/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

constexpr StringLiteral kFusion = "loss-head";

/// cross_entropy of a linear's logits -> one loss_head at the loss.
struct FuseHeadIntoLoss : OpRewritePattern<CrossEntropyOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CrossEntropyOp loss,
                                PatternRewriter &rewriter) const override {
    auto head = loss.getLogits().getDefiningOp<LinearOp>();
    if (!head)
      return rewriter.notifyMatchFailure(loss, "logits come from no linear");
    if (head.getInput().getType().getRank() != 3)
      return rewriter.notifyMatchFailure(loss, "the head's input is not 3-d");
    Block *block = loss->getBlock();
    if (head->getBlock() != block)
      return rewriter.notifyMatchFailure(loss, "the head is in another block");
    // The fused op replaces the head at the loss's place: every other use
    // of the logits (the model's output) must come after the loss.
    for (Operation *user : head->getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (user != loss.getOperation() &&
          (!inBlock || !loss->isBeforeInBlock(inBlock)))
        return rewriter.notifyMatchFailure(
            loss, "the logits are used before the loss");
    }
    Type logits = head.getType();
    Location loc = rewriter.getFusedLoc({head.getLoc(), loss.getLoc()});
    auto fused =
        LossHeadOp::create(rewriter, loc, logits, loss.getType(), logits,
                           head.getInput(), head.getWeight(), loss.getTargets(),
                           head.getBias(), head.getTransposeWeight());
    markFused(fused, kFusion);
    rewriter.replaceOp(loss, fused.getLoss());
    rewriter.replaceOp(head, fused.getLogits());
    return success();
  }
};

struct TfcFuseLossHead : tfc::impl::TfcFuseLossHeadBase<TfcFuseLossHead> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseHeadIntoLoss>(&getContext());
    if (failed(applyFusionPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
