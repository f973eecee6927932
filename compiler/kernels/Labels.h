//===- Labels.h - Class ids of a cross-entropy ------------------*- C++ -*-===//
//
// The loss ignores target ids < 0 (docs/abi.md); the loss head, the
// cross-entropy and their gradients test the ids and count the valid ones
// the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_LABELS_H
#define TFC_KERNELS_LABELS_H

#include "kernels/KernelBuilder.h"

namespace mlir::tfc {

/// 0 <= target < vocab, for an i32 target id and an i32 vocabulary size.
Value isValidTarget(KernelBuilder &l, Value target, Value vocabI32);

/// Stores the number of valid ids among targets[0, rows) into count[0]
/// (i64): a serial count (exact) in a one-iteration parallel loop, so that it
/// is a kernel on CUDA. The cross-entropy gradient and the loss head divide
/// by it.
void emitValidTargetCount(KernelBuilder &l, Value targets, Value rows,
                          Value vocabI32, Value count);

} // namespace mlir::tfc

#endif // TFC_KERNELS_LABELS_H
