//===- ResidualNormOps.cpp - Verifiers of the fused residual norm -*- C++ -*-//
//
// tfc.residual_norm and tfc.residual_norm_grad: types are matched by traits;
// here the norm's weights against the normalised width, the results the norm
// kind and alpha call for, and epsilon.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

using namespace mlir;
using namespace mlir::tfc;

static std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// `weight` is a vector of the normalised width (the last dimension of
/// `rows`), when both sizes are known.
static LogicalResult verifyWeight(Operation *op, Value rows, Value weight,
                                  StringRef name) {
  auto type = cast<RankedTensorType>(rows.getType());
  if (type.getRank() < 1)
    return op->emitOpError("operands must have rank >= 1");
  int64_t width = type.getDimSize(type.getRank() - 1);
  int64_t size = cast<RankedTensorType>(weight.getType()).getDimSize(0);
  if (!ShapedType::isDynamic(width) && !ShapedType::isDynamic(size) &&
      width != size)
    return op->emitOpError()
           << name << " has " << dimStr(size) << " elements, expected "
           << dimStr(width) << " (the normalised width)";
  return success();
}

static LogicalResult verifyEpsilon(Operation *op, APFloat epsilon) {
  if (!(epsilon.convertToDouble() > 0.0))
    return op->emitOpError("epsilon must be positive, got ")
           << epsilon.convertToDouble();
  return success();
}

LogicalResult ResidualNormOp::verify() {
  if (failed(verifyWeight(*this, getResidual(), getGamma(), "gamma")))
    return failure();
  bool layerNorm = getKind() == NormKind::layernorm;
  if (layerNorm && !getBeta())
    return emitOpError("a layernorm needs beta");
  if (!layerNorm && getBeta())
    return emitOpError("an rmsnorm takes no beta");
  return verifyEpsilon(*this, getEpsilon());
}

LogicalResult ResidualNormGradOp::verify() {
  if (failed(verifyWeight(*this, getSum(), getGamma(), "gamma")))
    return failure();
  bool layerNorm = getKind() == NormKind::layernorm;
  if (layerNorm && !getBetaGrad())
    return emitOpError("a layernorm gradient needs a beta_grad result");
  if (!layerNorm && getBetaGrad())
    return emitOpError("an rmsnorm gradient has no beta_grad result");
  double alpha = getAlpha().convertToDouble();
  if (alpha != 1.0 && !getResidualGrad())
    return emitOpError("alpha = ")
           << alpha << " needs a residual_grad result (alpha * branch_grad)";
  if (alpha == 1.0 && getResidualGrad())
    return emitOpError("with alpha = 1 the residual's gradient is branch_grad; "
                       "residual_grad must be absent");
  return verifyEpsilon(*this, getEpsilon());
}
