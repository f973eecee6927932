//===- Driver.cpp - The stages of the tfc driver ----------------*- C++ -*-===//
//
//   tfc spec.toml -o model.o     writes model.o and model.h
//   tfc spec.toml --emit=KIND    one stage's output (see --help)
//
// The stages run in one direction: spec -> tfc IR -> lowered MLIR -> LLVM IR
// -> assembly / object. A bad spec is one `file:line:col: error:` line and
// exit code 1; so is any later failure, with MLIR's diagnostics.
//
//===----------------------------------------------------------------------===//

#include "tools/driver/Driver.h"

#include "abi/CppHeaderEmitter.h"
#include "abi/EntrySignature.h"
#include "abi/HeaderEmitter.h"
#include "abi/ModelDescriptor.h"
#include "abi/ParamLayout.h"
#include "conversion/MemoryReport.h"
#include "conversion/Passes.h"
#include "conversion/cuda/CudaPipeline.h"
#include "frontend/InitBuilder.h"
#include "frontend/ModelBuilder.h"
#include "kernels/cuda/CudaArch.h"
#include "spec/Spec.h"
#include "target/CudaTarget.h"
#include "target/CudaToolkit.h"
#include "target/ObjectEmitter.h"
#include "target/SharedLinker.h"
#include "tfc/Dialect/TfcDialect.h"
#include "transforms/FusionPipeline.h"
#include "transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;

namespace {

enum class Emit {
  Spec,
  Tfc,
  FusionReport,
  MemoryReport,
  Mlir,
  LLVMIR,
  Asm,
  Obj,
  Shared,
  Header,
  Layout,
  Ptx
};

// The shared LLVM library registers hundreds of backend options; --help
// shows only tfc's own (the rest stay usable, listed by --help-hidden).
cl::OptionCategory tfcCategory("tfc options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<spec.toml>"),
                               cl::Required, cl::cat(tfcCategory));
cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' = stdout)"),
                                cl::value_desc("path"), cl::cat(tfcCategory));
cl::opt<Emit> emitKind(
    "emit", cl::desc("What to write"), cl::init(Emit::Obj),
    cl::values(
        clEnumValN(Emit::Spec, "spec", "the resolved spec, as TOML"),
        clEnumValN(Emit::Tfc, "tfc", "the tfc dialect IR from the frontend"),
        clEnumValN(Emit::FusionReport, "fusion-report",
                   "which fusions fired where (forward and backward)"),
        clEnumValN(Emit::MemoryReport, "memory-report",
                   "the workspace split (parameters, saved activations per "
                   "layer by tensor, scratch) at --batch and --seq"),
        clEnumValN(Emit::Mlir, "mlir",
                   "the lowered MLIR (LLVM dialect), before translation"),
        clEnumValN(Emit::LLVMIR, "llvm", "optimised LLVM IR"),
        clEnumValN(Emit::Asm, "asm", "assembly for the target"),
        clEnumValN(Emit::Obj, "obj",
                   "an ELF object, and the C header beside it (default)"),
        clEnumValN(Emit::Shared, "shared",
                   "a shared object (libNAME.so) linked against "
                   "libtfc_runtime.so, for tfc_model_open and ctypes"),
        clEnumValN(Emit::Header, "header", "the C header only"),
        clEnumValN(Emit::Layout, "layout", "the parameter table as JSON"),
        clEnumValN(Emit::Ptx, "ptx",
                   "the kernels' PTX, not assembled (CUDA target; implies "
                   "--target=cuda)")),
    cl::cat(tfcCategory));
cl::opt<std::string>
    targetDevice("target",
                 cl::desc("Device: cpu or cuda (default: the spec's)"),
                 cl::init(""), cl::cat(tfcCategory));
cl::opt<std::string> cudaArch("cuda-arch",
                              cl::desc("GPU architecture of the CUDA target "
                                       "(sm_NN, default sm_90)"),
                              cl::init("sm_90"), cl::cat(tfcCategory));
cl::opt<std::string>
    ptxasPath("ptxas",
              cl::desc("ptxas that assembles the cubin embedded beside the PTX "
                       "(default: ptxas on PATH, else /usr/local/cuda/bin/"
                       "ptxas; 'none': embed the PTX only)"),
              cl::init(""), cl::cat(tfcCategory));
cl::opt<std::string> mcpu("mcpu",
                          cl::desc("CPU name (default: the spec's, "
                                   "else the host's)"),
                          cl::init(""), cl::cat(tfcCategory));
cl::opt<bool> forwardOnly(
    "forward-only",
    cl::desc("Inference only: no NAME_backward, and forward saves nothing "
             "for it (a smaller workspace)"),
    cl::init(false), cl::cat(tfcCategory));
cl::opt<bool> noDecoding(
    "no-decoding",
    cl::desc("Training only: no NAME_prefill, NAME_decode or KV cache "
             "functions for a causal model (a third less compile time)"),
    cl::init(false), cl::cat(tfcCategory));
cl::opt<bool> noFusion("no-fusion",
                       cl::desc("Run no fusion pass (every op on its own)"),
                       cl::init(false), cl::cat(tfcCategory));
cl::list<std::string>
    disabledFusions("disable-fusion",
                    cl::desc("Fusions to skip, comma-separated (names as in "
                             "--emit=fusion-report)"),
                    cl::CommaSeparated, cl::value_desc("name,..."),
                    cl::cat(tfcCategory));
cl::opt<unsigned> inputTimeout(
    "input-timeout",
    cl::desc("Seconds to wait in all for a pipe or FIFO to deliver the spec "
             "(regular files never wait)"),
    cl::init(tfc::spec::InputLimits::defaultPipeTimeoutMs / 1000),
    cl::value_desc("seconds"), cl::cat(tfcCategory));
cl::opt<std::string> mattr("mattr",
                           cl::desc("CPU features, e.g. +avx2,+fma (default: "
                                    "the spec's, else the host's)"),
                           cl::init(""), cl::cat(tfcCategory));

cl::opt<std::string> runtimeDir(
    "runtime-dir",
    cl::desc("--emit=shared: the folder of libtfc_runtime.so (default: "
             "../lib/shared, else ../lib, beside the tfc executable)"),
    cl::init(""), cl::value_desc("dir"), cl::cat(tfcCategory));

cl::opt<int64_t> reportBatch(
    "batch",
    cl::desc("--emit=memory-report: the batch (default: the spec's max_batch)"),
    cl::init(0), cl::value_desc("n"), cl::cat(tfcCategory));
cl::opt<int64_t> reportSeq(
    "seq",
    cl::desc("--emit=memory-report: the sequence length (default: max_seq)"),
    cl::init(0), cl::value_desc("n"), cl::cat(tfcCategory));
cl::opt<int64_t> reportEncSeq(
    "enc-seq",
    cl::desc("--emit=memory-report, cross-attention: the encoder's length "
             "(default: max_seq)"),
    cl::init(0), cl::value_desc("n"), cl::cat(tfcCategory));

cl::opt<std::string>
    cudaPath("cuda-path",
             cl::desc("CUDA toolkit whose libdevice provides f64 math in "
                      "kernels (default: $CUDA_HOME, else ptxas's toolkit, "
                      "else /usr/local/cuda)"),
             cl::init(""), cl::cat(tfcCategory));

/// The tool running: its name in messages and its CUDA pipeline.
const tfc::DriverConfig *tool = nullptr;

/// The CUDA pipeline's options from the command line; std::nullopt and
/// `error` for a malformed --cuda-arch, one without what `spec` needs, or a
/// --ptxas that does not exist.
std::optional<mlir::tfc::CudaPipelineOptions>
cudaPipelineOptions(const tfc::spec::Spec &spec, std::string &error) {
  std::optional<tfc::CudaArch> arch = tfc::parseCudaArch(cudaArch);
  if (!arch) {
    error = "--cuda-arch '" + cudaArch + "' is not sm_NN (e.g. sm_90)";
    return std::nullopt;
  }
  if (spec.model.dtype == tfc::spec::DType::BF16 &&
      !arch->hasBf16TensorCores()) {
    error = "model.dtype = \"bf16\" needs --cuda-arch sm_80 or newer, not '" +
            cudaArch + "'";
    return std::nullopt;
  }
  mlir::tfc::CudaPipelineOptions options;
  options.arch = *arch;
  // No PTX (a tool's own image, or only the plan): no toolkit is used.
  if (tool->buildCudaPipeline || emitKind == Emit::MemoryReport)
    return options;
  tfc::CudaToolkitSearch search = tfc::CudaToolkitSearch::fromEnvironment();
  search.ptxas = ptxasPath;
  search.toolkitPath = cudaPath;
  Expected<tfc::CudaToolkit> toolkit = tfc::findCudaToolkit(search);
  if (!toolkit) {
    error = toString(toolkit.takeError());
    return std::nullopt;
  }
  // --emit=ptx writes the PTX only: no cubin to assemble (ptxas is about
  // 40% of a CUDA build).
  if (emitKind != Emit::Ptx)
    options.ptxas = toolkit->ptxas;
  options.toolkitPath = toolkit->root;
  return options;
}

/// The fusions the command line turns off; false on an unknown name.
bool disabledFusionSet(llvm::StringSet<> &disabled) {
  for (const mlir::tfc::FusionInfo &fusion : mlir::tfc::allFusions())
    if (noFusion)
      disabled.insert(fusion.name);
  for (const std::string &name : disabledFusions) {
    auto known = mlir::tfc::allFusions();
    if (llvm::none_of(known, [&](const mlir::tfc::FusionInfo &f) {
          return f.name == name;
        })) {
      std::string names;
      for (const mlir::tfc::FusionInfo &f : known)
        names += (names.empty() ? "" : ", ") + f.name.str();
      errs() << tool->toolName << ": error: unknown fusion '" << name
             << "' in --disable-fusion"
             << " (known: " << names << ")\n";
      return false;
    }
    disabled.insert(name);
  }
  return true;
}

int fail(const Twine &message) {
  errs() << tool->toolName << ": error: " << message << "\n";
  return 1;
}

/// --batch, --seq (and --enc-seq with cross-attention) for the memory
/// report, each in [1, the spec's bound]; empty after an error.
SmallVector<int64_t> memoryReportSizes(const tfc::spec::Spec &spec) {
  struct Size {
    const char *flag;
    const cl::opt<int64_t> &option;
    int64_t bound;
    const char *boundName;
  };
  SmallVector<Size> sizes{
      {"--batch", reportBatch, spec.model.maxBatch, "max_batch"},
      {"--seq", reportSeq, spec.model.maxSeq, "max_seq"}};
  if (spec.attention.cross)
    sizes.push_back({"--enc-seq", reportEncSeq, spec.model.maxSeq, "max_seq"});
  else if (reportEncSeq.getNumOccurrences()) {
    fail("--enc-seq needs a model with cross-attention");
    return {};
  }
  SmallVector<int64_t> values;
  for (const Size &size : sizes) {
    int64_t value =
        size.option.getNumOccurrences() ? int64_t(size.option) : size.bound;
    if (value < 1 || value > size.bound) {
      fail(Twine(size.flag) + " " + Twine(value) + " is outside [1, " +
           Twine(size.bound) + "] (the spec's " + size.boundName + ")");
      return {};
    }
    values.push_back(value);
  }
  return values;
}

/// Writes `text` to `path` ('-' or empty = stdout).
bool writeText(StringRef path, StringRef text) {
  std::error_code ec;
  ToolOutputFile out(path.empty() ? "-" : path, ec, sys::fs::OF_Text);
  if (ec) {
    errs() << tool->toolName << ": error: cannot write " << path << ": "
           << ec.message() << "\n";
    return false;
  }
  out.os() << text;
  out.keep();
  return true;
}

/// The default output name: the spec's name plus an extension.
std::string defaultOutput(const tfc::spec::Spec &spec, Emit kind) {
  switch (kind) {
  case Emit::Obj:
    return spec.name + ".o";
  case Emit::Header:
    return spec.name + ".h";
  case Emit::Shared:
    return "lib" + spec.name + ".so";
  default:
    return "-";
  }
}

/// --emit=shared: the object in a temporary file, linked into `out`.
int emitSharedModel(Module &llvmModule, TargetMachine &machine, StringRef out,
                    const char *argv0) {
  if (out == "-")
    return fail("--emit=shared needs -o PATH (a shared object is not text)");
  std::string error;
  std::string toolPath = sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&emitSharedModel));
  std::string dir = tfc::findSharedRuntime(runtimeDir, toolPath, error);
  if (dir.empty())
    return fail(error);
  SmallString<128> object;
  int fd;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("tfc-shared", "o", fd, object))
    return fail("cannot create a temporary object: " + ec.message());
  bool ok;
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    ok = tfc::emitCode(llvmModule, machine, tfc::CodeKind::Object, os, error);
  }
  ok = ok && tfc::linkSharedModel(object, out, dir, error);
  sys::fs::remove(object);
  return ok ? 0 : fail(error);
}

} // namespace

int tfc::runDriver(int argc, char **argv, const DriverConfig &config) {
  tool = &config;
  InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  // Pass names must be registered before the IR-printing options that take
  // them (--mlir-print-ir-after=PASS).
  mlir::tfc::registerConversionPasses();
  mlir::tfc::registerTransformsPasses();
  if (config.registerPasses)
    config.registerPasses();
  mlir::registerPassManagerCLOptions();
  // --mlir-timing: each pass and each LLVM stage below (compile time).
  mlir::registerDefaultTimingManagerCLOptions();
  cl::SetVersionPrinter([](raw_ostream &os) {
    os << tool->toolName << " " << TFC_VERSION << " (MLIR/LLVM "
       << LLVM_VERSION_STRING << ")\n";
  });
  cl::HideUnrelatedOptions(tfcCategory);
  cl::ParseCommandLineOptions(argc, argv, config.overview);

  llvm::StringSet<> disabled;
  if (!disabledFusionSet(disabled))
    return 1;
  // The workspace limit is checked for the build these flags make.
  tfc::spec::WorkspaceBuild build;
  build.fusedAttention = !disabled.contains("attention");
  build.backward = !forwardOnly;
  tfc::spec::Diagnostic diag;
  std::optional<tfc::spec::Spec> spec = tfc::spec::parseSpecFile(
      inputPath, diag, int64_t(inputTimeout) * 1000, build);
  if (!spec) {
    errs() << diag.str() << "\n";
    return 1;
  }

  if (!targetDevice.empty() && targetDevice != "cpu" && targetDevice != "cuda")
    return fail("unknown --target '" + targetDevice + "' (cpu, cuda)");
  bool cuda =
      emitKind == Emit::Ptx || targetDevice == "cuda" ||
      (targetDevice.empty() && spec->target.device == tfc::spec::Device::CUDA);
  if (config.buildCudaPipeline && emitKind == Emit::Ptx)
    return fail(config.toolName + " builds no PTX (--emit=ptx)");
  std::string out = outputPath.empty() ? defaultOutput(*spec, emitKind)
                                       : outputPath.getValue();
  tfc::ParamLayout layout = tfc::computeLayout(*spec);
  switch (emitKind) {
  case Emit::Spec:
    return writeText(out, tfc::spec::printSpec(*spec)) ? 0 : 1;
  case Emit::Layout:
    return writeText(out, tfc::emitLayoutJson(*spec, layout)) ? 0 : 1;
  default:
    break;
  }

  mlir::DialectRegistry registry;
  tfc::registerCudaTarget(registry);
  mlir::MLIRContext context(registry);
  context.getOrLoadDialect<mlir::tfc::TfcDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      tfc::buildModel(context, *spec, !noDecoding);
  if (!module)
    return 1;
  // The C functions the header declares, from the model's roles.
  mlir::tfc::abi::EntrySignature entries = mlir::tfc::abi::describeEntryPoints(
      mlir::tfc::abi::lookupModelFunction(*module), !forwardOnly, cuda);
  if (emitKind == Emit::Header)
    return writeText(out, tfc::emitHeader(*spec, layout, entries)) ? 0 : 1;

  if (emitKind == Emit::Tfc) {
    std::string text;
    raw_string_ostream os(text);
    module->print(os);
    return writeText(out, text) ? 0 : 1;
  }

  // A tool with a device image of its own lowers nothing else: a CPU object
  // from it would pass for the emulated kernels. (The spec, the tfc IR, the
  // header and the layout do not depend on the image.)
  if (config.buildCudaPipeline && !cuda)
    return fail(config.toolName +
                " builds the CUDA target only (--target=cuda)");
  std::optional<mlir::tfc::CudaPipelineOptions> cudaOptions;
  if (cuda) {
    std::string error;
    cudaOptions = cudaPipelineOptions(*spec, error);
    if (!cudaOptions)
      return fail(error);
  }
  tfc::HostTarget hostTarget{mcpu.empty() ? spec->target.cpu : mcpu,
                             mattr.empty() ? spec->target.features : mattr};
  std::string error;
  std::unique_ptr<TargetMachine> machine =
      tfc::createHostTargetMachine(hostTarget, error);
  if (!machine)
    return fail(error);

  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope rootTimer = timing.getRootScope();
  mlir::PassManager pm(&context);
  if (failed(mlir::applyPassManagerCLOptions(pm)))
    return 1;
  pm.enableTiming(rootTimer);
  mlir::tfc::addFusionPasses(pm, disabled);
  if (!forwardOnly) {
    pm.addPass(mlir::tfc::createTfcDeriveBackward());
    mlir::tfc::addBackwardFusionPasses(pm, disabled,
                                       /*cuda=*/cudaOptions.has_value());
  }
  if (emitKind == Emit::FusionReport) {
    if (failed(pm.run(*module)))
      return 1;
    return writeText(out, mlir::tfc::fusionReport(*module, disabled)) ? 0 : 1;
  }
  mlir::tfc::CpuPipelineOptions cpuOptions;
  cpuOptions.vectorWidth = tfc::vectorWidthOf(*machine);
  cpuOptions.bf16Dot = tfc::hasBf16DotProducts(*machine);
  if (emitKind == Emit::MemoryReport) {
    // The plan is tfc-lower-to-loops' own: run it as the pipeline would.
    SmallVector<int64_t> sizes = memoryReportSizes(*spec);
    if (sizes.empty())
      return 1;
    mlir::tfc::TfcLowerToLoopsOptions lowering =
        cudaOptions ? mlir::tfc::cudaLoweringOptions(*cudaOptions)
                    : mlir::tfc::cpuLoweringOptions(cpuOptions);
    lowering.memoryReport = sizes;
    pm.addPass(mlir::tfc::createTfcLowerToLoops(lowering));
    if (failed(pm.run(*module)))
      return 1;
    auto report = (*module)->getAttrOfType<mlir::DictionaryAttr>(
        mlir::tfc::kMemoryReportAttrName);
    if (!report)
      return fail("the model has no workspace plan");
    return writeText(out, mlir::tfc::formatMemoryReport(report)) ? 0 : 1;
  }
  tfc::buildInitFunctions(*module, spec->name, layout);
  if (cudaOptions) {
    if (config.buildCudaPipeline)
      config.buildCudaPipeline(pm, *cudaOptions);
    else
      mlir::tfc::buildCudaPipeline(pm, *cudaOptions);
  } else {
    mlir::tfc::buildCpuPipeline(pm, cpuOptions);
  }
  if (failed(pm.run(*module)))
    return 1;
  if (emitKind == Emit::Ptx) {
    std::optional<StringRef> ptx = tfc::embeddedPtx(*module);
    if (!ptx)
      return fail("the model has no kernels");
    return writeText(out, *ptx) ? 0 : 1;
  }
  if (emitKind == Emit::Mlir) {
    std::string text;
    raw_string_ostream os(text);
    module->print(os);
    return writeText(out, text) ? 0 : 1;
  }

  mlir::TimingScope translateTimer = rootTimer.nest("Translate to LLVM IR");
  LLVMContext llvmContext;
  std::unique_ptr<Module> llvmModule =
      tfc::translateToLLVMIR(*module, llvmContext, *machine);
  translateTimer.stop();
  if (!llvmModule)
    return fail("translation to LLVM IR failed");
  bool shared = emitKind == Emit::Shared;
  if (!tfc::emitModelDescriptor(*llvmModule, *spec, layout, entries, shared,
                                error))
    return fail(error);
  mlir::TimingScope optimizeTimer = rootTimer.nest("LLVM O3");
  tfc::optimizeModule(*llvmModule, *machine);
  optimizeTimer.stop();
  if (emitKind == Emit::LLVMIR) {
    std::string text;
    raw_string_ostream os(text);
    llvmModule->print(os, nullptr);
    return writeText(out, text) ? 0 : 1;
  }
  if (shared)
    return emitSharedModel(*llvmModule, *machine, out, argv[0]);

  std::error_code ec;
  bool object = emitKind == Emit::Obj;
  ToolOutputFile file(out, ec, object ? sys::fs::OF_None : sys::fs::OF_Text);
  if (ec)
    return fail("cannot write " + out + ": " + ec.message());
  mlir::TimingScope codegenTimer = rootTimer.nest("LLVM code generation");
  if (!tfc::emitCode(*llvmModule, *machine,
                     object ? tfc::CodeKind::Object : tfc::CodeKind::Assembly,
                     file.os(), error))
    return fail(error);
  codegenTimer.stop();
  file.keep();
  if (object && out != "-") {
    SmallString<256> header(out);
    sys::path::replace_extension(header, ".h");
    if (!writeText(header, tfc::emitHeader(*spec, layout, entries)))
      return 1;
    // NAME.hpp beside it: the typed C++ wrapper over tfc/model.hpp.
    SmallString<256> cppHeader(header);
    sys::path::replace_extension(cppHeader, ".hpp");
    if (!writeText(cppHeader, tfc::emitCppHeader(
                                  entries, sys::path::filename(header).str())))
      return 1;
  }
  return 0;
}
