//===- CppHeaderEmitter.h - The typed C++ wrapper NAME.hpp ------*- C++ -*-===//
//
// `NAME.hpp`, written beside NAME.h: `tfc::models::NAME`, a tfc::Model
// (tfc/model.hpp, header-only C++20) whose forward and backward take the
// model's arrays as typed std::spans in NAME.h's order, check each span
// against the array's size for the call, and call the C entry points through
// the descriptor. docs/abi.md, "C++".
//
//===----------------------------------------------------------------------===//

#ifndef TFC_ABI_CPPHEADEREMITTER_H
#define TFC_ABI_CPPHEADEREMITTER_H

#include "abi/EntrySignature.h"

#include <string>

namespace tfc {

/// The text of NAME.hpp for the model `entries` describes; `cHeader` is the
/// file name it includes ("NAME.h").
std::string emitCppHeader(const mlir::tfc::abi::EntrySignature &entries,
                          const std::string &cHeader);

} // namespace tfc

#endif // TFC_ABI_CPPHEADEREMITTER_H
