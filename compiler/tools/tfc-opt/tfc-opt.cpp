//===- tfc-opt.cpp - mlir-opt with the tfc dialect and passes ---*- C++ -*-===//
//
// The lit suite's driver for single passes: `tfc-opt %s -tfc-lower-to-loops`.
//
//===----------------------------------------------------------------------===//

#include "conversion/Passes.h"
#include "conversion/cuda/CudaPipeline.h"
#include "tfc/Dialect/TfcDialect.h"
#include "transforms/Passes.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#ifdef TFC_INCLUDE_TESTS
namespace mlir::tfc::test {
// The test-only passes (test/emu/TestPasses.cpp, no public header), linked
// in builds with the tests as mlir-opt links MLIR's test passes.
void registerTestPasses();
} // namespace mlir::tfc::test
#endif

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tfc::registerConversionPasses();
  mlir::tfc::registerTransformsPasses();
  mlir::tfc::registerCpuPipeline();
  mlir::tfc::registerCudaPipeline();
#ifdef TFC_INCLUDE_TESTS
  mlir::tfc::test::registerTestPasses();
#endif

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  registry.insert<mlir::tfc::TfcDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tfc optimizer driver\n", registry));
}
