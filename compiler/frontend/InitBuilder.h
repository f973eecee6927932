//===- InitBuilder.h - NAME_init and NAME_param_count -----------*- C++ -*-===//

#ifndef TFC_FRONTEND_INITBUILDER_H
#define TFC_FRONTEND_INITBUILDER_H

#include "abi/ParamLayout.h"

#include "mlir/IR/BuiltinOps.h"

namespace tfc {

/// Adds `int64_t NAME_param_count(void)` and
/// `int32_t NAME_init(float *params, uint64_t seed)` to `module`. Init calls
/// the runtime's `tfc_rt_fill` once per tensor with the tensor's index in
/// the table as its stream; block tensors are filled in a loop over layers,
/// so code size does not grow with depth.
void buildInitFunctions(mlir::ModuleOp module, const std::string &name,
                        const ParamLayout &layout);

} // namespace tfc

#endif // TFC_FRONTEND_INITBUILDER_H
