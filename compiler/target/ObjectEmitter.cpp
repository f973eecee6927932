//===- ObjectEmitter.cpp - LLVM dialect -> object file ----------*- C++ -*-===//

#include "target/ObjectEmitter.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"

using namespace tfc;

std::unique_ptr<llvm::TargetMachine>
tfc::createHostTargetMachine(const HostTarget &target, std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t)
    return nullptr;
  std::string cpu =
      target.cpu.empty() ? llvm::sys::getHostCPUName().str() : target.cpu;
  std::string features = target.features;
  if (features.empty() && target.cpu.empty()) {
    llvm::SubtargetFeatures host;
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      host.AddFeature(feature.first(), feature.second);
    features = host.getString();
  }
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(
      t->createTargetMachine(triple, cpu, features, options, llvm::Reloc::PIC_,
                             std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    error = "cannot create a target machine for " + triple.str() + " " + cpu;
  return machine;
}

/// Whether `machine` has the x86 feature `name`. The explicit feature list
/// wins ("-avx512f" must not match as a prefix of "-avx512fp16", so items
/// are compared whole); else the CPU's defaults, with their implications
/// ("-avx512f" clears avx512bf16).
static bool hasFeature(const llvm::TargetMachine &machine,
                       llvm::StringRef name) {
  llvm::SmallVector<llvm::StringRef> items;
  machine.getTargetFeatureString().split(items, ',', -1, false);
  for (llvm::StringRef item : llvm::reverse(items))
    if (item.drop_front() == name)
      return item.front() == '+';
  const llvm::MCSubtargetInfo *sti = machine.getMCSubtargetInfo();
  return sti && sti->checkFeatures(("+" + name).str());
}

int64_t tfc::vectorWidthOf(const llvm::TargetMachine &machine) {
  if (hasFeature(machine, "avx512f"))
    return 16;
  if (hasFeature(machine, "avx"))
    return 8;
  return 4;
}

bool tfc::hasBf16DotProducts(const llvm::TargetMachine &machine) {
  // The subtarget's view: "-avx512f" in the list turns avx512bf16 off even
  // where the host's "+avx512bf16" is listed too.
  const llvm::MCSubtargetInfo *sti = machine.getMCSubtargetInfo();
  return vectorWidthOf(machine) == 16 && sti &&
         sti->checkFeatures("+avx512bf16");
}

std::unique_ptr<llvm::Module>
tfc::translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context,
                       llvm::TargetMachine &machine) {
  mlir::registerBuiltinDialectTranslation(*module.getContext());
  mlir::registerLLVMDialectTranslation(*module.getContext());
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context);
  if (!llvmModule)
    return nullptr;
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());
  return llvmModule;
}

void tfc::optimizeModule(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&machine);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  // Forward, prefill and decode lower the same ops into the same parallel
  // bodies: merged before O3, each is optimised and compiled once (a fifth
  // of a small model's compile time, a quarter of its object).
  mpm.addPass(llvm::MergeFunctionsPass());
  mpm.addPass(pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3));
  mpm.run(module, mam);
}

bool tfc::emitCode(llvm::Module &module, llvm::TargetMachine &machine,
                   CodeKind kind, llvm::raw_pwrite_stream &os,
                   std::string &error) {
  llvm::legacy::PassManager pm;
  auto fileType = kind == CodeKind::Object
                      ? llvm::CodeGenFileType::ObjectFile
                      : llvm::CodeGenFileType::AssemblyFile;
  if (machine.addPassesToEmitFile(pm, os, nullptr, fileType)) {
    error = "the target cannot emit this kind of file";
    return false;
  }
  pm.run(module);
  return true;
}
