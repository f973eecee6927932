//===- LossHeadGradients.cpp - Reverse mode of loss_head ---------*- C++
//-*-===//
//
// The logits' gradient of tfc.loss_head was computed by forward, for
// d_loss = 1, in the sweep that computed the loss: backward reads it back
// (scaled when d_loss is anything else) and continues as tfc.linear's rule.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::tfc;

/// Backward ops carry the forward op's fusion name (transforms/
/// FusionPipeline.h, kFusedAttr): one switch turns a fusion off both ways,
/// and the fusion report counts both.
static Value sameFusion(Operation *forward, Operation *backward) {
  if (Attribute name = forward->getAttr("tfc.fused"))
    backward->setAttr("tfc.fused", name);
  return backward->getResult(0);
}

/// The value of a splat constant (d_loss seeded with 1 by
/// tfc-derive-backward), if `v` is one.
static std::optional<double> splatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !attr.getElementType().isF32())
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

LogicalResult LossHeadOp::buildGradients(OpBuilder &b,
                                         GradientContext &context) {
  if (context.resultGrad(2))
    return emitOpError("logits_grad is a by-product for backward; nothing "
                       "may differentiate through it");
  Value dLogitsOther = context.resultGrad(0); // The logits as an output.
  Value dLoss = context.resultGrad(1);
  Location loc = getLoc();
  Value dLogits;
  if (dLoss) {
    Value unit = context.primal(getLogitsGrad());
    std::optional<double> seed = splatValue(dLoss);
    if (seed == 1.0)
      dLogits = unit;
    else if (seed)
      dLogits = sameFusion(
          *this, ScaleOp::create(b, loc, unit, b.getF64FloatAttr(*seed)));
    else
      dLogits = sameFusion(*this, ScaleByOp::create(b, loc, unit, dLoss));
  }
  if (dLogitsOther)
    dLogits = dLogits ? sameFusion(*this,
                                   AddOp::create(b, loc, dLogitsOther, dLogits))
                      : dLogitsOther;
  if (!dLogits)
    return success();

  // As tfc.linear's rule. y = x W: dx = dy W^T, dW = x^T dy; y = x W^T
  // (tied): dx = dy W, dW = dy^T x.
  bool transposed = getTransposeWeight();
  Value w = context.primal(getWeight());
  context.addOperandGrad(
      getInput(),
      sameFusion(*this, LinearOp::create(b, loc, getInput().getType(), dLogits,
                                         w, Value(), !transposed)));
  context.addOperandGrad(
      getWeight(),
      sameFusion(*this, LinearWeightGradOp::create(
                            b, loc, getWeight().getType(),
                            context.primal(getInput()), dLogits, transposed)));
  if (getBias())
    context.addOperandGrad(
        getBias(),
        sameFusion(*this,
                   ReduceRowsOp::create(b, loc, getBias().getType(), dLogits)));
  return success();
}
