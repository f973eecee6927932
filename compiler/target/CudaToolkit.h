//===- CudaToolkit.h - Finding ptxas and libdevice --------------*- C++ -*-===//
//
// The CUDA target needs nothing from the CUDA toolkit to write PTX; with it,
// ptxas assembles a cubin beside the PTX and libdevice provides the f64 math
// that kernels may call. This is where tfc looks for both, in a fixed order.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TARGET_CUDATOOLKIT_H
#define TFC_TARGET_CUDATOOLKIT_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace tfc {

/// What the command line asks for and where to look otherwise. The defaults
/// are this machine's; tests point them at directories of their own.
struct CudaToolkitSearch {
  /// --ptxas: an executable, "none" (embed the PTX only) or "" (search).
  std::string ptxas;
  /// --cuda-path: the toolkit, taken as given; "" (search).
  std::string toolkitPath;
  /// $CUDA_HOME.
  std::optional<std::string> cudaHome;
  /// Where ptxas is looked for by name; empty: $PATH.
  llvm::SmallVector<std::string> programPaths;
  /// The toolkit's usual place, searched last for both.
  std::string defaultRoot = "/usr/local/cuda";

  /// The search as the environment sets it ($CUDA_HOME).
  static CudaToolkitSearch fromEnvironment();
};

/// What was found; an empty string: nothing (no cubin, no libdevice).
struct CudaToolkit {
  std::string ptxas;
  /// A toolkit root with nvvm/libdevice/libdevice.10.bc.
  std::string root;
};

/// ptxas: --ptxas if given (an error unless it is executable), nothing for
/// "none", else ptxas on the program paths, else DEFAULT/bin/ptxas.
/// The root: --cuda-path if given, else the first with libdevice of
/// $CUDA_HOME, the toolkit of ptxas (DIR in DIR/bin/ptxas) and DEFAULT. The
/// root does not depend on "none": ptxas is still looked for to find it, so
/// the PTX is the same with and without a cubin.
llvm::Expected<CudaToolkit> findCudaToolkit(const CudaToolkitSearch &search);

} // namespace tfc

#endif // TFC_TARGET_CUDATOOLKIT_H
