//===- FuseProjections.cpp - Linears of one input as one matmul -*- C++ -*-===//
//
// tfc-fuse-projections (Passes.td): the linear layers that read the same
// input (Q, K, V; the gate and up projections of a GLU) become one matmul,
// which reads the input once per panel row instead of once per layer, runs
// one parallel loop instead of several, and whose gradient computes the
// input gradient as one matmul over all parts (no tfc.add sweeps). A merged
// result split into heads is stored per head by that matmul.
//
//===----------------------------------------------------------------------===//

#include "transforms/FusionPipeline.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCFUSEPROJECTIONS
#include "transforms/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// A linear layer the projection merges may take: weight stored [in, out].
bool isMergeable(LinearOp linear) { return !linear.getTransposeWeight(); }

/// glu(linear(x, Wg, bg), linear(x, Wu, bu)) -> glu_linear, when both
/// linears read the same input and feed only the glu.
struct FuseGLUProjections : OpRewritePattern<GLUOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(GLUOp glu,
                                PatternRewriter &rewriter) const override {
    auto gate = glu.getGate().getDefiningOp<LinearOp>();
    auto up = glu.getUp().getDefiningOp<LinearOp>();
    if (!gate || !up || gate == up)
      return rewriter.notifyMatchFailure(glu,
                                         "gate and up are not two linears");
    if (!isMergeable(gate) || !isMergeable(up))
      return rewriter.notifyMatchFailure(glu, "a weight is transposed");
    if (gate.getInput() != up.getInput())
      return rewriter.notifyMatchFailure(glu, "gate and up read other inputs");
    if (!gate->hasOneUse() || !up->hasOneUse())
      return rewriter.notifyMatchFailure(glu, "gate or up has other uses");
    if (gate.getWeight().getType() != up.getWeight().getType() ||
        !gate.getBias() != !up.getBias())
      return rewriter.notifyMatchFailure(glu, "gate and up differ in shape");
    SmallVector<Value> biases;
    if (gate.getBias())
      biases = {gate.getBias(), up.getBias()};
    Location loc =
        rewriter.getFusedLoc({gate.getLoc(), up.getLoc(), glu.getLoc()});
    auto fused =
        GLULinearOp::create(rewriter, loc, glu.getType(), gate.getType(),
                            up.getType(), gate.getInput(), gate.getWeight(),
                            up.getWeight(), biases, glu.getKind());
    markFused(fused, "projections");
    rewriter.replaceOp(glu, fused.getResult());
    rewriter.eraseOp(gate);
    rewriter.eraseOp(up);
    return success();
  }
};

/// Whether `value` is available before `point`, or is a tfc.param that can
/// be moved there (its operands, the parameter buffer and the layer, are).
bool availableOrMovable(Value value, Operation *point) {
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != point->getBlock() ||
      def->isBeforeInBlock(point))
    return true;
  if (!isa<ParamOp>(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    Operation *inner = operand.getDefiningOp();
    return !inner || inner->getBlock() != point->getBlock() ||
           inner->isBeforeInBlock(point);
  });
}

/// linear(x, W_0, b_0), ..., linear(x, W_n, b_n) -> merged_linear, for the
/// linears of one input in one block (Q, K, V). Linears feeding a glu are
/// left to FuseGLUProjections.
struct MergeProjections : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearOp anchor,
                                PatternRewriter &rewriter) const override {
    auto candidate = [&](Operation *user) -> LinearOp {
      auto linear = dyn_cast<LinearOp>(user);
      if (!linear || linear.getInput() != anchor.getInput() ||
          linear->getBlock() != anchor->getBlock() || !isMergeable(linear) ||
          !linear.getBias() != !anchor.getBias())
        return nullptr;
      if (llvm::any_of(linear->getUsers(),
                       [](Operation *u) { return isa<GLUOp>(u); }))
        return nullptr;
      return linear;
    };
    if (!candidate(anchor))
      return rewriter.notifyMatchFailure(anchor, "not a mergeable linear");
    SmallVector<LinearOp> group;
    for (Operation *user : anchor.getInput().getUsers())
      if (LinearOp linear = candidate(user))
        if (!llvm::is_contained(group, linear))
          group.push_back(linear);
    llvm::sort(group,
               [](LinearOp a, LinearOp b) { return a->isBeforeInBlock(b); });
    // The merged op goes where the first linear is; the others' weights
    // must be available there.
    Operation *first = group.front();
    llvm::erase_if(group, [&](LinearOp linear) {
      return !availableOrMovable(linear.getWeight(), first) ||
             (linear.getBias() && !availableOrMovable(linear.getBias(), first));
    });
    if (group.size() < 2 || group.front() != first)
      return rewriter.notifyMatchFailure(anchor, "no other linear to merge");

    SmallVector<Value> weights, biases;
    SmallVector<Type> types;
    SmallVector<Location> locs;
    for (LinearOp linear : group) {
      for (Value operand : linear->getOperands().drop_front())
        if (Operation *def = operand.getDefiningOp();
            def && def->getBlock() == first->getBlock() &&
            first->isBeforeInBlock(def))
          rewriter.moveOpBefore(def, first);
      weights.push_back(linear.getWeight());
      if (linear.getBias())
        biases.push_back(linear.getBias());
      types.push_back(linear.getType());
      locs.push_back(linear.getLoc());
    }
    rewriter.setInsertionPoint(first);
    auto merged =
        MergedLinearOp::create(rewriter, rewriter.getFusedLoc(locs), types,
                               anchor.getInput(), weights, biases);
    markFused(merged, "projections");
    for (auto [linear, result] : llvm::zip_equal(group, merged.getResults()))
      rewriter.replaceOp(linear, result);
    return success();
  }
};

/// split_heads(merged_linear #i) -> merged_linear with result i head-split:
/// the matmul's output loop stores Q, K and V per head, [b, h, s, dh],
/// where a copy rearranged its rows before. Splits that tfc-fuse-attention
/// folds into a rotation (split_heads_rope: RoPE, QK-norm's norm then RoPE)
/// are left to it. Head widths are whole vectors (16 floats, the widest
/// CPU vector) so every vector the output loop stores lies in one head.
struct SplitProjectionHeads : OpRewritePattern<SplitHeadsOp> {
  using OpRewritePattern::OpRewritePattern;
  static constexpr int64_t kHeadDimMultiple = 16;

  LogicalResult matchAndRewrite(SplitHeadsOp split,
                                PatternRewriter &rewriter) const override {
    auto rows = dyn_cast<OpResult>(split.getInput());
    auto merged = rows ? dyn_cast<MergedLinearOp>(rows.getOwner()) : nullptr;
    if (!merged || !rows.hasOneUse())
      return rewriter.notifyMatchFailure(
          split, "the input is not a merged_linear result used only here");
    if (split.getResult().getType().getDimSize(3) % kHeadDimMultiple != 0)
      return rewriter.notifyMatchFailure(split, "the head width is not "
                                                "whole vectors");
    if (llvm::any_of(split->getUsers(), [](Operation *user) {
          return isa<RopeOp, LayerNormOp, RMSNormOp>(user);
        }))
      return rewriter.notifyMatchFailure(
          split, "the heads go on to a rotation or a norm");
    SmallVector<Type> types(merged->getResultTypes());
    types[rows.getResultNumber()] = split.getType();
    rewriter.setInsertionPoint(merged);
    auto fused = MergedLinearOp::create(
        rewriter, rewriter.getFusedLoc({merged.getLoc(), split.getLoc()}),
        types, merged.getInput(), merged.getWeights(), merged.getBiases());
    fused->setDiscardableAttrs(merged->getDiscardableAttrDictionary());
    rewriter.replaceOp(split, fused.getResult(rows.getResultNumber()));
    for (auto [old, now] :
         llvm::zip_equal(merged.getResults(), fused.getResults()))
      if (old != rows)
        rewriter.replaceAllUsesWith(old, now);
    rewriter.eraseOp(merged);
    return success();
  }
};

struct TfcFuseProjections
    : tfc::impl::TfcFuseProjectionsBase<TfcFuseProjections> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // The GLU merge first: its linears must not end up in a plain merge.
    patterns.add<FuseGLUProjections>(&getContext(), /*benefit=*/2);
    patterns.add<MergeProjections, SplitProjectionHeads>(&getContext(),
                                                         /*benefit=*/1);
    if (failed(applyFusionPatterns(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
