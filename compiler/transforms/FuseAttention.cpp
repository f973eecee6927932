//===- FuseAttention.cpp - Attention's pieces -> flash_attention -*- C++ -*-=//
//
// tfc-fuse-attention (Passes.td has the before/after): one pattern rooted
// at tfc.attention_context that walks the chain up to tfc.attention_scores.
// A chain whose intermediates have other uses is left alone: the fused op
// does not produce them.
//
//===----------------------------------------------------------------------===//

#include "transforms/FusionPipeline.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCFUSEATTENTION
#include "transforms/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// The producer of `value` if it is an `OpTy` used only there (by the
/// chain's last op); it joins `chain`.
template <typename OpTy>
OpTy singleUseProducer(Value value, SmallVectorImpl<Operation *> &chain) {
  auto op = value.getDefiningOp<OpTy>();
  if (!op || !op->hasOneUse())
    return OpTy();
  chain.push_back(op);
  return op;
}

/// attention_context(softmax([mask]([alibi](scale(attention_scores(q, k))))),
///   v) -> flash_attention(q, k, v).
struct FuseAttentionChain : OpRewritePattern<AttentionContextOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionContextOp context,
                                PatternRewriter &rewriter) const override {
    SmallVector<Operation *> chain{context};
    auto softmax = singleUseProducer<SoftmaxOp>(context.getProbs(), chain);
    if (!softmax)
      return rewriter.notifyMatchFailure(
          context, "probs are not a softmax used only here");
    Value scores = softmax.getInput();
    MaskKind mask = MaskKind::bidirectional;
    uint64_t window = 0;
    Value lengths; // A right-padded batch's.
    if (auto maskOp = singleUseProducer<MaskOp>(scores, chain)) {
      mask = maskOp.getKind();
      window = maskOp.getWindow();
      lengths = maskOp.getLengths();
      scores = maskOp.getInput();
    }
    bool alibi = false;
    if (auto alibiOp = singleUseProducer<AlibiOp>(scores, chain)) {
      alibi = true;
      scores = alibiOp.getInput();
    }
    APFloat scale(1.0);
    if (auto scaleOp = singleUseProducer<ScaleOp>(scores, chain)) {
      scale = scaleOp.getFactor();
      scores = scaleOp.getInput();
    }
    auto qk = singleUseProducer<AttentionScoresOp>(scores, chain);
    if (!qk)
      return rewriter.notifyMatchFailure(
          context, "the softmax input is not [mask](scale(attention_scores)) "
                   "with single uses");

    // Grouped-query attention: the fused op reads the shared key/value
    // heads in place instead of their repeated copies.
    Value key = qk.getKey(), value = context.getValue();
    auto repeatedKey = key.getDefiningOp<RepeatHeadsOp>();
    auto repeatedValue = value.getDefiningOp<RepeatHeadsOp>();
    if (repeatedKey && repeatedValue && repeatedKey->hasOneUse() &&
        repeatedValue->hasOneUse() &&
        repeatedKey.getInput().getType() ==
            repeatedValue.getInput().getType()) {
      key = repeatedKey.getInput();
      value = repeatedValue.getInput();
      chain.push_back(repeatedKey);
      chain.push_back(repeatedValue);
    }

    ArrayRef<int64_t> shape = qk.getResult().getType().getShape();
    auto lseType =
        RankedTensorType::get(shape.take_front(3), rewriter.getF32Type());
    SmallVector<Location> locs;
    for (Operation *op : llvm::reverse(chain))
      locs.push_back(op->getLoc());
    auto fused = FlashAttentionOp::create(
        rewriter, rewriter.getFusedLoc(locs),
        TypeRange{context.getResult().getType(), lseType}, qk.getQuery(), key,
        value, rewriter.getF64FloatAttr(scale.convertToDouble()),
        MaskKindAttr::get(rewriter.getContext(), mask),
        rewriter.getI64IntegerAttr(static_cast<int64_t>(window)),
        alibi ? rewriter.getUnitAttr() : UnitAttr(), lengths);
    markFused(fused, "attention");
    rewriter.replaceOp(context, fused.getOut());
    // The rest of the chain is dead now, innermost user first.
    for (Operation *op : llvm::drop_begin(chain))
      rewriter.eraseOp(op);
    return success();
  }
};

/// rope(split_heads(x)) -> split_heads_rope(x): the rotation on the way
/// into the per-head layout, not a sweep of its own (q and k without
/// QK-norm, whose per-head norm sits between the two).
struct FuseSplitHeadsRope : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RopeOp rope,
                                PatternRewriter &rewriter) const override {
    // Decoding's rotation at each sequence's position stays on its own: one
    // row per sequence is no sweep worth saving.
    if (rope.getPositions())
      return rewriter.notifyMatchFailure(rope, "rotates at given positions");
    auto split = rope.getInput().getDefiningOp<SplitHeadsOp>();
    if (!split || !split->hasOneUse())
      return rewriter.notifyMatchFailure(
          rope, "the input is not a split_heads used only here");
    auto fused = SplitHeadsRopeOp::create(
        rewriter, rewriter.getFusedLoc({split.getLoc(), rope.getLoc()}),
        rope.getType(), split.getInput(), rope.getThetaAttr(),
        rope.getRotaryDimAttr(), rope.getStyleAttr(), rope.getOffsetAttr(),
        rope.getInverseAttr());
    markFused(fused, "attention");
    rewriter.replaceOp(rope, fused.getResult());
    rewriter.eraseOp(split);
    return success();
  }
};

/// rope(norm(split_heads(x))) -> split_heads_rope(norm'(x)): QK-norm's
/// per-head norm read from the projection's [b, s, heads * dh] rows (the
/// same rows of dh, in another order: norm' has groups = heads), then the
/// rotation on the way into the per-head layout. Two sweeps over q and k,
/// not three.
template <typename NormOp> struct FuseHeadNormRope : OpRewritePattern<RopeOp> {
  using OpRewritePattern<RopeOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(RopeOp rope,
                                PatternRewriter &rewriter) const override {
    if (rope.getPositions())
      return rewriter.notifyMatchFailure(rope, "rotates at given positions");
    auto norm = rope.getInput().getDefiningOp<NormOp>();
    if (!norm || !norm->hasOneUse() || norm.getGroups() != 1)
      return rewriter.notifyMatchFailure(
          rope, "the input is not a per-head norm used only here");
    auto split = norm.getInput().template getDefiningOp<SplitHeadsOp>();
    if (!split || !split->hasOneUse())
      return rewriter.notifyMatchFailure(
          rope, "the norm's input is not a split_heads used only here");
    Value rows = split.getInput();
    int64_t heads = split.getResult().getType().getDimSize(1);
    auto merged = cast<NormOp>(rewriter.clone(*norm));
    rewriter.modifyOpInPlace(merged, [&] {
      merged->setOperand(0, rows);
      merged->getResult(0).setType(rows.getType());
      merged.setGroups(heads);
    });
    auto fused = SplitHeadsRopeOp::create(
        rewriter,
        rewriter.getFusedLoc({split.getLoc(), norm.getLoc(), rope.getLoc()}),
        rope.getType(), merged.getResult(), rope.getThetaAttr(),
        rope.getRotaryDimAttr(), rope.getStyleAttr(), rope.getOffsetAttr(),
        rope.getInverseAttr());
    markFused(fused, "attention");
    rewriter.replaceOp(rope, fused.getResult());
    rewriter.eraseOp(norm);
    rewriter.eraseOp(split);
    return success();
  }
};

/// merge_heads(flash_attention.out) -> flash_attention with a merged out:
/// each output row stored where the output projection reads it, not a
/// sweep of its own.
struct MergeAttentionOutput : OpRewritePattern<MergeHeadsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MergeHeadsOp merge,
                                PatternRewriter &rewriter) const override {
    auto flash = merge.getInput().getDefiningOp<FlashAttentionOp>();
    if (!flash || merge.getInput() != flash.getOut() ||
        !flash.getOut().hasOneUse())
      return rewriter.notifyMatchFailure(
          merge, "the input is not a flash_attention out used only here");
    rewriter.modifyOpInPlace(flash, [&] {
      flash.getOut().setType(merge.getResult().getType());
      flash->setLoc(rewriter.getFusedLoc({flash.getLoc(), merge.getLoc()}));
    });
    rewriter.replaceOp(merge, flash.getOut());
    return success();
  }
};

struct TfcFuseAttention : tfc::impl::TfcFuseAttentionBase<TfcFuseAttention> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAttentionChain, MergeAttentionOutput, FuseSplitHeadsRope,
                 FuseHeadNormRope<RMSNormOp>, FuseHeadNormRope<LayerNormOp>>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
