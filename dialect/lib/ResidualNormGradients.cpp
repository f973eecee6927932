//===- ResidualNormGradients.cpp - Reverse mode of residual_norm -*- C++
//-*-===//
//
// The chain rule of tfc.residual_norm as one fused backward op: the norm's
// input gradient, the gradient the sum gets from its other uses, and the
// residual add's split into residual and branch, one pass per row.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tfc;

/// Backward ops carry the forward op's fusion name (transforms/
/// FusionPipeline.h, kFusedAttr): one switch turns a fusion off both ways,
/// and the fusion report counts both.
static Operation *sameFusion(Operation *forward, Operation *backward) {
  if (Attribute name = forward->getAttr("tfc.fused"))
    backward->setAttr("tfc.fused", name);
  return backward;
}

LogicalResult ResidualNormOp::buildGradients(OpBuilder &b,
                                             GradientContext &context) {
  Value dSumOther = context.resultGrad(0); // From the sum's other uses.
  Value dNormed = context.resultGrad(1);
  if (!dSumOther && !dNormed)
    return success();
  Location loc = getLoc();
  bool scaled = getAlpha().convertToDouble() != 1.0;
  Value dSum, dResidual;
  if (!dNormed) {
    // The norm does not reach the outputs: only the add's rule is left.
    dSum = dSumOther;
    dResidual =
        scaled
            ? sameFusion(*this, ScaleOp::create(b, loc, dSum, getAlphaAttr()))
                  ->getResult(0)
            : dSum;
  } else {
    bool layerNorm = getKind() == NormKind::layernorm;
    Type rows = getSum().getType(), weight = getGamma().getType();
    auto grads = ResidualNormGradOp::create(
        b, loc, rows, scaled ? rows : Type(), weight,
        layerNorm ? weight : Type(), context.primal(getSum()),
        context.primal(getGamma()), dNormed, dSumOther, getKindAttr(),
        getAlphaAttr(), getEpsilonAttr());
    sameFusion(*this, grads);
    dSum = grads.getBranchGrad();
    dResidual = scaled ? grads.getResidualGrad() : dSum;
    context.addOperandGrad(getGamma(), grads.getGammaGrad());
    if (layerNorm)
      context.addOperandGrad(getBeta(), grads.getBetaGrad());
  }
  context.addGrad(getResidual(), dResidual);
  context.addGrad(getBranch(), dSum);
  return success();
}
