//===- CudaArch.h - NVIDIA GPU architectures (sm_NN) ------------*- C++ -*-===//
//
// The one parser of `sm_NN` names and the one place for what an architecture
// can do. The driver (--cuda-arch), the CUDA pipeline (its arch option) and
// the lowering's bf16-tensor-cores option all ask it, so they cannot disagree.
// A leaf library (LLVM Support only), like LLVM's TargetParser, so that
// conversion/ can use it without depending on the rest of target/.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_CUDA_CUDAARCH_H
#define TFC_KERNELS_CUDA_CUDAARCH_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace tfc {

/// A GPU architecture as ptxas and NVPTX name it: `sm_90`, or `sm_90a` for
/// the architecture-specific features of that chip.
struct CudaArch {
  /// The compute capability times ten (sm_86: 86).
  unsigned number = 0;
  /// The `a` suffix (sm_90a): features that only this chip has.
  bool archSpecific = false;

  /// The name back, as parsed (`sm_90a`).
  std::string name() const;

  /// mma.sync with bf16 operands (sm_80 on), which the bf16 linear layers
  /// need: NVPTX aborts on the intrinsic below that, so the driver and
  /// tfc-lower-to-loops reject such a build first.
  bool hasBf16TensorCores() const { return number >= 80; }
};

/// `sm_NN` or `sm_NNa` with NN from 50 (the oldest chip NVPTX still targets
/// through PTX 8.0) to 999; std::nullopt for anything else.
std::optional<CudaArch> parseCudaArch(llvm::StringRef name);

} // namespace tfc

#endif // TFC_KERNELS_CUDA_CUDAARCH_H
