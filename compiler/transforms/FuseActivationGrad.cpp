//===- FuseActivationGrad.cpp - act' in the input gradient's epilogue -----===//
//
// tfc-fuse-activation-grad (Passes.td): the backward half of the epilogue
// fusion, across two gradient rules. tfc.linear_act's rule computes
// d_pre = dy * act'(pre) while its weight gradient reads dy; dy itself is
// the input gradient of the next linear, built by that linear's rule. On the
// CPU the weight gradient reads dy in place, so the product was a sweep of
// its own (read dy and pre, write d_pre); here the next linear's input
// gradient applies act' to its tiles before it stores them, and the weight
// gradient reads d_pre. Only for relu, whose derivative (a compare and a
// select) costs the output loop nothing.
//
//===----------------------------------------------------------------------===//

#include "transforms/FusionPipeline.h"
#include "transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCFUSEACTIVATIONGRAD
#include "transforms/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// The next linear's input gradient `grad` as (dys, weights) of one
/// merged_input_grad without an activation: a transposed tfc.linear
/// without bias, or a merged_input_grad; null when `grad` is neither or has
/// other uses (they need dy itself).
Operation *inputGradOf(Value grad, SmallVectorImpl<Value> &dys,
                       SmallVectorImpl<Value> &weights) {
  Operation *producer = grad.getDefiningOp();
  if (!producer || !grad.hasOneUse())
    return nullptr;
  if (auto linear = dyn_cast<LinearOp>(producer)) {
    if (!linear.getTransposeWeight() || linear.getBias())
      return nullptr;
    dys.push_back(linear.getInput());
    weights.push_back(linear.getWeight());
    return linear;
  }
  if (auto merged = dyn_cast<MergedInputGradOp>(producer)) {
    if (merged.getActInput())
      return nullptr;
    llvm::append_range(dys, merged.getGrads());
    llvm::append_range(weights, merged.getWeights());
    return merged;
  }
  return nullptr;
}

/// linear_act_weight_grad(x, pre, input_grad(dy, W)) ->
/// merged_weight_grad(x, merged_input_grad(dy, W) * act'(pre)).
struct FuseActivationIntoInputGrad : OpRewritePattern<LinearActWeightGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearActWeightGradOp op,
                                PatternRewriter &rewriter) const override {
    // relu' is a compare and a select. GELU's and SiLU's derivatives cost
    // tens of operations a vector, which the weight gradient's pack (memory
    // bound) hid and the input gradient's output loop (compute bound) does
    // not: the GPT-2 block's backward was 1.5% slower with them here.
    if (op.getKind() != ActivationKind::relu)
      return rewriter.notifyMatchFailure(op, "act' is not relu's");
    SmallVector<Value> dys, weights;
    Operation *inputGrad = inputGradOf(op.getGrad(), dys, weights);
    if (!inputGrad)
      return rewriter.notifyMatchFailure(
          op, "dy is not the sole use of a bias-free input gradient");
    Location loc = rewriter.getFusedLoc({inputGrad->getLoc(), op.getLoc()});
    Attribute fused = op->getAttr(kFusedAttr);
    auto preGrad =
        MergedInputGradOp::create(rewriter, loc, op.getPreGrad().getType(), dys,
                                  weights, op.getPre(), op.getKindAttr());
    SmallVector<Type> biasTypes;
    if (Value db = op.getBiasGrad())
      biasTypes.push_back(db.getType());
    auto weightGrad = MergedWeightGradOp::create(
        rewriter, loc, TypeRange{op.getWeightGrad().getType()}, biasTypes,
        op.getInput(), ValueRange{preGrad.getResult()});
    if (fused) {
      preGrad->setAttr(kFusedAttr, fused);
      weightGrad->setAttr(kFusedAttr, fused);
    }
    SmallVector<Value> replacements = {weightGrad.getWeightGrads()[0],
                                       preGrad.getResult()};
    if (op.getBiasGrad())
      replacements.push_back(weightGrad.getBiasGrads()[0]);
    rewriter.replaceOp(op, replacements);
    rewriter.eraseOp(inputGrad);
    return success();
  }
};

struct TfcFuseActivationGrad
    : tfc::impl::TfcFuseActivationGradBase<TfcFuseActivationGrad> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseActivationIntoInputGrad>(&getContext());
    if (failed(applyFusionPatterns(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
