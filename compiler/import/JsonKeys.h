//===- JsonKeys.h - Where a JSON object's keys are in its text --*- C++ -*-===//
//
// llvm::json parses values but keeps no positions, so an importer that
// wants to say "config.json:14:3: rope_scaling ..." finds the keys itself:
// a scan of the text that follows strings, escapes and nesting, and records
// the line and column of every key of the top-level object.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_IMPORT_JSONKEYS_H
#define TFC_IMPORT_JSONKEYS_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace tfc::import {

struct TextPosition {
  int64_t line = 1, column = 1; // 1-based, of the key's opening quote.
};

/// The top-level object's keys (raw text between the quotes, escapes not
/// decoded) and where each first appears. Text that is not well-formed
/// JSON gives whatever keys were seen before the scan lost track; callers
/// use the positions for messages only.
llvm::StringMap<TextPosition> topLevelKeyPositions(llvm::StringRef text);

/// The 1-based line and column of byte `offset` in `text`.
TextPosition positionOf(llvm::StringRef text, size_t offset);

} // namespace tfc::import

#endif // TFC_IMPORT_JSONKEYS_H
