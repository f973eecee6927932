//===- TfcLinearFusionGradients.cpp - Rules of the fused linears -*- C++
//-*-===//
//
// The chain rule of the fused linear layers, built from fused backward ops:
// the input gradient of several parts is one matmul over their
// concatenated widths, the weight gradients one matmul that also sums the
// bias gradients, and an activation's gradient is computed while that
// matmul packs it. Backward ops carry the forward op's `tfc.fused` name, so
// the fusion report counts them under the same fusion.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// The attribute FusionPipeline.h names kFusedAttr (the dialect does not
/// depend on the passes).
constexpr StringLiteral kFused = "tfc.fused";

/// Marks a backward op as made by the same fusion as `forward`.
void inheritFusion(Operation *forward, Operation *backward) {
  if (Attribute name = forward->getAttr(kFused))
    backward->setAttr(kFused, name);
}

/// dx, dW_i and db_i of `x @ W_i + b_i` from the gradients `grads` of the
/// parts in `weights` (biases empty or one per part).
void addProjectionGrads(OpBuilder &b, GradientContext &context,
                        Operation *forward, Value input, ValueRange grads,
                        ValueRange weights, ValueRange biases) {
  Location loc = forward->getLoc();
  SmallVector<Value> primalWeights;
  SmallVector<Type> weightTypes, biasTypes;
  for (Value w : weights) {
    primalWeights.push_back(context.primal(w));
    weightTypes.push_back(w.getType());
  }
  for (Value bias : biases)
    biasTypes.push_back(bias.getType());
  auto dx =
      MergedInputGradOp::create(b, loc, input.getType(), grads, primalWeights,
                                /*act_input=*/Value(), ActivationKindAttr());
  inheritFusion(forward, dx);
  auto dw = MergedWeightGradOp::create(b, loc, weightTypes, biasTypes,
                                       context.primal(input), grads);
  inheritFusion(forward, dw);
  context.addOperandGrad(input, dx.getResult());
  for (auto [w, g] : llvm::zip_equal(weights, dw.getWeightGrads()))
    context.addOperandGrad(w, g);
  for (auto [bias, g] : llvm::zip_equal(biases, dw.getBiasGrads()))
    context.addOperandGrad(bias, g);
}

} // namespace

LogicalResult LinearActOp::buildGradients(OpBuilder &b,
                                          GradientContext &context) {
  Value dy = context.resultGrad(0);
  if (!dy)
    return success();
  if (context.resultGrad(1))
    return emitOpError("pre must have no gradient of its own");
  Location loc = getLoc();
  // d_pre = dy * act'(pre); dW = x^T d_pre, db = sums of d_pre (one sweep);
  // dx = d_pre W^T.
  Type biasType = getBias() ? getBias().getType() : Type();
  // One statement each: the order of the primal reads fixes the save slots.
  Value x = context.primal(getInput());
  // relu'(pre) = relu'(relu(pre)): the gradient reads the result, which the
  // next layer's weight gradient reads anyway, and pre is neither saved nor
  // written (a quarter less of the FFN's forward memory traffic).
  Value actInput = context.primal(
      getKind() == ActivationKind::relu ? getResult() : getPre());
  auto grads = LinearActWeightGradOp::create(b, loc, getWeight().getType(),
                                             getPre().getType(), biasType, x,
                                             actInput, dy, getKind());
  inheritFusion(*this, grads);
  auto dx = LinearOp::create(b, loc, getInput().getType(), grads.getPreGrad(),
                             context.primal(getWeight()), Value(),
                             /*transpose_weight=*/true);
  context.addOperandGrad(getInput(), dx);
  context.addOperandGrad(getWeight(), grads.getWeightGrad());
  if (getBias())
    context.addOperandGrad(getBias(), grads.getBiasGrad());
  return success();
}

LogicalResult MergedLinearOp::buildGradients(OpBuilder &b,
                                             GradientContext &context) {
  // Parts nothing downstream depends on drop out of both matmuls.
  SmallVector<Value> grads, weights, biases;
  for (unsigned i = 0; i < getResults().size(); ++i) {
    Value dy = context.resultGrad(i);
    if (!dy)
      continue;
    // A head-split result's gradient, [b, h, s, dh], as the rows the
    // matmuls contract over (split_heads' own rule).
    if (isHeadSplit(i))
      dy = MergeHeadsOp::create(b, getLoc(), getRowsType(i), dy);
    grads.push_back(dy);
    weights.push_back(getWeights()[i]);
    if (!getBiases().empty())
      biases.push_back(getBiases()[i]);
  }
  if (!grads.empty())
    addProjectionGrads(b, context, *this, getInput(), grads, weights, biases);
  return success();
}

LogicalResult GLULinearOp::buildGradients(OpBuilder &b,
                                          GradientContext &context) {
  Value dy = context.resultGrad(0);
  if (!dy)
    return success();
  if (context.resultGrad(1) || context.resultGrad(2))
    return emitOpError("gate and up must have no gradient of their own");
  Value gate = context.primal(getGate());
  Value up = context.primal(getUp());
  auto glu = GLUGradOp::create(b, getLoc(), getGate().getType(),
                               getUp().getType(), gate, up, dy, getKind());
  inheritFusion(*this, glu);
  addProjectionGrads(b, context, *this, getInput(),
                     {glu.getGateGrad(), glu.getUpGrad()},
                     {getGateWeight(), getUpWeight()}, getBiases());
  return success();
}
