//===- TfcMoeOps.cpp - Verifiers of the mixture-of-experts ops ------------===//
//
// The shapes TfcMoeOps.td states: tokens [b, t, ...], a token's k choices
// [b, t, k], assignment rows [A, width], per-expert tensors [E, ...] and
// offsets [E + 1]. The lowering needs E, k and the widths static.
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"
#include "tfc/Dialect/TfcDialect.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;
using namespace mlir::tfc::shape;

namespace {

/// `v` has rank `rank` and a static last dimension.
LogicalResult verifyStaticWidth(Operation *op, Value v, StringRef name,
                                int64_t rank) {
  if (failed(verifyRank(op, v, name, rank)))
    return failure();
  if (tensorType(v).isDynamicDim(rank - 1))
    return op->emitOpError() << name << " must have a static last dimension";
  return success();
}

/// `choices` ([b, t, k]) has the token dimensions of `tokens` ([b, t, ...])
/// and `k` choices per token.
LogicalResult verifyChoices(Operation *op, Value choices, StringRef name,
                            Value tokens, StringRef tokensName, int64_t k) {
  if (failed(verifyStaticWidth(op, choices, name, 3)) ||
      failed(verifyLeadingDims(op, tensorType(choices), name,
                               tensorType(tokens), tokensName, 2)))
    return failure();
  int64_t actual = tensorType(choices).getDimSize(2);
  if (!dimsAgree(actual, k))
    return op->emitOpError()
           << name << " has " << actual << " choices per token, expected "
           << dimStr(k) << " (" << tokensName << "'s)";
  return success();
}

/// `offsets` is [E + 1] for `experts` experts.
LogicalResult verifyOffsets(Operation *op, Value offsets, int64_t experts,
                            StringRef expertsWhat) {
  return verifyVector(op, offsets, "offsets",
                      ShapedType::isDynamic(experts) ? experts : experts + 1,
                      ("one more than the experts of " + expertsWhat).str());
}

} // namespace

int64_t MoeRouteOp::getNumExperts() {
  return getLogits().getType().getDimSize(2);
}

LogicalResult MoeRouteOp::verify() {
  if (failed(verifyStaticWidth(*this, getLogits(), "logits", 3)))
    return failure();
  int64_t experts = getNumExperts();
  int64_t k = getTopK();
  if (experts < 2)
    return emitOpError("routes among at least 2 experts, got ") << experts;
  if (k > experts)
    return emitOpError("top_k (")
           << k << ") exceeds the number of experts (" << experts << ")";
  if (getAuxLoss().convertToDouble() < 0.0 ||
      !std::isfinite(getAuxLoss().convertToDouble()))
    return emitOpError("aux_loss must be a finite number >= 0, got ")
           << getAuxLoss().convertToDouble();
  Value logits = getLogits();
  if (failed(verifyChoices(*this, getGates(), "gates", logits, "logits", k)) ||
      failed(
          verifyChoices(*this, getExperts(), "experts", logits, "logits", k)) ||
      failed(verifyChoices(*this, getSlots(), "slots", logits, "logits", k)) ||
      failed(verifyOffsets(*this, getOffsets(), experts, "logits")))
    return failure();
  if (getLengths())
    return verifyLengths(*this, getLengths(), logits, "logits");
  return success();
}

LogicalResult MoeDispatchOp::verify() {
  if (failed(verifyStaticWidth(*this, getInput(), "input", 3)) ||
      failed(verifyStaticWidth(*this, getSlots(), "slots", 3)) ||
      failed(verifyLeadingDims(*this, getSlots().getType(), "slots",
                               getInput().getType(), "input", 2)) ||
      failed(verifyStaticWidth(*this, getResult(), "result", 2)))
    return failure();
  int64_t width = getInput().getType().getDimSize(2);
  if (getResult().getType().getDimSize(1) != width)
    return emitOpError("result width (")
           << getResult().getType().getDimSize(1)
           << ") does not match the input width (" << width << ")";
  if (getGates())
    return verifyChoices(*this, getGates(), "gates", getSlots(), "slots",
                         getSlots().getType().getDimSize(2));
  return success();
}

LogicalResult MoeCombineOp::verify() {
  if (failed(verifyStaticWidth(*this, getInput(), "input", 2)) ||
      failed(verifyStaticWidth(*this, getSlots(), "slots", 3)) ||
      failed(verifyStaticWidth(*this, getResult(), "result", 3)) ||
      failed(verifyLeadingDims(*this, getResult().getType(), "result",
                               getSlots().getType(), "slots", 2)))
    return failure();
  int64_t width = getInput().getType().getDimSize(1);
  if (getResult().getType().getDimSize(2) != width)
    return emitOpError("result width (")
           << getResult().getType().getDimSize(2)
           << ") does not match the input width (" << width << ")";
  if (getGates() &&
      failed(verifyChoices(*this, getGates(), "gates", getSlots(), "slots",
                           getSlots().getType().getDimSize(2))))
    return failure();
  if (getBase() && getBase().getType() != getResult().getType())
    return emitOpError("base type ")
           << getBase().getType() << " does not match the result type "
           << getResult().getType();
  return success();
}

int64_t GroupedLinearOp::getInFeatures() {
  return getWeight().getType().getDimSize(getTransposeWeight() ? 2 : 1);
}

int64_t GroupedLinearOp::getOutFeatures() {
  return getWeight().getType().getDimSize(getTransposeWeight() ? 1 : 2);
}

LogicalResult GroupedLinearOp::verify() {
  if (failed(verifyStaticWidth(*this, getInput(), "input", 2)) ||
      failed(verifyStaticWidth(*this, getResult(), "result", 2)) ||
      failed(verifyRank(*this, getWeight(), "weight", 3)))
    return failure();
  auto weight = getWeight().getType();
  if (!weight.hasStaticShape())
    return emitOpError("weight must have a static shape, got ") << weight;
  int64_t experts = weight.getDimSize(0);
  if (failed(verifyOffsets(*this, getOffsets(), experts, "weight")))
    return failure();
  if (getInput().getType().getDimSize(1) != getInFeatures())
    return emitOpError("input width (")
           << getInput().getType().getDimSize(1)
           << ") does not match the weight's input width (" << getInFeatures()
           << ")";
  if (getResult().getType().getDimSize(1) != getOutFeatures())
    return emitOpError("result width (")
           << getResult().getType().getDimSize(1)
           << ") does not match the weight's output width (" << getOutFeatures()
           << ")";
  if (!getBias())
    return success();
  auto bias = getBias().getType();
  if (bias.getRank() != 2 || bias.getDimSize(0) != experts ||
      bias.getDimSize(1) != getOutFeatures())
    return emitOpError("bias must be [")
           << experts << ", " << getOutFeatures() << "] (experts, output "
           << "width), got " << bias;
  return success();
}

LogicalResult ExpertCountsOp::verify() {
  auto counts = getCounts().getType();
  if (counts.getRank() != 2 || !counts.hasStaticShape())
    return emitOpError("counts must be a static [depth, experts] tensor, got ")
           << counts;
  return verifyOffsets(*this, getOffsets(), counts.getDimSize(1), "counts");
}
