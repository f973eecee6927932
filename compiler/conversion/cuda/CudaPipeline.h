//===- CudaPipeline.h - The CUDA target's pass pipeline ---------*- C++ -*-===//

#ifndef TFC_CONVERSION_CUDA_CUDAPIPELINE_H
#define TFC_CONVERSION_CUDA_CUDAPIPELINE_H

#include "kernels/cuda/CudaArch.h"

#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::tfc {

/// Options of the CUDA pipeline.
struct CudaPipelineOptions {
  /// The chip of the PTX and the cubin; what it can do (bf16 tensor cores)
  /// sets the lowering's options.
  ::tfc::CudaArch arch{90};
  std::string ptxFeatures = "+ptx80";
  std::string ptxas; // assembles a cubin when not empty
  /// A CUDA toolkit whose nvvm/libdevice provides the f64 math that kernels
  /// may call (sinusoidal positions); empty: none, and such kernels fail.
  std::string toolkitPath;
};

struct TfcLowerToLoopsOptions;

/// tfc-lower-to-loops as the CUDA pipelines run it (the memory report runs
/// it alone, with the same options).
TfcLowerToLoopsOptions cudaLoweringOptions(const CudaPipelineOptions &options);

/// tfc -> loops -> GPU kernels in the LLVM and NVVM dialects, inside one
/// gpu.module @kernels that the host functions launch (gpu.launch_func).
/// The device image is the next step: buildCudaPipeline's PTX, or the
/// test-only emulator's image (test/emu).
void buildCudaKernelsPipeline(OpPassManager &pm,
                              const CudaPipelineOptions &options);

/// tfc -> loops -> GPU kernels (PTX, cubin) + host code that launches them
/// through the tfc runtime -> LLVM dialect, ready for translation.
void buildCudaPipeline(OpPassManager &pm, const CudaPipelineOptions &options);

/// Registers `tfc-cuda-pipeline` for tfc-opt.
void registerCudaPipeline();

} // namespace mlir::tfc

#endif // TFC_CONVERSION_CUDA_CUDAPIPELINE_H
