//===- ObjectEmitter.h - LLVM dialect -> object file ------------*- C++ -*-===//

#ifndef TFC_TARGET_OBJECTEMITTER_H
#define TFC_TARGET_OBJECTEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace tfc {

struct HostTarget {
  std::string cpu;      // Empty: the host CPU.
  std::string features; // Empty: the host CPU's features.
};

/// A TargetMachine for the host triple with the requested CPU and
/// features, position-independent (users link into PIE executables), -O3.
std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(const HostTarget &target, std::string &error);

/// f32 lanes of the widest vector unit the machine's features enable.
int64_t vectorWidthOf(const llvm::TargetMachine &machine);
/// Whether the target multiplies bf16 pairs into f32 in 16-lane vectors
/// (AVX512-BF16's vdpbf16ps, with AVX-512).
bool hasBf16DotProducts(const llvm::TargetMachine &machine);

/// Translates an LLVM-dialect module to LLVM IR for `machine` (its triple
/// and data layout); null when translation fails.
std::unique_ptr<llvm::Module> translateToLLVMIR(mlir::ModuleOp module,
                                                llvm::LLVMContext &context,
                                                llvm::TargetMachine &machine);

/// Runs the -O3 module pipeline of `machine` on `module`.
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine);

enum class CodeKind { Assembly, Object };

/// Writes assembly or an ELF object for `module`.
bool emitCode(llvm::Module &module, llvm::TargetMachine &machine, CodeKind kind,
              llvm::raw_pwrite_stream &os, std::string &error);

} // namespace tfc

#endif // TFC_TARGET_OBJECTEMITTER_H
