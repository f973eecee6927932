//===- TfcAttentionOps.cpp - Verifiers of the fused attention ops -*- C++ -*-=//
//
// Both ops see the same tensors: query [b, h, s, dh], key and value
// [b, g, t, dh], out [b, h, s, dh] and lse [b, h, s]; out, its gradient and
// the operand gradients may be merged instead, [b, s, h * dh] (tfc.merge_heads'
// layout). Every message names the tensor, the dimension and both sizes.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfc;

namespace {

std::string dimString(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

/// Checks `value`'s rank, then that each of its dimensions listed in
/// `dims` agrees with dimension `refDims[k]` of `ref` (a dynamic size agrees
/// with anything).
LogicalResult verifyDims(Operation *op, Value value, StringRef name,
                         int64_t rank, ArrayRef<int64_t> dims, Value ref,
                         StringRef refName, ArrayRef<int64_t> refDims) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() != rank)
    return op->emitOpError() << name << " must have rank " << rank
                             << ", got rank " << type.getRank();
  auto refType = cast<RankedTensorType>(ref.getType());
  for (auto [dim, refDim] : llvm::zip_equal(dims, refDims)) {
    int64_t a = type.getDimSize(dim), b = refType.getDimSize(refDim);
    if (!ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b)
      return op->emitOpError()
             << name << " dimension " << dim << " (" << dimString(a)
             << ") does not match " << refName << " dimension " << refDim
             << " (" << dimString(b) << ")";
  }
  return success();
}

/// `value` is shaped like the per-head `ref` ([b, h, len, dh]), or merged:
/// [b, len, h * dh].
LogicalResult verifyHeadsOrMerged(Operation *op, Value value, StringRef name,
                                  Value ref, StringRef refName) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 4)
    return verifyDims(op, value, name, 4, {0, 1, 2, 3}, ref, refName,
                      {0, 1, 2, 3});
  if (type.getRank() != 3)
    return op->emitOpError()
           << name << " must have rank 4 ([b, h, s, dh]) or 3 ([b, s, h * dh])"
           << ", got rank " << type.getRank();
  if (failed(verifyDims(op, value, name, 3, {0, 1}, ref, refName, {0, 2})))
    return failure();
  auto refType = cast<RankedTensorType>(ref.getType());
  int64_t heads = refType.getDimSize(1), dh = refType.getDimSize(3);
  int64_t width = type.getDimSize(2);
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(dh) ||
      ShapedType::isDynamic(width) || width == heads * dh)
    return success();
  return op->emitOpError() << name << " dimension 2 (" << width
                           << ") does not match " << refName
                           << " heads x head width (" << heads << " x " << dh
                           << ")";
}

/// The shape rules shared by the forward op and its gradient.
LogicalResult verifyAttentionShapes(Operation *op, Value query, Value key,
                                    Value value, Value out, Value lse,
                                    double scale) {
  if (!std::isfinite(scale))
    return op->emitOpError("scale must be finite, got ") << scale;
  if (failed(verifyDims(op, query, "query", 4, {}, query, "query", {})) ||
      failed(verifyDims(op, key, "key", 4, {0, 3}, query, "query", {0, 3})) ||
      failed(verifyDims(op, value, "value", 4, {0, 1, 2, 3}, key, "key",
                        {0, 1, 2, 3})) ||
      failed(verifyHeadsOrMerged(op, out, "out", query, "query")) ||
      failed(
          verifyDims(op, lse, "lse", 3, {0, 1, 2}, query, "query", {0, 1, 2})))
    return failure();
  // Grouped-query attention: each key/value head serves heads / kv heads
  // consecutive query heads.
  int64_t heads = cast<RankedTensorType>(query.getType()).getDimSize(1);
  int64_t kvHeads = cast<RankedTensorType>(key.getType()).getDimSize(1);
  if (ShapedType::isDynamic(heads) != ShapedType::isDynamic(kvHeads))
    return op->emitOpError("query heads (")
           << dimString(heads) << ") and key heads (" << dimString(kvHeads)
           << ") must be both static or both dynamic";
  if (!ShapedType::isDynamic(heads) && (kvHeads < 1 || heads % kvHeads != 0))
    return op->emitOpError("query heads (")
           << heads << ") must be a multiple of key heads (" << kvHeads << ")";
  return success();
}

} // namespace

LogicalResult FlashAttentionOp::verify() {
  if (failed(verifyAttentionShapes(*this, getQuery(), getKey(), getValue(),
                                   getOut(), getLse(),
                                   getScale().convertToDouble())))
    return failure();
  if (getLengths())
    return verifyDims(*this, getLengths(), "lengths", 1, {0}, getQuery(),
                      "query", {0});
  return success();
}

LogicalResult FlashAttentionGradOp::verify() {
  if (failed(verifyAttentionShapes(*this, getQuery(), getKey(), getValue(),
                                   getOut(), getLse(),
                                   getScale().convertToDouble())))
    return failure();
  // dO is shaped like out, each operand gradient like its operand: per
  // head or merged, each on its own.
  if (failed(verifyHeadsOrMerged(*this, getOutGrad(), "out_grad", getQuery(),
                                 "query")) ||
      failed(verifyHeadsOrMerged(*this, getQueryGrad(), "query_grad",
                                 getQuery(), "query")) ||
      failed(verifyHeadsOrMerged(*this, getKeyGrad(), "key_grad", getKey(),
                                 "key")) ||
      failed(verifyHeadsOrMerged(*this, getValueGrad(), "value_grad",
                                 getValue(), "value")))
    return failure();
  if (getLengths())
    return verifyDims(*this, getLengths(), "lengths", 1, {0}, getQuery(),
                      "query", {0});
  return success();
}
