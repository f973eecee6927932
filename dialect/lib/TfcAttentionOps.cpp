//===- TfcAttentionOps.cpp - Verifiers of the fused attention ops -*- C++ -*-=//
//
// Both ops see the same tensors: query [b, h, s, dh], key and value
// [b, h, t, dh], out [b, h, s, dh] and lse [b, h, s]. Every message names
// the tensor, the dimension and both sizes.
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
      failed(verifyDims(op, out, "out", 4, {0, 1, 2, 3}, query, "query",
                        {0, 1, 2, 3})) ||
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
  // dO has out's shape; each operand gradient has its operand's.
  if (failed(verifyDims(*this, getOutGrad(), "out_grad", 4, {0, 1, 2, 3},
                        getOut(), "out", {0, 1, 2, 3})) ||
      failed(verifyDims(*this, getQueryGrad(), "query_grad", 4, {0, 1, 2, 3},
                        getQuery(), "query", {0, 1, 2, 3})) ||
      failed(verifyDims(*this, getKeyGrad(), "key_grad", 4, {0, 1, 2, 3},
                        getKey(), "key", {0, 1, 2, 3})) ||
      failed(verifyDims(*this, getValueGrad(), "value_grad", 4, {0, 1, 2, 3},
                        getValue(), "value", {0, 1, 2, 3})))
    return failure();
  if (getLengths())
    return verifyDims(*this, getLengths(), "lengths", 1, {0}, getQuery(),
                      "query", {0});
  return success();
}
