//===- Passes.h - tfc lowering passes ---------------------------*- C++ -*-===//

#ifndef TFC_CONVERSION_PASSES_H
#define TFC_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::tfc {

#define GEN_PASS_DECL
#include "conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "conversion/Passes.h.inc"

/// Options of the CPU pipeline that differ between targets.
struct CpuPipelineOptions {
  int64_t vectorWidth = 16;
};

/// tfc -> loops -> thread-pool calls -> LLVM dialect, ready for translation.
void buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options);

/// Registers `tfc-cpu-pipeline` for tfc-opt.
void registerCpuPipeline();

/// The host part of both pipelines: loops, vectors and memrefs of the host
/// functions -> LLVM dialect (tfc-approximate-math included).
void buildHostToLLVMPipeline(OpPassManager &pm);

/// Options of the CUDA pipeline.
struct CudaPipelineOptions {
  std::string arch = "sm_90"; // chip of the PTX and the cubin
  std::string ptxFeatures = "+ptx80";
  std::string ptxas; // assembles a cubin when not empty
  /// A CUDA toolkit whose nvvm/libdevice provides the f64 math that kernels
  /// may call (sinusoidal positions); empty: none, and such kernels fail.
  std::string toolkitPath;
  /// Test-only: instead of PTX, host functions and a table for the CPU
  /// emulator of the driver (tfc-emulate-gpu-kernels), same kernel IR.
  bool emulate = false;
};

/// Whether the GPU `arch` (sm_NN) has mma.sync with bf16 operands (sm_80
/// on), which the bf16 linear layers need: NVPTX aborts on the intrinsic
/// below that, so tfc and tfc-lower-to-loops reject such a build first.
bool hasBf16TensorCores(llvm::StringRef arch);

/// tfc -> loops -> GPU kernels (PTX, cubin) + host code that launches them
/// through the tfc runtime -> LLVM dialect, ready for translation.
void buildCudaPipeline(OpPassManager &pm, const CudaPipelineOptions &options);

/// The LLVM global holding the NUL-terminated PTX of a CUDA build.
inline constexpr llvm::StringLiteral kPtxGlobalName = "__tfc_cuda_ptx";

/// Registers `tfc-cuda-pipeline` for tfc-opt.
void registerCudaPipeline();

} // namespace mlir::tfc

#endif // TFC_CONVERSION_PASSES_H
