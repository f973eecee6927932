//===- TfcSaveSlots.h - Which forward results backward reads ----*- C++ -*-===//
//
// tfc-derive-backward marks every forward value a gradient rule reads with a
// slot number; the lowering gives that value a per-layer copy in the
// workspace that backward finds again. On a single-result op the mark is
// `tfc.save = slot`; an op with several results (fused ops produce a value
// and what its backward needs) carries `tfc.save_results = array<i64: ...>`,
// one entry per result, -1 for results nobody saves.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_DIALECT_TFCSAVESLOTS_H
#define TFC_DIALECT_TFCSAVESLOTS_H

#include "mlir/IR/Value.h"

#include <optional>

namespace mlir::tfc {

/// The slot forward saves `result` in, if backward reads it.
std::optional<int64_t> getSaveSlot(OpResult result);

/// Marks `result` as saved in `slot`.
void setSaveSlot(OpResult result, int64_t slot);

} // namespace mlir::tfc

#endif // TFC_DIALECT_TFCSAVESLOTS_H
