//===- TfcOps.cpp - tfc op verifiers ----------------------------*- C++ -*-===//
//
// Shape rules the traits cannot state. Every message names the operand and
// both sizes, so a frontend bug reads like a sentence.
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"
#include "tfc/Dialect/TfcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;
using namespace mlir::tfc::shape;

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  RankedTensorType type = getResult().getType();
  if (!type.hasStaticShape())
    return emitOpError("result must have a static shape");
  // The accessors return unsigned values; the attributes are signed.
  int64_t offset = getOffsetAttr().getInt();
  int64_t layerStride = getLayerStrideAttr().getInt();
  if (offset < 0)
    return emitOpError("offset must be non-negative, got ") << offset;
  int64_t numel = type.getNumElements();
  if (getLayer()) {
    if (layerStride < numel)
      return emitOpError("layer_stride (")
             << layerStride << ") must be at least the tensor's element count ("
             << numel << ")";
  } else if (layerStride != 0) {
    return emitOpError("layer_stride needs a layer index");
  }
  int64_t bufferSize = getParams().getType().getDimSize(0);
  if (!ShapedType::isDynamic(bufferSize) && !getLayer() &&
      offset + numel > bufferSize)
    return emitOpError("parameter [")
           << offset << ", " << offset + numel
           << ") exceeds the parameter buffer of " << bufferSize << " floats";
  return success();
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

int64_t LinearOp::getInFeatures() {
  return getWeight().getType().getDimSize(getTransposeWeight() ? 1 : 0);
}

int64_t LinearOp::getOutFeatures() {
  return getWeight().getType().getDimSize(getTransposeWeight() ? 0 : 1);
}

LogicalResult LinearOp::verify() {
  if (failed(verifyRank(*this, getWeight(), "weight", 2)))
    return failure();
  RankedTensorType input = getInput().getType();
  RankedTensorType result = getResult().getType();
  if (input.getRank() < 2)
    return emitOpError("input must have rank >= 2, got rank ")
           << input.getRank();
  if (result.getRank() != input.getRank())
    return emitOpError("result rank (")
           << result.getRank() << ") must equal input rank (" << input.getRank()
           << ")";
  int64_t last = input.getRank() - 1;
  if (!dimsAgree(input.getDimSize(last), getInFeatures()))
    return emitOpError("input width (")
           << dimStr(input.getDimSize(last))
           << ") does not match the weight's input width ("
           << dimStr(getInFeatures()) << ")";
  if (!dimsAgree(result.getDimSize(last), getOutFeatures()))
    return emitOpError("result width (")
           << dimStr(result.getDimSize(last))
           << ") does not match the weight's output width ("
           << dimStr(getOutFeatures()) << ")";
  if (failed(verifyLeadingDims(*this, result, "result", input, "input", last)))
    return failure();
  if (getBias())
    return verifyVector(*this, getBias(), "bias", getOutFeatures(),
                        "the output width");
  return success();
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

/// The width each row's groups are normalised over: the last dimension, or
/// with `groups` > 1 that many equal parts of it (a static dimension).
static FailureOr<int64_t> normalisedWidth(Operation *op, Value input,
                                          int64_t groups) {
  auto type = tensorType(input);
  if (type.getRank() < 1)
    return op->emitOpError("input must have rank >= 1");
  int64_t width = type.getDimSize(type.getRank() - 1);
  if (groups < 1)
    return op->emitOpError("groups must be >= 1, got ") << groups;
  if (groups == 1)
    return width;
  if (ShapedType::isDynamic(width))
    return op->emitOpError("groups = ")
           << groups << " needs a static last dimension";
  if (width % groups != 0)
    return op->emitOpError("the last dimension (")
           << width << ") is not a multiple of groups = " << groups;
  return width / groups;
}

/// Shared rules of the norms and their gradients: weights match the
/// normalised width, `same` values have the input's type, epsilon is
/// positive.
static LogicalResult verifyNorm(Operation *op, Value input, ValueRange same,
                                ArrayRef<StringRef> sameNames,
                                ValueRange weights, ArrayRef<StringRef> names,
                                double epsilon, int64_t groups) {
  for (auto [value, name] : llvm::zip(same, sameNames))
    if (value.getType() != input.getType())
      return op->emitOpError() << name << " type " << value.getType()
                               << " must equal input type " << input.getType();
  FailureOr<int64_t> width = normalisedWidth(op, input, groups);
  if (failed(width))
    return failure();
  for (auto [weight, name] : llvm::zip(weights, names))
    if (failed(verifyVector(op, weight, name, *width, "the normalised width")))
      return failure();
  if (!(epsilon > 0.0))
    return op->emitOpError("epsilon must be positive, got ") << epsilon;
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput(), getResult(), {"result"},
                    {getGamma(), getBeta()}, {"gamma", "beta"},
                    getEpsilon().convertToDouble(), getGroups());
}

LogicalResult RMSNormOp::verify() {
  return verifyNorm(*this, getInput(), getResult(), {"result"}, {getGamma()},
                    {"gamma"}, getEpsilon().convertToDouble(), getGroups());
}

LogicalResult LayerNormGradOp::verify() {
  return verifyNorm(*this, getInput(), {getGrad(), getInputGrad()},
                    {"grad", "input_grad"},
                    {getGamma(), getGammaGrad(), getBetaGrad()},
                    {"gamma", "gamma_grad", "beta_grad"},
                    getEpsilon().convertToDouble(), getGroups());
}

LogicalResult RMSNormGradOp::verify() {
  return verifyNorm(*this, getInput(), {getGrad(), getInputGrad()},
                    {"grad", "input_grad"}, {getGamma(), getGammaGrad()},
                    {"gamma", "gamma_grad"}, getEpsilon().convertToDouble(),
                    getGroups());
}

//===----------------------------------------------------------------------===//
// Attention's pieces
//===----------------------------------------------------------------------===//

LogicalResult SplitHeadsOp::verify() {
  return verifyHeadSplit(*this, getInput().getType(), "input",
                         getResult().getType(), "result");
}

LogicalResult MergeHeadsOp::verify() {
  return verifyHeadSplit(*this, getResult().getType(), "result",
                         getInput().getType(), "input");
}

/// `few` heads [b, g, t, dh] shared by `many` [b, h, t, dh]: same batch, seq
/// and head width, static head counts with g dividing h.
static LogicalResult verifyHeadGroups(Operation *op, RankedTensorType few,
                                      StringRef fewName, RankedTensorType many,
                                      StringRef manyName) {
  if (few.getRank() != 4 || many.getRank() != 4)
    return op->emitOpError("input and result must be rank 4 "
                           "[batch, heads, seq, head width]");
  int64_t g = few.getDimSize(1), h = many.getDimSize(1);
  if (ShapedType::isDynamic(g) || ShapedType::isDynamic(h))
    return op->emitOpError("head counts must be static");
  if (g < 1 || h < 1)
    return op->emitOpError()
           << "head counts must be at least 1, got " << fewName << " " << g
           << " and " << manyName << " " << h;
  if (h % g != 0)
    return op->emitOpError()
           << manyName << " heads (" << h << ") must be a multiple of "
           << fewName << " heads (" << g << ")";
  for (int64_t i : {0, 2, 3})
    if (!dimsAgree(few.getDimSize(i), many.getDimSize(i)))
      return op->emitOpError()
             << fewName << " dimension " << i << " ("
             << dimStr(few.getDimSize(i)) << ") does not match " << manyName
             << " dimension " << i << " (" << dimStr(many.getDimSize(i)) << ")";
  return success();
}

LogicalResult RepeatHeadsOp::verify() {
  return verifyHeadGroups(*this, getInput().getType(), "input",
                          getResult().getType(), "result");
}

LogicalResult SumHeadGroupsOp::verify() {
  return verifyHeadGroups(*this, getResult().getType(), "result",
                          getInput().getType(), "input");
}

/// RoPE's rules on the per-head side `heads` ([b, h, t, dh]) of a rotation.
template <typename RopeLike>
static LogicalResult verifyRope(RopeLike op, Value heads) {
  if (failed(verifyRank(op, heads, "per-head tensor", 4)))
    return failure();
  int64_t headDim = tensorType(heads).getDimSize(3);
  if (ShapedType::isDynamic(headDim))
    return op.emitOpError("needs a static head dimension");
  int64_t rot = op.getRotaryDim();
  if (rot < 2 || rot % 2 != 0 || rot > headDim)
    return op.emitOpError("rotary_dim must be even and in [2, ")
           << headDim << "] (the head dimension), got " << rot;
  double theta = op.getTheta().convertToDouble();
  if (!(theta > 0.0) || !std::isfinite(theta))
    return op.emitOpError("theta must be positive and finite, got ") << theta;
  // I64Attr reads back unsigned: check the signed value.
  if (int64_t offset = op.getOffsetAttr().getInt(); offset < 0)
    return op.emitOpError("offset must be >= 0, got ") << offset;
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(verifyRank(*this, getInput(), "input", 4)))
    return failure();
  return verifyRope(*this, getInput());
}

LogicalResult SplitHeadsRopeOp::verify() {
  if (failed(verifyRope(*this, getResult())))
    return failure();
  return verifyHeadSplit(*this, getInput().getType(), "input",
                         getResult().getType(), "result");
}

LogicalResult RopeMergeHeadsOp::verify() {
  if (failed(verifyRope(*this, getInput())))
    return failure();
  return verifyHeadSplit(*this, getResult().getType(), "result",
                         getInput().getType(), "input");
}

/// For ops contracting two per-head tensors: all rank 4, same batch and heads.
static LogicalResult verifyPerHead(Operation *op, ValueRange values,
                                   ArrayRef<StringRef> names) {
  for (auto [v, name] : llvm::zip(values, names))
    if (failed(verifyRank(op, v, name, 4)))
      return failure();
  auto first = tensorType(values[0]);
  for (size_t i = 1; i < values.size(); ++i)
    if (failed(verifyLeadingDims(op, tensorType(values[i]), names[i], first,
                                 names[0], 2)))
      return failure();
  return success();
}

LogicalResult AttentionScoresOp::verify() {
  if (failed(verifyPerHead(*this, {getQuery(), getKey(), getResult()},
                           {"query", "key", "result"})))
    return failure();
  auto q = getQuery().getType(), k = getKey().getType();
  auto r = getResult().getType();
  if (!dimsAgree(q.getDimSize(3), k.getDimSize(3)))
    return emitOpError("query head width (")
           << dimStr(q.getDimSize(3)) << ") does not match key head width ("
           << dimStr(k.getDimSize(3)) << ")";
  if (!dimsAgree(r.getDimSize(2), q.getDimSize(2)) ||
      !dimsAgree(r.getDimSize(3), k.getDimSize(2)))
    return emitOpError("result must be [batch, heads, query length, key "
                       "length]");
  return success();
}

LogicalResult AttentionContextOp::verify() {
  if (failed(verifyPerHead(*this, {getProbs(), getValue(), getResult()},
                           {"probs", "value", "result"})))
    return failure();
  auto p = getProbs().getType(), v = getValue().getType();
  auto r = getResult().getType();
  if (!dimsAgree(p.getDimSize(3), v.getDimSize(2)))
    return emitOpError("probs key length (")
           << dimStr(p.getDimSize(3)) << ") does not match value length ("
           << dimStr(v.getDimSize(2)) << ")";
  if (!dimsAgree(r.getDimSize(2), p.getDimSize(2)) ||
      !dimsAgree(r.getDimSize(3), v.getDimSize(3)))
    return emitOpError("result must be [batch, heads, query length, head "
                       "width]");
  return success();
}

LogicalResult AlibiOp::verify() {
  if (failed(verifyRank(*this, getInput(), "input", 4)))
    return failure();
  int64_t heads = getInput().getType().getDimSize(1);
  if (ShapedType::isDynamic(heads) || heads < 1)
    return emitOpError("needs a static head count (dimension 1) of at least 1, "
                       "got ")
           << dimStr(heads);
  return success();
}

LogicalResult MaskOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (rank < 2)
    return emitOpError("input must have rank >= 2, got rank ") << rank;
  if (!getLengths())
    return success();
  if (rank < 3)
    return emitOpError("input must have rank >= 3 with lengths (batch, ..., "
                       "query, key), got rank ")
           << rank;
  return verifyLengths(*this, getLengths(), getInput(), "input");
}

LogicalResult ZeroPaddingOp::verify() {
  int64_t rank = getInput().getType().getRank();
  if (rank < 2)
    return emitOpError("input must have rank >= 2 (batch, seq, ...), got rank ")
           << rank;
  return verifyLengths(*this, getLengths(), getInput(), "input");
}

LogicalResult IgnorePaddingOp::verify() {
  if (failed(verifyRank(*this, getTargets(), "targets", 2)))
    return failure();
  return verifyLengths(*this, getLengths(), getTargets(), "targets");
}

LogicalResult HiddenNormOp::verify() {
  if (failed(verifyRank(*this, getInput(), "input", 3)))
    return failure();
  auto probes = getProbes().getType();
  if (!probes.hasStaticShape())
    return emitOpError("probes must have a static size (one element per "
                       "probe), got ")
           << probes;
  int64_t streams = getStreams();
  int64_t rank = streams > 1 ? 2 : 1;
  if (probes.getRank() != rank)
    return emitOpError("probes must have rank ")
           << rank << " with streams = " << streams << ", got " << probes;
  if (streams > 1 && probes.getDimSize(1) != streams)
    return emitOpError("probes must have one column per stream (")
           << streams << "), got " << probes;
  int64_t width = getInput().getType().getDimSize(2);
  if (!ShapedType::isDynamic(width) && width % streams)
    return emitOpError("input width ")
           << width << " is not a multiple of streams (" << streams << ")";
  if (getLengths())
    return verifyLengths(*this, getLengths(), getInput(), "input");
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding, positions, loss
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (failed(verifyRank(*this, getTokens(), "tokens", 2)) ||
      failed(verifyRank(*this, getTable(), "table", 2)) ||
      failed(verifyRank(*this, getResult(), "result", 3)))
    return failure();
  auto result = getResult().getType();
  if (failed(verifyLeadingDims(*this, result, "result", getTokens().getType(),
                               "tokens", 2)))
    return failure();
  int64_t width = getTable().getType().getDimSize(1);
  if (!dimsAgree(result.getDimSize(2), width))
    return emitOpError("result width (")
           << dimStr(result.getDimSize(2))
           << ") does not match the table width (" << dimStr(width) << ")";
  return success();
}

LogicalResult AddPositionsOp::verify() {
  if (failed(verifyRank(*this, getInput(), "input", 3)))
    return failure();
  if (getInput().getType() != getResult().getType())
    return emitOpError("result type ")
           << getResult().getType() << " must equal input type "
           << getInput().getType();
  int64_t width = getInput().getType().getDimSize(2);
  if (getKind() == PositionKind::learned) {
    if (!getTable())
      return emitOpError("learned positions need a table");
    if (failed(verifyRank(*this, getTable(), "table", 2)))
      return failure();
    int64_t tableWidth = getTable().getType().getDimSize(1);
    if (!dimsAgree(width, tableWidth))
      return emitOpError("table width (")
             << dimStr(tableWidth) << ") does not match the input width ("
             << dimStr(width) << ")";
    return success();
  }
  if (getTable())
    return emitOpError("sinusoidal positions take no table");
  if (ShapedType::isDynamic(width) || width % 2 != 0)
    return emitOpError("sinusoidal positions need a static, even width, got ")
           << dimStr(width);
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  if (failed(verifyRank(*this, getLogits(), "logits", 3)) ||
      failed(verifyRank(*this, getTargets(), "targets", 2)))
    return failure();
  return verifyLeadingDims(*this, getTargets().getType(), "targets",
                           getLogits().getType(), "logits", 2);
}

//===----------------------------------------------------------------------===//
// Backward ops
//===----------------------------------------------------------------------===//

LogicalResult ParamGradOp::verify() {
  RankedTensorType type = getGrad().getType();
  if (!type.hasStaticShape())
    return emitOpError("gradient must have a static shape");
  int64_t offset = getOffsetAttr().getInt();
  int64_t layerStride = getLayerStrideAttr().getInt();
  if (offset < 0)
    return emitOpError("offset must be non-negative, got ") << offset;
  if (getLayer() && layerStride < type.getNumElements())
    return emitOpError("layer_stride (")
           << layerStride << ") must be at least the gradient's element count ("
           << type.getNumElements() << ")";
  if (!getLayer() && layerStride != 0)
    return emitOpError("layer_stride needs a layer index");
  return success();
}

LogicalResult LinearWeightGradOp::verify() {
  auto input = getInput().getType(), grad = getGrad().getType();
  auto result = getResult().getType();
  if (input.getRank() < 2 || grad.getRank() != input.getRank())
    return emitOpError("input and grad must have the same rank >= 2");
  if (failed(verifyRank(*this, getResult(), "result", 2)))
    return failure();
  int64_t in = input.getShape().back(), out = grad.getShape().back();
  int64_t rows = getTransposeWeight() ? out : in;
  int64_t cols = getTransposeWeight() ? in : out;
  if (!dimsAgree(result.getDimSize(0), rows) ||
      !dimsAgree(result.getDimSize(1), cols))
    return emitOpError("result must be [")
           << dimStr(rows) << ", " << dimStr(cols) << "], got ["
           << dimStr(result.getDimSize(0)) << ", "
           << dimStr(result.getDimSize(1)) << "]";
  return verifyLeadingDims(*this, grad, "grad", input, "input",
                           input.getRank() - 1);
}

LogicalResult ReduceRowsOp::verify() {
  int64_t width = getInput().getType().getShape().back();
  return verifyVector(*this, getResult(), "result", width, "the input width");
}

LogicalResult BatchMatmulOp::verify() {
  if (failed(verifyPerHead(*this, {getLhs(), getRhs(), getResult()},
                           {"lhs", "rhs", "result"})))
    return failure();
  auto a = getLhs().getType(), b = getRhs().getType();
  auto r = getResult().getType();
  int64_t m = a.getDimSize(getTransposeA() ? 3 : 2);
  int64_t ka = a.getDimSize(getTransposeA() ? 2 : 3);
  int64_t kb = b.getDimSize(getTransposeB() ? 3 : 2);
  int64_t n = b.getDimSize(getTransposeB() ? 2 : 3);
  if (!dimsAgree(ka, kb))
    return emitOpError("contraction sizes differ: ")
           << dimStr(ka) << " and " << dimStr(kb);
  if (!dimsAgree(r.getDimSize(2), m) || !dimsAgree(r.getDimSize(3), n))
    return emitOpError("result must be [batch, heads, ")
           << dimStr(m) << ", " << dimStr(n) << "]";
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(verifyRank(*this, getResult(), "result", 2)) ||
      failed(verifyRank(*this, getGrad(), "grad", 3)))
    return failure();
  auto r = getResult().getType();
  if (!r.hasStaticShape())
    return emitOpError("result must have a static [vocab, d] shape");
  if (!dimsAgree(r.getDimSize(1), getGrad().getType().getDimSize(2)))
    return emitOpError("result width does not match the gradient width");
  return success();
}

LogicalResult PositionsGradOp::verify() {
  if (failed(verifyRank(*this, getResult(), "result", 2)) ||
      failed(verifyRank(*this, getGrad(), "grad", 3)))
    return failure();
  auto r = getResult().getType();
  if (!r.hasStaticShape())
    return emitOpError("result must have a static [max_seq, d] shape");
  if (!dimsAgree(r.getDimSize(1), getGrad().getType().getDimSize(2)))
    return emitOpError("result width does not match the gradient width");
  return success();
}

#define GET_OP_CLASSES
#include "tfc/Dialect/TfcOps.cpp.inc"
