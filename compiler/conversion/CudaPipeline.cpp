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

#include "conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
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

bool tfc::hasBf16TensorCores(StringRef arch) {
  unsigned number = 0;
  return arch.consume_front("sm_") && !arch.consumeInteger(10, number) &&
         number >= 80;
}

void tfc::buildCudaPipeline(OpPassManager &pm,
                            const CudaPipelineOptions &options) {
  TfcLowerToLoopsOptions lowerOptions;
  lowerOptions.vectorWidth = kGpuVectorWidth;
  lowerOptions.hostMemory = false;
  lowerOptions.bf16TensorCores = hasBf16TensorCores(options.arch);
  pm.addPass(createTfcLowerToLoops(lowerOptions));
  pm.addPass(createTfcParallelLoopsToGpu());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createTfcMergeGpuModules());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.arch;
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

  TfcGpuLaunchesToRuntimeOptions launches;
  launches.arch = options.arch;
  if (options.emulate) {
    // Test-only: the same kernel IR, run by the CPU emulator of the driver.
    pm.addPass(createTfcEmulateGpuKernels());
    launches.emulate = true;
    pm.addPass(createTfcGpuLaunchesToRuntime(launches));
    buildHostToLLVMPipeline(pm);
    return;
  }
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa"; // PTX; ptxas runs in the next pass.
  // Upstream falls back to $CUDA_HOME when this is empty: a path that does
  // not exist keeps the output independent of the environment.
  binary.toolkitPath =
      options.toolkitPath.empty() ? "/nonexistent/cuda" : options.toolkitPath;
  pm.addPass(createGpuModuleToBinaryPass(binary));
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
  Option<bool> emulate{
      *this, "emulate",
      llvm::cl::desc("Kernels for the CPU emulator of the driver, not PTX "
                     "(tests only)"),
      llvm::cl::init(false)};
};
} // namespace

void tfc::registerCudaPipeline() {
  PassPipelineRegistration<CudaPipelineCLOptions>(
      "tfc-cuda-pipeline",
      "Lowers tfc model functions to PTX kernels and host LLVM dialect",
      [](OpPassManager &pm, const CudaPipelineCLOptions &cl) {
        CudaPipelineOptions options;
        options.arch = cl.arch;
        options.ptxas = cl.ptxas;
        options.toolkitPath = cl.toolkitPath;
        options.emulate = cl.emulate;
        buildCudaPipeline(pm, options);
      });
}
