//===- Passes.h - tfc lowering passes ---------------------------*- C++ -*-===//

#ifndef TFC_CONVERSION_PASSES_H
#define TFC_CONVERSION_PASSES_H

// Declarations only: the dialects a pass depends on are included where it
// is defined (its GEN_PASS_DEF), not by every user of this header (the
// NVVM and LLVM dialects' headers alone are half a million lines).
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
  /// AVX512-BF16's vdpbf16ps for the bf16 linear layers (TfcLowerToLoops'
  /// bf16-dot).
  bool bf16Dot = false;
};

/// tfc-lower-to-loops as buildCpuPipeline runs it (the memory report runs it
/// alone, with the same options).
TfcLowerToLoopsOptions cpuLoweringOptions(const CpuPipelineOptions &options);

/// tfc -> loops -> thread-pool calls -> LLVM dialect, ready for translation.
void buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options);

/// Registers `tfc-cpu-pipeline` for tfc-opt.
void registerCpuPipeline();

/// The host part of both pipelines: loops, vectors and memrefs of the host
/// functions -> LLVM dialect (tfc-approximate-math included).
void buildHostToLLVMPipeline(OpPassManager &pm);

/// The LLVM global holding the NUL-terminated PTX of a CUDA build.
inline constexpr llvm::StringLiteral kPtxGlobalName = "__tfc_cuda_ptx";

} // namespace mlir::tfc

#endif // TFC_CONVERSION_PASSES_H
