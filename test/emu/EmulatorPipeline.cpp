//===- EmulatorPipeline.cpp - The CUDA pipeline for the emulator -*- C++
//-*-===//
//
// TESTS ONLY. The CUDA pipeline up to the NVVM kernels is the product's; only
// the device image differs, so the emulated runs check the kernels that a GPU
// would run.
//
//===----------------------------------------------------------------------===//

#include "emu/EmulatorPipeline.h"
#include "emu/Passes.h"

using namespace mlir;

void mlir::tfc::buildCudaEmulatorPipeline(OpPassManager &pm,
                                          const CudaPipelineOptions &options) {
  buildCudaKernelsPipeline(pm, options);
  pm.addPass(createTfcEmulateGpuKernels());
  TfcGpuLaunchesToRuntimeOptions launches;
  launches.arch = options.arch.name();
  launches.emulate = true;
  pm.addPass(createTfcGpuLaunchesToRuntime(launches));
  buildHostToLLVMPipeline(pm);
}
