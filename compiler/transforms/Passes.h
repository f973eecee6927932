//===- Passes.h - tfc IR-to-IR passes ---------------------------*- C++ -*-===//

#ifndef TFC_TRANSFORMS_PASSES_H
#define TFC_TRANSFORMS_PASSES_H

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tfc {

#define GEN_PASS_DECL
#include "transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "transforms/Passes.h.inc"

} // namespace mlir::tfc

#endif // TFC_TRANSFORMS_PASSES_H
