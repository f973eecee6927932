//===- GpuLaunchesToRuntime.cpp - Kernels via the tfc runtime ---*- C++ -*-===//
//
// Generated host code talks to the GPU only through the tfc runtime
// (runtime.h, "CUDA"): the kernels' PTX (and a cubin when ptxas ran) become
// one `tfc_cuda_module` global, and every gpu.launch_func a call
//   tfc_cuda_launch(&module, "kernel", gx, gy, gz, bx, by, bz, smem, stream,
//                   args)
// whose status the entry point returns. Upstream's gpu-to-llvm instead calls
// the mgpu* wrappers, which abort on a driver error and load modules in a
// global constructor, before the user's program has chosen a device; the
// runtime loads lazily, in the caller's context, and maps every driver error
// to a status with a message.
//
// The few scalars the host still loads (the token check's result) are read
// back with tfc_cuda_read. After a failed launch or read the rest of the call
// is skipped (a status slot guards each), so the depth loop needs no early
// exit, and host error messages do not replace the driver's.
//
//===----------------------------------------------------------------------===//

#include "abi/RuntimeAbi.h"
#include "conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCGPULAUNCHESTORUNTIME
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// Runs `ptxas -arch=ARCH` on `ptx`; the cubin, or an error message.
FailureOr<std::string> assemble(StringRef ptxas, StringRef arch, StringRef ptx,
                                std::string &error) {
  SmallString<128> ptxPath, cubinPath, logPath;
  if (llvm::sys::fs::createTemporaryFile("tfc", "ptx", ptxPath) ||
      llvm::sys::fs::createTemporaryFile("tfc", "cubin", cubinPath) ||
      llvm::sys::fs::createTemporaryFile("tfc", "log", logPath)) {
    error = "cannot create temporary files for ptxas";
    return failure();
  }
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove(ptxPath);
    llvm::sys::fs::remove(cubinPath);
    llvm::sys::fs::remove(logPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(ptxPath, ec);
    if (ec) {
      error = "cannot write " + ptxPath.str().str();
      return failure();
    }
    os << ptx;
  }
  std::string archFlag = ("-arch=" + arch).str();
  SmallVector<StringRef> args = {ptxas,   archFlag, "-O3",
                                 ptxPath, "-o",     cubinPath};
  std::optional<StringRef> redirects[] = {std::nullopt, logPath, logPath};
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/600, 0, &error);
  if (rc != 0) {
    auto log = llvm::MemoryBuffer::getFile(logPath);
    error = "ptxas failed" + (log ? ": " + (*log)->getBuffer().str()
                                  : (error.empty() ? "" : ": " + error));
    return failure();
  }
  auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
  if (!cubin) {
    error = "ptxas wrote no cubin";
    return failure();
  }
  return (*cubin)->getBuffer().str();
}

/// `status slot == TFC_OK` (nothing failed yet in this call), loaded at `b`.
Value nothingFailed(OpBuilder &b, Location loc, Value statusSlot) {
  Value status = LLVM::LoadOp::create(b, loc, b.getI32Type(), statusSlot);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, status,
                               abi::statusConstant(b, loc, TFC_OK));
}

class LaunchLowering {
public:
  LaunchLowering(ModuleOp module)
      : module(module), ctx(module.getContext()),
        ptr(LLVM::LLVMPointerType::get(ctx)), i64(IntegerType::get(ctx, 64)),
        i32(IntegerType::get(ctx, 32)) {}

  /// Replaces `binary` by the `tfc_cuda_module` global.
  LogicalResult emitModule(gpu::BinaryOp binary, StringRef ptxas,
                           StringRef arch, bool emulate);
  /// Rewrites every launch in `func` into a guarded runtime call.
  LogicalResult lowerLaunches(func::FuncOp func);

private:
  /// An internal constant NUL-terminated string global `name`.
  StringRef stringGlobal(StringRef name, StringRef value);
  /// The launch's kernel operands, flattened as the NVVM kernel takes them
  /// (a memref becomes allocated and aligned pointer, offset, sizes,
  /// strides), as LLVM-compatible values.
  SmallVector<Value> flattenOperands(OpBuilder &b, gpu::LaunchFuncOp launch);
  /// tfc_cuda_launch and tfc_cuda_read, typed as runtime.h declares them.
  func::FuncOp declareLaunch() {
    return abi::declareRuntimeFunc(module, abi::runtime::tfc_cuda_launch);
  }
  func::FuncOp declareRead() {
    return abi::declareRuntimeFunc(module, abi::runtime::tfc_cuda_read);
  }
  /// Replaces a host `memref.load` of device memory by a guarded
  /// `tfc_cuda_read` into a host slot (zero when a call failed before).
  void lowerDeviceRead(memref::LoadOp load, Value stream, Value statusSlot,
                       OpBuilder &entry);

  ModuleOp module;
  MLIRContext *ctx;
  Type ptr, i64, i32;
  std::string moduleGlobal;
  llvm::StringMap<std::string> kernelNames; // kernel -> its name's global
  unsigned nextKernel = 0;
};

StringRef LaunchLowering::stringGlobal(StringRef name, StringRef value) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  std::string text = value.str();
  text.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), text.size());
  auto global =
      LLVM::GlobalOp::create(b, module.getLoc(), type,
                             /*isConstant=*/true, LLVM::Linkage::Internal, name,
                             b.getStringAttr(text));
  return global.getSymName();
}

LogicalResult LaunchLowering::emitModule(gpu::BinaryOp binary, StringRef ptxas,
                                         StringRef arch, bool emulate) {
  std::optional<StringRef> ptx;
  FlatSymbolRefAttr emulatorImage;
  for (Attribute attr : binary.getObjects()) {
    auto object = dyn_cast<gpu::ObjectAttr>(attr);
    if (object && object.getFormat() == gpu::CompilationTarget::Assembly)
      ptx = object.getObject().getValue();
    if (object && object.getProperties())
      if (auto image = object.getProperties().getAs<FlatSymbolRefAttr>(
              "tfc.emulator_image"))
        emulatorImage = image;
  }
  if (emulate != bool(emulatorImage))
    return binary.emitOpError(emulate ? "has no emulator image (run "
                                        "tfc-emulate-gpu-kernels)"
                                      : "is an emulator image; lower it with "
                                        "emulate=1");
  // The emulated driver (tests only) takes the image as the cubin; the PTX
  // slot says what the module is to a real driver, whose JIT rejects it.
  if (emulate)
    ptx = "// tfc-emu: kernels for the CPU emulator of the CUDA "
          "driver, no PTX\n";
  if (!ptx)
    return binary.emitOpError("has no PTX object (run gpu-module-to-binary "
                              "with format=isa)");
  // A function the PTX declares but does not define was not linked in:
  // libdevice's f64 math when no CUDA toolkit was found.
  size_t extern_ = ptx->find(".extern .func");
  if (extern_ != StringRef::npos) {
    StringRef rest = ptx->substr(extern_);
    size_t nameStart = rest.find("__");
    StringRef name =
        nameStart == StringRef::npos
            ? StringRef("?")
            : rest.substr(nameStart).take_until([](char c) {
                return c == '(' || c == ' ' || c == ';' || c == '\n';
              });
    return binary.emitOpError()
           << "calls " << name
           << ", which needs libdevice: give the CUDA toolkit with --cuda-path "
              "(nvvm/libdevice/libdevice.10.bc)";
  }
  std::string cubin;
  if (!ptxas.empty()) {
    std::string error;
    FailureOr<std::string> assembled = assemble(ptxas, arch, *ptx, error);
    if (failed(assembled))
      return binary.emitOpError(error);
    cubin = std::move(*assembled);
  }

  StringRef modelName = "model";
  module.walk([&](func::FuncOp func) {
    if (auto name = func->getAttrOfType<StringAttr>("tfc.model"))
      modelName = name.getValue();
  });
  StringRef nameGlobal = stringGlobal("__tfc_cuda_name", modelName);
  StringRef ptxGlobal = stringGlobal(kPtxGlobalName, *ptx);
  StringRef archGlobal = stringGlobal("__tfc_cuda_arch", arch);
  std::optional<StringRef> cubinGlobal;
  if (!cubin.empty())
    cubinGlobal = stringGlobal("__tfc_cuda_cubin", cubin);
  if (emulatorImage) {
    cubinGlobal = emulatorImage.getValue();
    // The image's header (tfc_cuda_emu.h); the tables hang off it.
    cubin.assign(40, '\0');
  }

  // struct tfc_cuda_module { name, ptx, cubin, cubin_size, arch, state }.
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  Location loc = binary.getLoc();
  auto type =
      LLVM::LLVMStructType::getLiteral(ctx, {ptr, ptr, ptr, i64, ptr, ptr});
  moduleGlobal = "__tfc_cuda_module";
  auto global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/false,
                                       LLVM::Linkage::Internal, moduleGlobal,
                                       Attribute());
  b.setInsertionPointToStart(b.createBlock(&global.getInitializerRegion()));
  auto address = [&](StringRef name) -> Value {
    return LLVM::AddressOfOp::create(b, loc, ptr, name);
  };
  Value null = LLVM::ZeroOp::create(b, loc, ptr);
  Value fields[] = {
      address(nameGlobal),
      address(ptxGlobal),
      cubinGlobal ? address(*cubinGlobal) : null,
      LLVM::ConstantOp::create(b, loc, i64, int64_t(cubin.size())),
      address(archGlobal),
      null};
  Value value = LLVM::UndefOp::create(b, loc, type);
  for (auto [i, field] : llvm::enumerate(fields))
    value = LLVM::InsertValueOp::create(b, loc, value, field,
                                        ArrayRef<int64_t>{int64_t(i)});
  LLVM::ReturnOp::create(b, loc, value);
  binary.erase();
  return success();
}

void LaunchLowering::lowerDeviceRead(memref::LoadOp load, Value stream,
                                     Value statusSlot, OpBuilder &entry) {
  Location loc = load.getLoc();
  Type elementType = load.getType();
  unsigned bytes = elementType.getIntOrFloatBitWidth() / 8;
  Value one = LLVM::ConstantOp::create(entry, loc, i64, 1);
  Value slot = LLVM::AllocaOp::create(entry, loc, ptr, elementType, one);

  OpBuilder b(load);
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, i64, index);
  };
  // Element offset + sum of index * stride, in bytes from the aligned pointer.
  auto metadata =
      memref::ExtractStridedMetadataOp::create(b, loc, load.getMemRef());
  Value element = toI64(metadata.getOffset());
  for (auto [index, stride] :
       llvm::zip(load.getIndices(), metadata.getStrides()))
    element = arith::AddIOp::create(
        b, loc, element,
        arith::MulIOp::create(b, loc, toI64(index), toI64(stride)));
  Value base = LLVM::IntToPtrOp::create(
      b, loc, ptr,
      toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc,
                                                           load.getMemRef())));
  Value address =
      LLVM::GEPOp::create(b, loc, ptr, elementType, base, ValueRange{element});
  LLVM::StoreOp::create(b, loc, LLVM::ZeroOp::create(b, loc, elementType),
                        slot);
  auto ifOk = scf::IfOp::create(b, loc, nothingFailed(b, loc, statusSlot),
                                /*withElseRegion=*/false);
  b.setInsertionPoint(ifOk.thenBlock()->getTerminator());
  auto call = func::CallOp::create(
      b, loc, declareRead(),
      ValueRange{stream, slot, address,
                 LLVM::ConstantOp::create(b, loc, i64, int64_t(bytes))});
  LLVM::StoreOp::create(b, loc, call.getResult(0), statusSlot);
  b.setInsertionPointAfter(ifOk);
  load.replaceAllUsesWith(
      LLVM::LoadOp::create(b, loc, elementType, slot).getResult());
  load.erase();
}

SmallVector<Value> LaunchLowering::flattenOperands(OpBuilder &b,
                                                   gpu::LaunchFuncOp launch) {
  Location loc = launch.getLoc();
  auto toI64 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, loc, i64, index);
  };
  SmallVector<Value> flat;
  for (Value operand : launch.getKernelOperands()) {
    Type type = operand.getType();
    if (type.isIndex()) {
      flat.push_back(toI64(operand));
    } else if (isa<MemRefType>(type)) {
      auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, operand);
      Value aligned = LLVM::IntToPtrOp::create(
          b, loc, ptr,
          toI64(
              memref::ExtractAlignedPointerAsIndexOp::create(b, loc, operand)));
      // Kernels never free, so the allocated pointer is the aligned one.
      flat.append({aligned, aligned, toI64(metadata.getOffset())});
      for (Value size : metadata.getSizes())
        flat.push_back(toI64(size));
      for (Value stride : metadata.getStrides())
        flat.push_back(toI64(stride));
    } else {
      flat.push_back(operand);
    }
  }
  return flat;
}

LogicalResult LaunchLowering::lowerLaunches(func::FuncOp func) {
  SmallVector<gpu::LaunchFuncOp> launches;
  func.walk([&](gpu::LaunchFuncOp launch) { launches.push_back(launch); });
  if (launches.empty())
    return success();
  // What the host still loads is device memory (tfc-parallel-loops-to-gpu
  // moved every other access into kernels).
  SmallVector<memref::LoadOp> deviceReads;
  func.walk([&](memref::LoadOp load) { deviceReads.push_back(load); });
  if (moduleGlobal.empty())
    return launches.front().emitOpError("launches a kernel that is not "
                                        "serialized (run gpu-module-to-binary "
                                        "first)");
  if (func.getNumArguments() == 0 ||
      !isa<LLVM::LLVMPointerType>(func.getArgument(0).getType()))
    return func.emitOpError("launches kernels but its first argument is not "
                            "the stream (!llvm.ptr)");
  Value stream = func.getArgument(0);
  func::FuncOp launchFn = declareLaunch();

  // Allocas live in the entry block: launches inside the depth loop must not
  // grow the stack at every layer.
  Location loc = func.getLoc();
  OpBuilder entry = OpBuilder::atBlockBegin(&func.front());
  Value one = LLVM::ConstantOp::create(entry, loc, i64, 1);
  Value statusSlot = LLVM::AllocaOp::create(entry, loc, ptr, i32, one);
  LLVM::StoreOp::create(
      entry, loc, LLVM::ConstantOp::create(entry, loc, i32, int64_t(TFC_OK)),
      statusSlot);

  for (memref::LoadOp load : deviceReads)
    lowerDeviceRead(load, stream, statusSlot, entry);

  for (gpu::LaunchFuncOp launch : launches) {
    if (launch.getAsyncToken() || !launch.getAsyncDependencies().empty() ||
        launch.hasClusterSize())
      return launch.emitOpError("async tokens and clusters are not supported "
                                "by the tfc runtime's launch");
    OpBuilder b(launch);
    Location at = launch.getLoc();
    SmallVector<Value> args = flattenOperands(b, launch);
    SmallVector<Type> argTypes;
    for (Value arg : args)
      argTypes.push_back(arg.getType());
    auto argsType = LLVM::LLVMStructType::getLiteral(ctx, argTypes);
    auto pointersType = LLVM::LLVMArrayType::get(ptr, args.size());
    Value argStruct = LLVM::AllocaOp::create(entry, loc, ptr, argsType, one);
    Value pointers = LLVM::AllocaOp::create(entry, loc, ptr, pointersType, one);
    for (auto [i, arg] : llvm::enumerate(args)) {
      Value field = LLVM::GEPOp::create(b, at, ptr, argsType, argStruct,
                                        ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
      LLVM::StoreOp::create(b, at, arg, field);
      Value slot = LLVM::GEPOp::create(b, at, ptr, pointersType, pointers,
                                       ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
      LLVM::StoreOp::create(b, at, field, slot);
    }

    StringRef kernel = launch.getKernelName().getValue();
    std::string &nameGlobal = kernelNames[kernel];
    if (nameGlobal.empty())
      nameGlobal =
          stringGlobal(("__tfc_cuda_kernel" + Twine(nextKernel++)).str(),
                       kernel)
              .str();
    auto toI64 = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, at, i64, index);
    };
    auto toI32 = [&](Value index) -> Value {
      return arith::IndexCastOp::create(b, at, i32, index);
    };
    gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
    gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
    Value shared = launch.getDynamicSharedMemorySize();
    Value sharedBytes =
        shared ? Value(arith::IndexCastOp::create(b, at, i32, shared))
               : Value(arith::ConstantIntOp::create(b, at, 0, 32));
    auto ifOk = scf::IfOp::create(b, at, nothingFailed(b, at, statusSlot),
                                  /*withElseRegion=*/false);
    b.setInsertionPoint(ifOk.thenBlock()->getTerminator());
    Value moduleAddress = LLVM::AddressOfOp::create(b, at, ptr, moduleGlobal);
    Value kernelAddress = LLVM::AddressOfOp::create(b, at, ptr, nameGlobal);
    auto call = func::CallOp::create(
        b, at, launchFn,
        ValueRange{moduleAddress, kernelAddress, toI64(grid.x), toI64(grid.y),
                   toI64(grid.z), toI32(block.x), toI32(block.y),
                   toI32(block.z), sharedBytes, stream, pointers});
    LLVM::StoreOp::create(b, at, call.getResult(0), statusSlot);
    launch.erase();
  }

  // A host error message after a failed launch or read (e.g. "bad token"
  // from a value that was never read) must not replace the driver's message:
  // the return below reports the driver's status anyway.
  SmallVector<LLVM::CallOp> messages;
  func.walk([&](LLVM::CallOp call) {
    if (call.getCallee() == abi::runtime::tfc_rt_error.name &&
        call.getNumResults() == 1)
      messages.push_back(call);
  });
  for (LLVM::CallOp call : messages) {
    OpBuilder b(call);
    Location at = call.getLoc();
    auto ifOk = scf::IfOp::create(b, at, TypeRange{call.getResult().getType()},
                                  nothingFailed(b, at, statusSlot),
                                  /*withElseRegion=*/true);
    b.setInsertionPointToStart(&ifOk.getElseRegion().front());
    scf::YieldOp::create(b, at, call.getOperand(0));
    call.getResult().replaceAllUsesWith(ifOk.getResult(0));
    b.setInsertionPointToStart(&ifOk.getThenRegion().front());
    call->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    b.setInsertionPointAfter(call);
    scf::YieldOp::create(b, at, call.getResult());
  }

  // Every return reports the first failed launch, if any.
  WalkResult bad = func.walk([&](func::ReturnOp ret) {
    if (ret.getNumOperands() != 1 || ret.getOperand(0).getType() != i32) {
      ret.emitOpError("of a function that launches kernels must return one "
                      "i32 status");
      return WalkResult::interrupt();
    }
    OpBuilder b(ret);
    Value status = LLVM::LoadOp::create(b, ret.getLoc(), i32, statusSlot);
    Value failedLaunch =
        arith::CmpIOp::create(b, ret.getLoc(), arith::CmpIPredicate::ne, status,
                              abi::statusConstant(b, ret.getLoc(), TFC_OK));
    ret.setOperand(0, arith::SelectOp::create(b, ret.getLoc(), failedLaunch,
                                              status, ret.getOperand(0)));
    return WalkResult::advance();
  });
  return failure(bad.wasInterrupted());
}

struct GpuLaunchesToRuntimePass
    : public tfc::impl::TfcGpuLaunchesToRuntimeBase<GpuLaunchesToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    LaunchLowering lowering(module);
    SmallVector<gpu::BinaryOp> binaries(module.getOps<gpu::BinaryOp>());
    if (binaries.size() > 1) {
      binaries[1].emitOpError("is a second device image; every launch names "
                              "@kernels (tfc-parallel-loops-to-gpu)");
      return signalPassFailure();
    }
    if (!binaries.empty() &&
        failed(lowering.emitModule(binaries.front(), ptxas, arch, emulate)))
      return signalPassFailure();
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (failed(lowering.lowerLaunches(func)))
        return signalPassFailure();
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  }
};

} // namespace
