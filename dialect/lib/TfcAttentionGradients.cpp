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

/// Adds `grad` for a parameter operand (a tfc.param view) or, for any other
/// operand, to the operand's gradient.
static void addOperandGrad(GradientContext &context, Value operand,
                           Value grad) {
  if (auto param = operand.getDefiningOp<ParamOp>())
    context.addParamGrad(param, grad);
  else
    context.addGrad(operand, grad);
}

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
      getMaskAttr());
  // The backward op belongs to the same fusion: one switch turns both off.
  if (Attribute fused = (*this)->getAttr(kFused))
    grads->setAttr(kFused, fused);
  addOperandGrad(context, getQuery(), grads.getQueryGrad());
  addOperandGrad(context, getKey(), grads.getKeyGrad());
  addOperandGrad(context, getValue(), grads.getValueGrad());
  return success();
}
