//===- Passes.h - Test-only passes of the CUDA emulator ---------*- C++ -*-===//
//
// TESTS ONLY. The pass that turns the NVVM kernels into the CPU emulator's
// image, for tfc-emu (EmulatorPipeline.h) and tfc-opt.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_TEST_EMU_PASSES_H
#define TFC_TEST_EMU_PASSES_H

#include "conversion/Passes.h"

namespace mlir::tfc {

#define GEN_PASS_DECL
#include "emu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "emu/Passes.h.inc"

} // namespace mlir::tfc

#endif // TFC_TEST_EMU_PASSES_H
