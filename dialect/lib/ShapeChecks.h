//===- ShapeChecks.h - The verifiers' shared shape rules --------*- C++ -*-===//
//
// What every tfc verifier says about shapes, said once: two sizes agree
// unless both are static and differ, and every message prints a dynamic size
// as "?" and names the operand, so a frontend bug reads like a sentence.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_DIALECT_LIB_SHAPECHECKS_H
#define TFC_DIALECT_LIB_SHAPECHECKS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <string>

namespace mlir::tfc::shape {

/// Two dimensions agree unless both are static and differ.
inline bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

inline std::string dimStr(int64_t d) {
  return ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d);
}

inline RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

inline LogicalResult verifyRank(Operation *op, Value v, StringRef name,
                                int64_t rank) {
  int64_t actual = tensorType(v).getRank();
  if (actual != rank)
    return op->emitOpError()
           << name << " must have rank " << rank << ", got rank " << actual;
  return success();
}

/// Checks that `actual` is a rank-1 tensor of `expected` elements.
inline LogicalResult verifyVector(Operation *op, Value actual, StringRef what,
                                  int64_t expected, StringRef expectedWhat) {
  auto type = tensorType(actual);
  if (type.getRank() != 1)
    return op->emitOpError()
           << what << " must have rank 1, got rank " << type.getRank();
  if (!dimsAgree(type.getDimSize(0), expected))
    return op->emitOpError() << what << " has " << dimStr(type.getDimSize(0))
                             << " elements, expected " << dimStr(expected)
                             << " (" << expectedWhat << ")";
  return success();
}

/// Checks that the leading `count` dimensions of `a` and `b` agree.
inline LogicalResult verifyLeadingDims(Operation *op, RankedTensorType a,
                                       StringRef aName, RankedTensorType b,
                                       StringRef bName, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!dimsAgree(a.getDimSize(i), b.getDimSize(i)))
      return op->emitOpError()
             << aName << " dimension " << i << " (" << dimStr(a.getDimSize(i))
             << ") does not match " << bName << " dimension " << i << " ("
             << dimStr(b.getDimSize(i)) << ")";
  return success();
}

/// `lengths` [batch] of a right-padded batch agrees with dimension 0 of
/// `batched`.
inline LogicalResult verifyLengths(Operation *op, Value lengths, Value batched,
                                   StringRef batchedName) {
  int64_t batch = tensorType(batched).getDimSize(0);
  int64_t n = tensorType(lengths).getDimSize(0);
  if (!dimsAgree(n, batch))
    return op->emitOpError("lengths has ")
           << n << " elements, expected " << batch << " (" << batchedName
           << " dimension 0, the batch)";
  return success();
}

/// [b, s, h*dh] (merged) against [b, h, s, dh] (split).
inline LogicalResult verifyHeadSplit(Operation *op, RankedTensorType merged,
                                     StringRef mergedName,
                                     RankedTensorType split,
                                     StringRef splitName) {
  if (merged.getRank() != 3)
    return op->emitOpError()
           << mergedName << " must have rank 3, got rank " << merged.getRank();
  if (split.getRank() != 4)
    return op->emitOpError()
           << splitName << " must have rank 4, got rank " << split.getRank();
  if (!dimsAgree(merged.getDimSize(0), split.getDimSize(0)) ||
      !dimsAgree(merged.getDimSize(1), split.getDimSize(2)))
    return op->emitOpError("batch and sequence of ")
           << mergedName << " [" << dimStr(merged.getDimSize(0)) << ", "
           << dimStr(merged.getDimSize(1)) << "] do not match " << splitName
           << " [" << dimStr(split.getDimSize(0)) << ", "
           << dimStr(split.getDimSize(2)) << "]";
  int64_t heads = split.getDimSize(1), headDim = split.getDimSize(3);
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(headDim) ||
      ShapedType::isDynamic(merged.getDimSize(2)))
    return op->emitOpError("heads, head width and model width must be static");
  if (heads * headDim != merged.getDimSize(2))
    return op->emitOpError("width (")
           << merged.getDimSize(2) << ") must equal heads (" << heads
           << ") x head width (" << headDim << ")";
  return success();
}

} // namespace mlir::tfc::shape

#endif // TFC_DIALECT_LIB_SHAPECHECKS_H
