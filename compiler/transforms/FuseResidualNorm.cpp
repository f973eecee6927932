//===- FuseResidualNorm.cpp - residual_add + norm -> residual_norm -*- C++ -*-//
//
// The residual-norm fusion (Passes.td has the rewrite and why the pair
// across the depth loop's back edge stays unfused).
//
//===----------------------------------------------------------------------===//

#include "transforms/FusionPipeline.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCFUSERESIDUALNORM
#include "transforms/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

constexpr StringLiteral kFusion = "residual-norm";

NormKind kindOf(LayerNormOp) { return NormKind::layernorm; }
NormKind kindOf(RMSNormOp) { return NormKind::rmsnorm; }
Value betaOf(LayerNormOp norm) { return norm.getBeta(); }
Value betaOf(RMSNormOp) { return Value(); }

/// residual_add and the norm of its sum -> one residual_norm at the norm.
template <typename NormOp>
struct FuseResidualIntoNorm : OpRewritePattern<NormOp> {
  using OpRewritePattern<NormOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(NormOp norm,
                                PatternRewriter &rewriter) const override {
    auto add = norm.getInput().template getDefiningOp<ResidualAddOp>();
    if (!add)
      return rewriter.notifyMatchFailure(norm, "input is no residual_add");
    if (norm.getGroups() != 1)
      return rewriter.notifyMatchFailure(
          norm, "residual_norm normalises whole rows, not groups");
    Block *block = norm->getBlock();
    if (add->getBlock() != block)
      return rewriter.notifyMatchFailure(norm, "the add is in another block");
    // The fused op replaces the add at the norm's place: every other use of
    // the sum must come after the norm.
    for (Operation *user : add->getUsers()) {
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (user != norm.getOperation() &&
          (!inBlock || !norm->isBeforeInBlock(inBlock)))
        return rewriter.notifyMatchFailure(norm,
                                           "the sum is used before the norm");
    }
    Location loc = rewriter.getFusedLoc({add.getLoc(), norm.getLoc()});
    auto fused = ResidualNormOp::create(
        rewriter, loc, add.getType(), norm.getType(), add.getResidual(),
        add.getBranch(), norm.getGamma(), betaOf(norm),
        NormKindAttr::get(rewriter.getContext(), kindOf(norm)),
        add.getAlphaAttr(), norm.getEpsilonAttr());
    markFused(fused, kFusion);
    rewriter.replaceOp(norm, fused.getResult());
    rewriter.replaceOp(add, fused.getSum());
    return success();
  }
};

struct TfcFuseResidualNorm
    : tfc::impl::TfcFuseResidualNormBase<TfcFuseResidualNorm> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseResidualIntoNorm<LayerNormOp>,
                 FuseResidualIntoNorm<RMSNormOp>>(&getContext());
    if (failed(applyFusionPatterns(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
