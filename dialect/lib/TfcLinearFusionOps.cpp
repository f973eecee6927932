//===- TfcLinearFusionOps.cpp - Verifiers of the fused linears --*- C++ -*-===//
//
// The shape rules of tfc.linear, once per part of a fused op, plus the
// rules that make a fusion's extra results safe to drop in inference: the
// pre-activations are for backward only.
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"
#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::tfc;
using namespace mlir::tfc::shape;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// "weight 1" for part 1 of a multi-part op, "weight" for a single one.
std::string named(StringRef what, std::optional<unsigned> part) {
  return part ? (what + " " + Twine(*part)).str() : what.str();
}

/// `result = input @ weight (+ bias)`: the rules of tfc.linear, with the
/// operand names of part `part`.
LogicalResult verifyLinearPart(Operation *op, Value input, Value weight,
                               Value bias, RankedTensorType out,
                               std::optional<unsigned> part) {
  RankedTensorType w = typeOf(weight), in = typeOf(input);
  if (w.getRank() != 2)
    return op->emitOpError() << named("weight", part)
                             << " must have rank 2, got rank " << w.getRank();
  if (in.getRank() < 2)
    return op->emitOpError("input must have rank >= 2, got rank ")
           << in.getRank();
  if (out.getRank() != in.getRank())
    return op->emitOpError()
           << named("result", part) << " rank (" << out.getRank()
           << ") must equal input rank (" << in.getRank() << ")";
  int64_t last = in.getRank() - 1;
  if (!dimsAgree(in.getDimSize(last), w.getDimSize(0)))
    return op->emitOpError()
           << "input width (" << dimStr(in.getDimSize(last))
           << ") does not match the input width of " << named("weight", part)
           << " (" << dimStr(w.getDimSize(0)) << ")";
  if (!dimsAgree(out.getDimSize(last), w.getDimSize(1)))
    return op->emitOpError()
           << named("result", part) << " width ("
           << dimStr(out.getDimSize(last))
           << ") does not match the output width of " << named("weight", part)
           << " (" << dimStr(w.getDimSize(1)) << ")";
  for (int64_t i = 0; i < last; ++i)
    if (!dimsAgree(out.getDimSize(i), in.getDimSize(i)))
      return op->emitOpError()
             << named("result", part) << " dimension " << i << " ("
             << dimStr(out.getDimSize(i)) << ") does not match input dimension "
             << i << " (" << dimStr(in.getDimSize(i)) << ")";
  if (!bias)
    return success();
  RankedTensorType b = typeOf(bias);
  if (b.getRank() != 1 || !dimsAgree(b.getDimSize(0), w.getDimSize(1)))
    return op->emitOpError()
           << named("bias", part) << " must be a vector of "
           << dimStr(w.getDimSize(1)) << " elements (the output width of "
           << named("weight", part) << "), got " << b;
  return success();
}

/// A result only backward reads must not be used in the forward function:
/// inference drops it. Backward (where tfc.recompute computes the op again)
/// reads it directly.
LogicalResult verifyBackwardOnly(Operation *op, Value result, StringRef name) {
  auto fn = op->getParentOfType<FunctionOpInterface>();
  if (fn && fn->hasAttr("tfc.backward_of"))
    return success();
  if (!result.use_empty())
    return op->emitOpError()
           << name << " is read by backward only and must have no uses";
  return success();
}

} // namespace

LogicalResult LinearActOp::verify() {
  if (failed(verifyLinearPart(*this, getInput(), getWeight(), getBias(),
                              typeOf(getResult()), std::nullopt)))
    return failure();
  return verifyBackwardOnly(*this, getPre(), "pre");
}

bool MergedLinearOp::isHeadSplit(unsigned i) {
  return typeOf(getInput()).getRank() == 3 &&
         typeOf(getResults()[i]).getRank() == 4;
}

RankedTensorType MergedLinearOp::getRowsType(unsigned i) {
  RankedTensorType result = typeOf(getResults()[i]);
  if (!isHeadSplit(i))
    return result;
  // A weight of another rank fails verifyLinearPart: any width will do.
  RankedTensorType in = typeOf(getInput()), w = typeOf(getWeights()[i]);
  int64_t width = w.getRank() == 2 ? w.getDimSize(1) : ShapedType::kDynamic;
  return RankedTensorType::get({in.getDimSize(0), in.getDimSize(1), width},
                               result.getElementType());
}

LogicalResult MergedLinearOp::verify() {
  unsigned parts = getWeights().size();
  if (parts < 2)
    return emitOpError("needs at least two weights, got ") << parts;
  if (getResults().size() != parts)
    return emitOpError("has ")
           << getResults().size() << " results, expected one per weight ("
           << parts << ")";
  if (!getBiases().empty() && getBiases().size() != parts)
    return emitOpError("has ")
           << getBiases().size() << " biases, expected none or one per weight ("
           << parts << ")";
  for (unsigned i = 0; i < parts; ++i) {
    Value result = getResults()[i];
    if (failed(verifyLinearPart(*this, getInput(), getWeights()[i],
                                getBiases().empty() ? Value() : getBiases()[i],
                                getRowsType(i), i)))
      return failure();
    if (isHeadSplit(i) &&
        failed(verifyHeadSplit(*this, getRowsType(i),
                               "rows of " + named("result", i), typeOf(result),
                               named("result", i))))
      return failure();
  }
  return success();
}

LogicalResult GLULinearOp::verify() {
  if (getGateWeight().getType() != getUpWeight().getType())
    return emitOpError("gate weight type ")
           << getGateWeight().getType() << " differs from up weight type "
           << getUpWeight().getType();
  if (!getBiases().empty() && getBiases().size() != 2)
    return emitOpError("has ")
           << getBiases().size() << " biases, expected none or (gate, up)";
  Value gateBias = getBiases().empty() ? Value() : getBiases()[0];
  Value upBias = getBiases().empty() ? Value() : getBiases()[1];
  if (failed(verifyLinearPart(*this, getInput(), getGateWeight(), gateBias,
                              typeOf(getResult()), 0)) ||
      failed(verifyLinearPart(*this, getInput(), getUpWeight(), upBias,
                              typeOf(getResult()), 1)))
    return failure();
  if (failed(verifyBackwardOnly(*this, getGate(), "gate")))
    return failure();
  return verifyBackwardOnly(*this, getUp(), "up");
}

LogicalResult MergedInputGradOp::verify() {
  unsigned parts = getWeights().size();
  if (parts == 0 || getGrads().size() != parts)
    return emitOpError("needs one grad per weight and at least one, got ")
           << getGrads().size() << " grads and " << parts << " weights";
  // dx = sum_i dy_i W_i^T: part i is a linear of dy_i with W_i transposed.
  RankedTensorType result = getResult().getType();
  for (unsigned i = 0; i < parts; ++i) {
    RankedTensorType w = typeOf(getWeights()[i]), dy = typeOf(getGrads()[i]);
    if (w.getRank() != 2)
      return emitOpError() << "weight " << i << " must have rank 2, got rank "
                           << w.getRank();
    if (dy.getRank() != result.getRank())
      return emitOpError() << "grad " << i << " rank (" << dy.getRank()
                           << ") must equal result rank (" << result.getRank()
                           << ")";
    int64_t last = dy.getRank() - 1;
    if (!dimsAgree(dy.getDimSize(last), w.getDimSize(1)))
      return emitOpError() << "grad " << i << " width ("
                           << dimStr(dy.getDimSize(last))
                           << ") does not match the output width of weight "
                           << i << " (" << dimStr(w.getDimSize(1)) << ")";
    if (!dimsAgree(result.getDimSize(last), w.getDimSize(0)))
      return emitOpError() << "result width ("
                           << dimStr(result.getDimSize(last))
                           << ") does not match the input width of weight " << i
                           << " (" << dimStr(w.getDimSize(0)) << ")";
    for (int64_t d = 0; d < last; ++d)
      if (!dimsAgree(dy.getDimSize(d), result.getDimSize(d)))
        return emitOpError() << "grad " << i << " dimension " << d << " ("
                             << dimStr(dy.getDimSize(d))
                             << ") does not match result dimension " << d
                             << " (" << dimStr(result.getDimSize(d)) << ")";
  }
  if (bool(getActInput()) != bool(getKindAttr()))
    return emitOpError("needs both an activation kind and its act_input, or "
                       "neither");
  if (getActInput() && getActInput().getType() != result)
    return emitOpError() << "act_input type " << getActInput().getType()
                         << " must equal the result type " << result;
  return success();
}

/// dW = x^T dy is [in, out] where x is [..., in] and dy [..., out]; db is
/// [out].
static LogicalResult verifyWeightGradPart(Operation *op, Value input,
                                          Value grad, Value weightGrad,
                                          Value biasGrad, unsigned part,
                                          bool multiPart) {
  std::optional<unsigned> index =
      multiPart ? std::optional<unsigned>(part) : std::nullopt;
  RankedTensorType x = typeOf(input), dy = typeOf(grad),
                   dw = typeOf(weightGrad);
  if (dy.getRank() != x.getRank())
    return op->emitOpError()
           << named("grad", index) << " rank (" << dy.getRank()
           << ") must equal input rank (" << x.getRank() << ")";
  int64_t last = x.getRank() - 1;
  for (int64_t d = 0; d < last; ++d)
    if (!dimsAgree(dy.getDimSize(d), x.getDimSize(d)))
      return op->emitOpError()
             << named("grad", index) << " dimension " << d << " ("
             << dimStr(dy.getDimSize(d)) << ") does not match input dimension "
             << d << " (" << dimStr(x.getDimSize(d)) << ")";
  if (dw.getRank() != 2 || !dimsAgree(dw.getDimSize(0), x.getDimSize(last)) ||
      !dimsAgree(dw.getDimSize(1), dy.getDimSize(last)))
    return op->emitOpError()
           << named("weight grad", index) << " must be ["
           << dimStr(x.getDimSize(last)) << ", " << dimStr(dy.getDimSize(last))
           << "] (input width, " << named("grad", index) << " width), got "
           << dw;
  if (biasGrad &&
      !dimsAgree(typeOf(biasGrad).getDimSize(0), dy.getDimSize(last)))
    return op->emitOpError()
           << named("bias grad", index) << " must have "
           << dimStr(dy.getDimSize(last)) << " elements ("
           << named("grad", index) << " width), got " << typeOf(biasGrad);
  return success();
}

LogicalResult MergedWeightGradOp::verify() {
  unsigned parts = getGrads().size();
  if (parts == 0 || getWeightGrads().size() != parts)
    return emitOpError("needs one weight grad per grad and at least one, got ")
           << getWeightGrads().size() << " weight grads and " << parts
           << " grads";
  if (!getBiasGrads().empty() && getBiasGrads().size() != parts)
    return emitOpError("has ")
           << getBiasGrads().size()
           << " bias grads, expected none or one per grad (" << parts << ")";
  for (unsigned i = 0; i < parts; ++i)
    if (failed(verifyWeightGradPart(
            *this, getInput(), getGrads()[i], getWeightGrads()[i],
            getBiasGrads().empty() ? Value() : getBiasGrads()[i], i, true)))
      return failure();
  return success();
}

LogicalResult LinearActWeightGradOp::verify() {
  return verifyWeightGradPart(*this, getInput(), getGrad(), getWeightGrad(),
                              getBiasGrad(), 0, false);
}
