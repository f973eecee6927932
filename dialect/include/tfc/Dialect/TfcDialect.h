//===- TfcDialect.h - The tfc dialect ---------------------------*- C++ -*-===//
//
// Everything a user of the tfc dialect includes: dialect, enums, ops.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_DIALECT_TFCDIALECT_H
#define TFC_DIALECT_TFCDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tfc/Dialect/TfcGradient.h"
#include "tfc/Dialect/TfcSaveSlots.h"

#include "tfc/Dialect/TfcDialect.h.inc"
#include "tfc/Dialect/TfcEnums.h.inc"
#include "tfc/Dialect/TfcInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tfc/Dialect/TfcAttrs.h.inc"

#define GET_OP_CLASSES
#include "tfc/Dialect/TfcOps.h.inc"

#endif // TFC_DIALECT_TFCDIALECT_H
