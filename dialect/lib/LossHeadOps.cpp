//===- LossHeadOps.cpp - Verifiers of the fused loss head --------*- C++
//-*-===//
//
// tfc.loss_head is tfc.linear and tfc.cross_entropy in one op: the rules of
// both, stated for [batch, seq, width] activations and [batch, seq] targets.
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"
#include "tfc/Dialect/TfcDialect.h"

using namespace mlir;
using namespace mlir::tfc;
using namespace mlir::tfc::shape;

int64_t LossHeadOp::getInFeatures() {
  return cast<RankedTensorType>(getWeight().getType())
      .getDimSize(getTransposeWeight() ? 1 : 0);
}

int64_t LossHeadOp::getOutFeatures() {
  return cast<RankedTensorType>(getWeight().getType())
      .getDimSize(getTransposeWeight() ? 0 : 1);
}

LogicalResult LossHeadOp::verify() {
  auto input = cast<RankedTensorType>(getInput().getType());
  auto weight = cast<RankedTensorType>(getWeight().getType());
  auto logits = cast<RankedTensorType>(getLogits().getType());
  auto targets = cast<RankedTensorType>(getTargets().getType());
  if (weight.getRank() != 2)
    return emitOpError("weight must have rank 2, got rank ")
           << weight.getRank();
  if (input.getRank() != 3)
    return emitOpError(
               "input must have rank 3 ([batch, seq, width]), got rank ")
           << input.getRank();
  if (logits.getRank() != 3)
    return emitOpError("logits must have rank 3, got rank ")
           << logits.getRank();
  if (targets.getRank() != 2)
    return emitOpError("targets must have rank 2, got rank ")
           << targets.getRank();
  if (!dimsAgree(input.getDimSize(2), getInFeatures()))
    return emitOpError("input width (")
           << dimStr(input.getDimSize(2))
           << ") does not match the weight's input width ("
           << dimStr(getInFeatures()) << ")";
  if (!dimsAgree(logits.getDimSize(2), getOutFeatures()))
    return emitOpError("logits width (")
           << dimStr(logits.getDimSize(2))
           << ") does not match the weight's output width ("
           << dimStr(getOutFeatures()) << ")";
  for (int64_t i = 0; i < 2; ++i) {
    if (!dimsAgree(logits.getDimSize(i), input.getDimSize(i)))
      return emitOpError("logits dimension ")
             << i << " (" << dimStr(logits.getDimSize(i))
             << ") does not match input dimension " << i << " ("
             << dimStr(input.getDimSize(i)) << ")";
    if (!dimsAgree(targets.getDimSize(i), logits.getDimSize(i)))
      return emitOpError("targets dimension ")
             << i << " (" << dimStr(targets.getDimSize(i))
             << ") does not match logits dimension " << i << " ("
             << dimStr(logits.getDimSize(i)) << ")";
  }
  if (Value bias = getBias()) {
    int64_t size = cast<RankedTensorType>(bias.getType()).getDimSize(0);
    if (!dimsAgree(size, getOutFeatures()))
      return emitOpError("bias has ")
             << dimStr(size) << " elements, expected "
             << dimStr(getOutFeatures()) << " (the output width)";
  }
  return success();
}
