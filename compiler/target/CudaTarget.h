//===- CudaTarget.h - What the CUDA target adds to the driver ---*- C++ -*-===//

#ifndef TFC_TARGET_CUDATARGET_H
#define TFC_TARGET_CUDATARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"

#include <optional>

namespace tfc {

/// What gpu-module-to-binary needs: the NVVM target attribute's serializer
/// and the translations of the gpu, nvvm and llvm dialects to LLVM IR.
void registerCudaTarget(mlir::DialectRegistry &registry);

/// The PTX a CUDA build embeds (tfc-gpu-launches-to-runtime's global),
/// without the trailing NUL; std::nullopt when the module has none.
std::optional<llvm::StringRef> embeddedPtx(mlir::ModuleOp module);

} // namespace tfc

#endif // TFC_TARGET_CUDATARGET_H
