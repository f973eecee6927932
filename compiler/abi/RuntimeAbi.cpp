//===- RuntimeAbi.cpp - The runtime's C ABI as the compiler sees it -------===//

#include "abi/RuntimeAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace mlir::tfc::abi {

Value statusConstant(OpBuilder &b, Location loc, tfc_status status) {
  return arith::ConstantIntOp::create(b, loc, int32_t(status), 32);
}

FunctionType parallelTaskType(MLIRContext *ctx) {
  return runtimeFuncType<std::remove_pointer_t<tfc_task_fn>>(ctx);
}

LLVM::LLVMFuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                        LLVM::LLVMFunctionType type) {
  if (auto existing = module.lookupSymbol<LLVM::LLVMFuncOp>(name)) {
    assert(existing.getFunctionType() == type &&
           "a runtime function declared with another type");
    return existing;
  }
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  return LLVM::LLVMFuncOp::create(b, module.getLoc(), name, type);
}

func::FuncOp declareRuntimeFunction(ModuleOp module, StringRef name,
                                    FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name)) {
    assert(existing.getFunctionType() == type &&
           "a runtime function declared with another type");
    return existing;
  }
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  auto decl = func::FuncOp::create(b, module.getLoc(), name, type);
  decl.setPrivate();
  return decl;
}

LLVM::CallOp callRuntimeFunction(OpBuilder &b, Location loc, StringRef name,
                                 LLVM::LLVMFunctionType type, ValueRange args) {
  return LLVM::CallOp::create(
      b, loc, type, FlatSymbolRefAttr::get(b.getContext(), name), args);
}

} // namespace mlir::tfc::abi
