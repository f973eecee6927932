//===- ModelBuilder.h - Spec -> tfc IR --------------------------*- C++ -*-===//

#ifndef TFC_FRONTEND_MODELBUILDER_H
#define TFC_FRONTEND_MODELBUILDER_H

#include "spec/Spec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace tfc {

/// Builds the `tfc.model` function of a spec: one straight-line block body
/// inside a depth loop that never unrolls, and the model's prologue
/// (embedding) and epilogue (final norm, head, loss) around it; and, with
/// `decoding` for a model that can decode (causal self-attention only), the
/// decoding functions NAME_prefill and NAME_decode lower into. Returns null
/// (after emitting diagnostics) if the module fails to verify.
mlir::OwningOpRef<mlir::ModuleOp> buildModel(mlir::MLIRContext &context,
                                             const spec::Spec &spec,
                                             bool decoding = true);

} // namespace tfc

#endif // TFC_FRONTEND_MODELBUILDER_H
