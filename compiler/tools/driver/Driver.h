//===- Driver.h - The stages of the tfc driver, for its tools ---*- C++ -*-===//
//
// `tfc` and the test tool `tfc-emu` (test/emu) are one driver: the same
// command line and the same stages (spec -> tfc IR -> fusion, autodiff ->
// lowering -> LLVM IR -> object + header). A tool says only what it changes.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TOOLS_DRIVER_DRIVER_H
#define TFC_TOOLS_DRIVER_DRIVER_H

#include "conversion/cuda/CudaPipeline.h"

#include "llvm/ADT/StringRef.h"

namespace tfc {

/// What a tool built on the driver changes; `tfc` takes the defaults.
struct DriverConfig {
  /// The name in messages (`NAME: error: ...`) and in --version.
  llvm::StringRef toolName = "tfc";
  /// What --help prints above the options.
  llvm::StringRef overview;
  /// Builds the CUDA target's pipeline in place of buildCudaPipeline, for a
  /// device image of the tool's own (test/emu: the emulator's). Such a
  /// pipeline writes no PTX: the driver then looks for no CUDA toolkit,
  /// builds only the CUDA target and refuses --emit=ptx.
  void (*buildCudaPipeline)(mlir::OpPassManager &,
                            const mlir::tfc::CudaPipelineOptions &) = nullptr;
  /// Registers the passes that pipeline adds, so that the IR-printing
  /// options (--mlir-print-ir-after=PASS) know their names.
  void (*registerPasses)() = nullptr;
};

/// Parses the command line and runs the stages; returns the exit code.
int runDriver(int argc, char **argv, const DriverConfig &config);

} // namespace tfc

#endif // TFC_TOOLS_DRIVER_DRIVER_H
