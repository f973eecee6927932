//===- TfcDecodingOps.cpp - Verifiers of the KV-cache ops -------*- C++ -*-===//
//
// tfc.kv_cache_fill and tfc.cached_attention (TfcDecodingOps.td). Their
// lowering lays the cache out from the static head count and width, so
// both must be static; every message names the tensor and both sizes.
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

LogicalResult verifyCache(Operation *op, Value cache) {
  auto type = cast<RankedTensorType>(cache.getType());
  if (type.getRank() != 1 || !type.isDynamicDim(0))
    return op->emitOpError("cache must be a tensor<?xf32> (the caller's "
                           "buffer), got ")
           << type;
  return success();
}

/// [b, heads, rows, dh] with static heads and dh (rows = 1 when `oneRow`).
LogicalResult verifyHeads(Operation *op, Value value, StringRef name,
                          bool oneRow) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() != 4)
    return op->emitOpError()
           << name << " must have rank 4 ([b, heads, " << (oneRow ? "1" : "t")
           << ", dh]), got rank " << type.getRank();
  if (type.isDynamicDim(1) || type.isDynamicDim(3))
    return op->emitOpError() << name << " needs static heads and head "
                             << "dimension, got " << type;
  if (oneRow && !type.isDynamicDim(2) && type.getDimSize(2) != 1)
    return op->emitOpError()
           << name << " holds one position per sequence (dimension 2 = 1), "
           << "got " << type.getDimSize(2);
  return success();
}

LogicalResult verifySameType(Operation *op, Value a, StringRef aName, Value b,
                             StringRef bName) {
  if (a.getType() != b.getType())
    return op->emitOpError()
           << bName << " type " << b.getType() << " must equal " << aName
           << " type " << a.getType();
  return success();
}

} // namespace

LogicalResult KvCacheFillOp::verify() {
  if (failed(verifyCache(*this, getCache())) ||
      failed(verifyHeads(*this, getKey(), "key", /*oneRow=*/false)) ||
      failed(verifySameType(*this, getKey(), "key", getValue(), "value")))
    return failure();
  return success();
}

LogicalResult CachedAttentionOp::verify() {
  if (failed(verifyCache(*this, getCache())) ||
      failed(verifyHeads(*this, getQuery(), "query", /*oneRow=*/true)) ||
      failed(verifyHeads(*this, getKey(), "key", /*oneRow=*/true)) ||
      failed(verifySameType(*this, getKey(), "key", getValue(), "value")) ||
      failed(verifySameType(*this, getQuery(), "query", getOut(), "out")))
    return failure();
  double scale = getScale().convertToDouble();
  if (!std::isfinite(scale))
    return emitOpError("scale must be finite, got ") << scale;
  auto query = getQuery().getType(), key = getKey().getType();
  if (query.getDimSize(3) != key.getDimSize(3))
    return emitOpError("key head dimension (")
           << key.getDimSize(3) << ") does not match the query's ("
           << query.getDimSize(3) << ")";
  int64_t heads = query.getDimSize(1), kvHeads = key.getDimSize(1);
  if (heads % kvHeads != 0)
    return emitOpError("query heads (")
           << heads << ") must be a multiple of key heads (" << kvHeads << ")";
  int64_t qBatch = query.getDimSize(0), kBatch = key.getDimSize(0);
  if (!ShapedType::isDynamic(qBatch) && !ShapedType::isDynamic(kBatch) &&
      qBatch != kBatch)
    return emitOpError("key batch (")
           << dimString(kBatch) << ") does not match the query's ("
           << dimString(qBatch) << ")";
  return success();
}
