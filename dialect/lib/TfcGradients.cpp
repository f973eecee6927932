//===- TfcGradients.cpp - Reverse-mode rules of the tfc ops -----*- C++ -*-===//
//
// One GradientOpInterface implementation per forward op: the chain rule for
// that op, written with tfc ops. Forward values come from
// `context.primal(...)` (saved activations, parameters); gradients go to
// `context.addGrad(...)`. docs/abi.md has the forward math these invert.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tfc;

/// The gradient of result 0, or null if nothing downstream depends on it.
static Value outputGrad(GradientContext &context) {
  return context.resultGrad(0);
}

void GradientContext::addOperandGrad(Value operand, Value grad) {
  if (auto param = operand.getDefiningOp<ParamOp>())
    addParamGrad(param, grad);
  else
    addGrad(operand, grad);
}

LogicalResult ParamOp::buildGradients(OpBuilder &, GradientContext &context) {
  // Parameter gradients are added where the parameter is used (see
  // addOperandGrad), at the exact layer of that use.
  return success();
}

LogicalResult LinearOp::buildGradients(OpBuilder &b, GradientContext &context) {
  Value dy = outputGrad(context);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value x = context.primal(getInput()), w = context.primal(getWeight());
  // y = x W  (W [in, out]):  dx = dy W^T, dW = x^T dy.
  // y = x W^T (W [out, in]): dx = dy W,   dW = dy^T x.
  bool transposed = getTransposeWeight();
  Value dx = LinearOp::create(b, loc, getInput().getType(), dy, w, Value(),
                              /*transpose_weight=*/!transposed);
  context.addOperandGrad(getInput(), dx);
  Value dw = LinearWeightGradOp::create(b, loc, getWeight().getType(), x, dy,
                                        transposed);
  context.addOperandGrad(getWeight(), dw);
  if (getBias())
    context.addOperandGrad(
        getBias(), ReduceRowsOp::create(b, loc, getBias().getType(), dy));
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b,
                                          GradientContext &context) {
  Value dy = outputGrad(context);
  if (!dy)
    return success();
  auto grads = LayerNormGradOp::create(
      b, getLoc(), getInput().getType(), getGamma().getType(),
      getBeta().getType(), context.primal(getInput()),
      context.primal(getGamma()), dy, getEpsilonAttr(), getGroupsAttr());
  context.addOperandGrad(getInput(), grads.getInputGrad());
  context.addOperandGrad(getGamma(), grads.getGammaGrad());
  context.addOperandGrad(getBeta(), grads.getBetaGrad());
  return success();
}

LogicalResult RMSNormOp::buildGradients(OpBuilder &b,
                                        GradientContext &context) {
  Value dy = outputGrad(context);
  if (!dy)
    return success();
  auto grads = RMSNormGradOp::create(
      b, getLoc(), getInput().getType(), getGamma().getType(),
      context.primal(getInput()), context.primal(getGamma()), dy,
      getEpsilonAttr(), getGroupsAttr());
  context.addOperandGrad(getInput(), grads.getInputGrad());
  context.addOperandGrad(getGamma(), grads.getGammaGrad());
  return success();
}

LogicalResult SplitHeadsOp::buildGradients(OpBuilder &b,
                                           GradientContext &context) {
  if (Value dy = outputGrad(context))
    context.addGrad(getInput(), MergeHeadsOp::create(b, getLoc(),
                                                     getInput().getType(), dy));
  return success();
}

LogicalResult MergeHeadsOp::buildGradients(OpBuilder &b,
                                           GradientContext &context) {
  if (Value dy = outputGrad(context))
    context.addGrad(getInput(), SplitHeadsOp::create(b, getLoc(),
                                                     getInput().getType(), dy));
  return success();
}

LogicalResult RepeatHeadsOp::buildGradients(OpBuilder &b,
                                            GradientContext &context) {
  if (Value dy = outputGrad(context))
    context.addGrad(getInput(), SumHeadGroupsOp::create(
                                    b, getLoc(), getInput().getType(), dy));
  return success();
}

LogicalResult SumHeadGroupsOp::buildGradients(OpBuilder &b,
                                              GradientContext &context) {
  if (Value dy = outputGrad(context))
    context.addGrad(getInput(), RepeatHeadsOp::create(
                                    b, getLoc(), getInput().getType(), dy));
  return success();
}

LogicalResult RopeOp::buildGradients(OpBuilder &b, GradientContext &context) {
  // A rotation's gradient is its transpose: the rotation by minus the angle.
  if (Value dy = outputGrad(context))
    context.addGrad(getInput(),
                    RopeOp::create(b, getLoc(), dy, getThetaAttr(),
                                   getRotaryDimAttr(), getStyleAttr(),
                                   getOffsetAttr(),
                                   getInverse() ? UnitAttr() : b.getUnitAttr(),
                                   getPositions()));
  return success();
}

LogicalResult AlibiOp::buildGradients(OpBuilder &, GradientContext &context) {
  // The bias is a constant of the positions: the gradient passes through.
  if (Value dy = outputGrad(context))
    context.addGrad(getInput(), dy);
  return success();
}

LogicalResult AttentionScoresOp::buildGradients(OpBuilder &b,
                                                GradientContext &context) {
  Value ds = outputGrad(context);
  if (!ds)
    return success();
  Location loc = getLoc();
  Value q = context.primal(getQuery()), k = context.primal(getKey());
  // S = Q K^T: dQ = dS K, dK = dS^T Q.
  context.addGrad(getQuery(),
                  BatchMatmulOp::create(b, loc, getQuery().getType(), ds, k,
                                        /*transpose_a=*/false,
                                        /*transpose_b=*/false));
  context.addGrad(getKey(), BatchMatmulOp::create(
                                b, loc, getKey().getType(), ds, q,
                                /*transpose_a=*/true, /*transpose_b=*/false));
  return success();
}

LogicalResult AttentionContextOp::buildGradients(OpBuilder &b,
                                                 GradientContext &context) {
  Value dout = outputGrad(context);
  if (!dout)
    return success();
  Location loc = getLoc();
  Value p = context.primal(getProbs()), v = context.primal(getValue());
  // O = P V: dP = dO V^T, dV = P^T dO.
  context.addGrad(getProbs(), BatchMatmulOp::create(
                                  b, loc, getProbs().getType(), dout, v,
                                  /*transpose_a=*/false, /*transpose_b=*/true));
  context.addGrad(getValue(), BatchMatmulOp::create(
                                  b, loc, getValue().getType(), p, dout,
                                  /*transpose_a=*/true, /*transpose_b=*/false));
  return success();
}

LogicalResult ScaleOp::buildGradients(OpBuilder &b, GradientContext &context) {
  if (Value dy = outputGrad(context))
    context.addGrad(getInput(),
                    ScaleOp::create(b, getLoc(), dy, getFactorAttr()));
  return success();
}

/// A padded batch's lengths, as backward reads them; null without.
static Value primalLengths(GradientContext &context, Value lengths) {
  return lengths ? context.primal(lengths) : Value();
}

LogicalResult MaskOp::buildGradients(OpBuilder &b, GradientContext &context) {
  if (Value dy = outputGrad(context))
    context.addGrad(getInput(),
                    MaskGradOp::create(b, getLoc(), dy, getKind(), getWindow(),
                                       primalLengths(context, getLengths())));
  return success();
}

LogicalResult ZeroPaddingOp::buildGradients(OpBuilder &b,
                                            GradientContext &context) {
  if (Value dy = outputGrad(context))
    context.addGrad(
        getInput(),
        ZeroPaddingOp::create(b, getLoc(), dy, context.primal(getLengths())));
  return success();
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b,
                                        GradientContext &context) {
  if (Value dy = outputGrad(context))
    context.addGrad(
        getInput(),
        SoftmaxGradOp::create(b, getLoc(), context.primal(getResult()), dy));
  return success();
}

LogicalResult ActivationOp::buildGradients(OpBuilder &b,
                                           GradientContext &context) {
  if (Value dy = outputGrad(context))
    context.addGrad(getInput(), ActivationGradOp::create(
                                    b, getLoc(), context.primal(getInput()), dy,
                                    getKind()));
  return success();
}

LogicalResult GLUOp::buildGradients(OpBuilder &b, GradientContext &context) {
  Value dy = outputGrad(context);
  if (!dy)
    return success();
  auto grads = GLUGradOp::create(b, getLoc(), getGate().getType(),
                                 getUp().getType(), context.primal(getGate()),
                                 context.primal(getUp()), dy, getKind());
  context.addGrad(getGate(), grads.getGateGrad());
  context.addGrad(getUp(), grads.getUpGrad());
  return success();
}

LogicalResult ResidualAddOp::buildGradients(OpBuilder &b,
                                            GradientContext &context) {
  Value dy = outputGrad(context);
  if (!dy)
    return success();
  double alpha = getAlpha().convertToDouble();
  Value dResidual =
      alpha == 1.0 ? dy : ScaleOp::create(b, getLoc(), dy, getAlphaAttr());
  context.addGrad(getResidual(), dResidual);
  context.addGrad(getBranch(), dy);
  return success();
}

LogicalResult EmbeddingOp::buildGradients(OpBuilder &b,
                                          GradientContext &context) {
  Value dy = outputGrad(context);
  if (!dy)
    return success();
  // Token ids have no gradient; the table gets dy's rows scattered back.
  context.addOperandGrad(
      getTable(), EmbeddingGradOp::create(b, getLoc(), getTable().getType(),
                                          context.primal(getTokens()), dy));
  return success();
}

LogicalResult AddPositionsOp::buildGradients(OpBuilder &b,
                                             GradientContext &context) {
  Value dy = outputGrad(context);
  if (!dy)
    return success();
  if (getPositions())
    return emitOpError("has no gradient at given positions (a decoding op)");
  context.addGrad(getInput(), dy);
  if (getTable())
    context.addOperandGrad(
        getTable(),
        PositionsGradOp::create(b, getLoc(), getTable().getType(), dy));
  return success();
}

LogicalResult CrossEntropyOp::buildGradients(OpBuilder &b,
                                             GradientContext &context) {
  Value dloss = outputGrad(context);
  if (!dloss)
    return success();
  context.addGrad(getLogits(), CrossEntropyGradOp::create(
                                   b, getLoc(), getLogits().getType(),
                                   context.primal(getLogits()),
                                   context.primal(getTargets()), dloss));
  return success();
}

LogicalResult AddOp::buildGradients(OpBuilder &, GradientContext &context) {
  // The loss plus the load-balancing losses, and their running sum across
  // layers: the gradient reaches both terms unchanged.
  if (Value dy = outputGrad(context)) {
    context.addGrad(getLhs(), dy);
    context.addGrad(getRhs(), dy);
  }
  return success();
}
