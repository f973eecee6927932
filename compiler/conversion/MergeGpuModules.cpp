//===- MergeGpuModules.cpp - one gpu.module per model -----------*- C++ -*-===//
//
// gpu-kernel-outlining gives every kernel a gpu.module of its own. A model
// ships one device image (one PTX text, one cubin, loaded once), so the
// kernels move into a single `@kernels` module; each keeps the name of the
// module it came from, which outlining made unique.
//
//===----------------------------------------------------------------------===//

#include "conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCMERGEGPUMODULES
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

struct MergeGpuModulesPass
    : public tfc::impl::TfcMergeGpuModulesBase<MergeGpuModulesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> sources(module.getOps<gpu::GPUModuleOp>());
    if (sources.empty())
      return;
    if (module.lookupSymbol(kMergedName)) {
      module.emitError() << "symbol @" << kMergedName << " already exists";
      return signalPassFailure();
    }
    OpBuilder b(sources.front());
    auto merged = gpu::GPUModuleOp::create(b, module.getLoc(), kMergedName);
    Block &body = merged.getBodyRegion().front();

    for (gpu::GPUModuleOp source : sources) {
      StringAttr kernelName = source.getSymNameAttr();
      for (Operation &op : llvm::make_early_inc_range(source.getOps())) {
        auto kernel = dyn_cast<gpu::GPUFuncOp>(op);
        if (!kernel || !kernel.isKernel()) {
          op.emitOpError("is not a kernel; only outlined kernels can merge");
          return signalPassFailure();
        }
        SymbolTable::setSymbolName(kernel, kernelName);
        kernel->moveBefore(&body, body.end());
      }
    }
    auto mergedRef = FlatSymbolRefAttr::get(merged.getSymNameAttr());
    module.walk([&](gpu::LaunchFuncOp launch) {
      // The old module's name is now the kernel's.
      StringAttr kernel = launch.getKernelModuleName();
      launch.setKernelAttr(SymbolRefAttr::get(
          mergedRef.getAttr(), {FlatSymbolRefAttr::get(kernel)}));
    });
    for (gpu::GPUModuleOp source : sources)
      source.erase();
  }

  static constexpr StringLiteral kMergedName = "kernels";
};

} // namespace
