//===- TestPasses.cpp - What tfc-opt registers from the tests ---*- C++ -*-===//
//
// TESTS ONLY. tfc-opt declares this function itself under TFC_INCLUDE_TESTS
// (no header, as mlir-opt does for MLIR's test passes), so the product's
// sources include nothing from test/.
//
//===----------------------------------------------------------------------===//

#include "emu/Passes.h"

namespace mlir::tfc::test {
void registerTestPasses() { registerEmulatorPasses(); }
} // namespace mlir::tfc::test
