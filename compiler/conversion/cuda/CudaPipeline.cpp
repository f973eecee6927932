//===- CudaPipeline.cpp - PTX kernels and the host code ---------*- C++ -*-===//
//
// The CUDA target shares the loop-level lowering with the CPU: each op's
// row- or tile-parallel loop becomes a kernel with one thread per iteration,
// compiled through upstream gpu -> nvvm -> PTX (tfc-approximate-math keeps
// exp/log/tanh/erf as polynomials, so no libdevice is linked). The host
// functions keep the CPU's argument checks and buffer arithmetic and launch
// the kernels through the tfc runtime.
//
//===----------------------------------------------------------------------===//

#include "conversion/cuda/CudaPipeline.h"
#include "conversion/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace {
/// f32 lanes per vector op in kernels: NVPTX loads and stores up to 4 floats
/// at once, and a wider register tile only spills.
constexpr int64_t kGpuVectorWidth = 4;
} // namespace

mlir::tfc::TfcLowerToLoopsOptions
mlir::tfc::cudaLoweringOptions(const CudaPipelineOptions &options) {
  TfcLowerToLoopsOptions lowerOptions;
  lowerOptions.vectorWidth = kGpuVectorWidth;
  lowerOptions.hostMemory = false;
  lowerOptions.bf16TensorCores = options.arch.hasBf16TensorCores();
  return lowerOptions;
}

void mlir::tfc::buildCudaKernelsPipeline(OpPassManager &pm,
                                         const CudaPipelineOptions &options) {
  pm.addPass(createTfcLowerToLoops(cudaLoweringOptions(options)));
  pm.addPass(createTfcParallelLoopsToGpu());
  // One gpu.module @kernels: the launches name it (tfc-parallel-loops-to-gpu).
  pm.addPass(createGpuKernelOutliningPass());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.arch.name();
  target.features = options.ptxFeatures;
  target.optLevel = 3;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createLoopInvariantCodeMotionPass());
  kernels.addPass(createTfcApproximateMath());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createTfcMathToNVVM()); // Not libdevice's __nv_sqrtf, ...
  kernels.addPass(createConvertVectorToLLVMPass());
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::tfc::buildCudaPipeline(OpPassManager &pm,
                                  const CudaPipelineOptions &options) {
  buildCudaKernelsPipeline(pm, options);
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa"; // PTX; ptxas runs in the next pass.
  // Upstream falls back to $CUDA_HOME when this is empty: a path that does
  // not exist keeps the output independent of the environment.
  binary.toolkitPath =
      options.toolkitPath.empty() ? "/nonexistent/cuda" : options.toolkitPath;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  TfcGpuLaunchesToRuntimeOptions launches;
  launches.arch = options.arch.name();
  launches.ptxas = options.ptxas;
  pm.addPass(createTfcGpuLaunchesToRuntime(launches));
  buildHostToLLVMPipeline(pm);
}

namespace {
struct CudaPipelineCLOptions
    : public PassPipelineOptions<CudaPipelineCLOptions> {
  Option<std::string> arch{*this, "arch",
                           llvm::cl::desc("GPU architecture, e.g. sm_90"),
                           llvm::cl::init("sm_90")};
  Option<std::string> ptxas{
      *this, "ptxas", llvm::cl::desc("ptxas for a cubin (empty: PTX only)"),
      llvm::cl::init("")};
  Option<std::string> toolkitPath{
      *this, "cuda-path",
      llvm::cl::desc("CUDA toolkit for libdevice (empty: none)"),
      llvm::cl::init("")};
};
} // namespace

void mlir::tfc::registerCudaPipeline() {
  registerPassPipeline(
      "tfc-cuda-pipeline",
      "Lowers tfc model functions to PTX kernels and host LLVM dialect",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) {
        CudaPipelineCLOptions cl;
        if (failed(cl.parseFromString(text)))
          return failure();
        std::optional<::tfc::CudaArch> arch =
            ::tfc::parseCudaArch(cl.arch.getValue());
        if (!arch)
          return errorHandler("tfc-cuda-pipeline: arch '" + cl.arch.getValue() +
                              "' is not sm_NN (e.g. sm_90)");
        CudaPipelineOptions options;
        options.arch = *arch;
        options.ptxas = cl.ptxas;
        options.toolkitPath = cl.toolkitPath;
        buildCudaPipeline(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optionsHandler) {
        optionsHandler(CudaPipelineCLOptions());
      });
}
