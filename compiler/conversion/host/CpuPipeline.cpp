//===- CpuPipeline.cpp - tfc -> LLVM dialect for CPUs -----------*- C++ -*-===//

#include "conversion/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

tfc::TfcLowerToLoopsOptions
tfc::cpuLoweringOptions(const CpuPipelineOptions &options) {
  TfcLowerToLoopsOptions lowerOptions;
  lowerOptions.vectorWidth = options.vectorWidth;
  lowerOptions.bf16Dot = options.bf16Dot;
  return lowerOptions;
}

void tfc::buildCpuPipeline(OpPassManager &pm,
                           const CpuPipelineOptions &options) {
  pm.addPass(createTfcLowerToLoops(cpuLoweringOptions(options)));
  pm.addPass(createTfcOutlineParallelLoops());
  buildHostToLLVMPipeline(pm);
}

void tfc::buildHostToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createLoopInvariantCodeMotionPass());
  pm.addPass(createTfcApproximateMath());
  pm.addPass(createSCFToControlFlowPass());
  // x86vector: the bf16 micro-kernel's vdpbf16ps (bf16-dot).
  ConvertVectorToLLVMPassOptions vectorOptions;
  vectorOptions.x86Vector = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

namespace {
struct CpuPipelineCLOptions : public PassPipelineOptions<CpuPipelineCLOptions> {
  Option<int64_t> vectorWidth{*this, "vector-width",
                              llvm::cl::desc("f32 lanes of the vectors"),
                              llvm::cl::init(16)};
  Option<bool> bf16Dot{*this, "bf16-dot",
                       llvm::cl::desc("bf16 matmuls with AVX512-BF16"),
                       llvm::cl::init(false)};
};
} // namespace

void tfc::registerCpuPipeline() {
  PassPipelineRegistration<CpuPipelineCLOptions>(
      "tfc-cpu-pipeline", "Lowers tfc model functions to the LLVM dialect",
      [](OpPassManager &pm, const CpuPipelineCLOptions &cl) {
        CpuPipelineOptions options;
        options.vectorWidth = cl.vectorWidth;
        options.bf16Dot = cl.bf16Dot;
        buildCpuPipeline(pm, options);
      });
}
