//===- TfcAttentionGradients.cpp - Gradient of the fused attention -*- C++ -*-//
//
// tfc.flash_attention's rule builds one tfc.flash_attention_grad, which
// recomputes the probabilities from the saved log-sum-exp instead of
// reading a saved [s, t] matrix: backward reads q, k, v, out and lse, all
// linear in the sequence length.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tfc;

/// The attribute naming the fusion that made an op (FusionPipeline.h; the
/// dialect does not depend on the passes).
static constexpr llvm::StringLiteral kFused = "tfc.fused";

LogicalResult FlashAttentionOp::buildGradients(OpBuilder &b,
                                               GradientContext &context) {
  // lse only feeds the gradient; nothing in a model differentiates it.
  if (context.resultGrad(1))
    return emitOpError("lse has a gradient; only out can be differentiated");
  Value dOut = context.resultGrad(0);
  if (!dOut)
    return success();
  auto grads = FlashAttentionGradOp::create(
      b, getLoc(), getQuery().getType(), getKey().getType(),
      getValue().getType(), context.primal(getQuery()),
      context.primal(getKey()), context.primal(getValue()),
      context.primal(getOut()), context.primal(getLse()), dOut, getScaleAttr(),
      getMaskAttr(), getWindowAttr(), getAlibiAttr(),
      getLengths() ? context.primal(getLengths()) : Value());
  // The backward op belongs to the same fusion: one switch turns both off.
  if (Attribute fused = (*this)->getAttr(kFused))
    grads->setAttr(kFused, fused);
  context.addOperandGrad(getQuery(), grads.getQueryGrad());
  context.addOperandGrad(getKey(), grads.getKeyGrad());
  context.addOperandGrad(getValue(), grads.getValueGrad());
  return success();
}

/// `grad`, marked with the fusion that made `op` (one switch turns both off).
static Value sameFusion(Operation *op, Operation *grad) {
  if (Attribute fused = op->getAttr(kFused))
    grad->setAttr(kFused, fused);
  return grad->getResult(0);
}

/// The attributes of a rotation's transpose: the same rotation by minus the
/// angle.
template <typename RopeLike>
static UnitAttr transposedRotation(RopeLike op, OpBuilder &b) {
  return op.getInverse() ? UnitAttr() : b.getUnitAttr();
}

LogicalResult SplitHeadsRopeOp::buildGradients(OpBuilder &b,
                                               GradientContext &context) {
  // The transpose of split-then-rotate: rotate back, then merge.
  if (Value dy = context.resultGrad(0))
    context.addGrad(getInput(),
                    sameFusion(*this, RopeMergeHeadsOp::create(
                                          b, getLoc(), getInput().getType(), dy,
                                          getThetaAttr(), getRotaryDimAttr(),
                                          getStyleAttr(), getOffsetAttr(),
                                          transposedRotation(*this, b))));
  return success();
}

LogicalResult RopeMergeHeadsOp::buildGradients(OpBuilder &b,
                                               GradientContext &context) {
  if (Value dy = context.resultGrad(0))
    context.addGrad(getInput(),
                    sameFusion(*this, SplitHeadsRopeOp::create(
                                          b, getLoc(), getInput().getType(), dy,
                                          getThetaAttr(), getRotaryDimAttr(),
                                          getStyleAttr(), getOffsetAttr(),
                                          transposedRotation(*this, b))));
  return success();
}
