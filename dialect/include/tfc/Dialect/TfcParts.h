//===- TfcParts.h - The part of the model an op comes from ------*- C++ -*-===//
//
// The frontend names each op's location after the part of the model it
// computes ("blocks.attn", "blocks.ffn", "embed": NameLoc); a fused op's
// location fuses its pieces'. The fusion report, the recompute policy and
// the memory report all read it here.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_DIALECT_TFCPARTS_H
#define TFC_DIALECT_TFCPARTS_H

#include "mlir/IR/Location.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::tfc {

/// The part names in `loc`, each once, in the order they appear (one for an
/// op the frontend built, several for a fused one).
SmallVector<StringRef> partNames(Location loc);

/// partNames joined by '+' ("blocks.attn.residual+blocks.ffn_norm"); empty
/// without any.
std::string partLabel(Location loc);

} // namespace mlir::tfc

#endif // TFC_DIALECT_TFCPARTS_H
