//===- tfc-emu.cpp - tfc with kernels for the CUDA emulator -----*- C++ -*-===//
//
// TESTS ONLY. `tfc-emu spec.toml --target=cuda -o model.o` is tfc (the same
// command line and stages, tools/driver) except for the CUDA device image:
// the kernels become host functions for the CPU emulator of the driver
// (libtfc_cuda_emu.so, loaded with TFC_CUDA_DRIVER), not PTX. Without a GPU
// this is how the lit suite checks the CUDA kernels' numbers.
//
//===----------------------------------------------------------------------===//

#include "emu/EmulatorPipeline.h"
#include "emu/Passes.h"
#include "tools/driver/Driver.h"

int main(int argc, char **argv) {
  tfc::DriverConfig config;
  config.toolName = "tfc-emu";
  config.overview =
      "tfc-emu (tests only): tfc whose CUDA builds run on the CPU emulator "
      "of the driver\n\n"
      "  tfc-emu spec.toml --target=cuda -o model.o\n"
      "  TFC_CUDA_DRIVER=build/lib/libtfc_cuda_emu.so ./program\n\n"
      "The options are tfc's; the kernels are host functions, not PTX.\n";
  config.buildCudaPipeline = mlir::tfc::buildCudaEmulatorPipeline;
  config.registerPasses = mlir::tfc::registerEmulatorPasses;
  return tfc::runDriver(argc, argv, config);
}
