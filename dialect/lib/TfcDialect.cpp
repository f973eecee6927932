//===- TfcDialect.cpp - The tfc dialect -------------------------*- C++ -*-===//

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tfc;

#include "tfc/Dialect/TfcDialect.cpp.inc"
#include "tfc/Dialect/TfcEnums.cpp.inc"
#include "tfc/Dialect/TfcInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tfc/Dialect/TfcAttrs.cpp.inc"

void TfcDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tfc/Dialect/TfcAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tfc/Dialect/TfcOps.cpp.inc"
      >();
}
