//===- EmulatorPipeline.h - The CUDA pipeline for the emulator --*- C++ -*-===//
//
// TESTS ONLY (tfc-emu).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TEST_EMU_EMULATORPIPELINE_H
#define TFC_TEST_EMU_EMULATORPIPELINE_H

#include "conversion/cuda/CudaPipeline.h"

namespace mlir::tfc {

/// buildCudaPipeline with the emulator's image in place of the PTX: the same
/// kernels (buildCudaKernelsPipeline), then tfc-emulate-gpu-kernels instead
/// of gpu-module-to-binary, and tfc-gpu-launches-to-runtime{emulate=1}.
void buildCudaEmulatorPipeline(OpPassManager &pm,
                               const CudaPipelineOptions &options);

} // namespace mlir::tfc

#endif // TFC_TEST_EMU_EMULATORPIPELINE_H
