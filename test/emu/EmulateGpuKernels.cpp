//===- EmulateGpuKernels.cpp - NVVM kernels for the CPU emulator ----------===//
//
// TESTS ONLY (tfc-emu, tfc-emulate-gpu-kernels): the kernels, lowered to the
// LLVM and NVVM dialects exactly as for PTX, become host functions that the
// emulated CUDA driver (test/emu/cuda_emu.c, libtfc_cuda_emu.so) runs on the
// CPU, one coroutine per GPU thread. Everything the host cannot execute is a
// call of the emulator ABI (test/emu/tfc_cuda_emu.h), reached through an
// import table in the image that the emulator fills at cuModuleLoadData: the
// generated object has no link-time dependency on the emulator, so the test
// programs link exactly as for a GPU. What the emulator cannot do is an error
// here, never a silently different kernel.
//
//===----------------------------------------------------------------------===//

#include "emu/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCEMULATEGPUKERNELS
#include "emu/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;

namespace {

constexpr StringLiteral kImage = "__tfc_emu_image";
constexpr StringLiteral kImports = "__tfc_emu_imports";
constexpr StringLiteral kKernels = "__tfc_emu_kernels";
constexpr StringLiteral kMagic = "TFCEMU1"; // + NUL: 8 bytes
constexpr int64_t kVersion = 1;
/// Dynamic shared memory starts this aligned after the static variables.
constexpr int64_t kDynamicSharedAlign = 16;

/// Shuffle modes of the ABI (tfc_cuda_emu.h: TFC_EMU_SHFL_*).
int32_t shflMode(NVVM::ShflKind kind) {
  switch (kind) {
  case NVVM::ShflKind::up:
    return 0;
  case NVVM::ShflKind::down:
    return 1;
  case NVVM::ShflKind::bfly:
    return 2;
  case NVVM::ShflKind::idx:
    return 3;
  }
  llvm_unreachable("shuffle kind");
}

class KernelEmulation {
public:
  KernelEmulation(ModuleOp module)
      : module(module), ctx(module.getContext()),
        ptr(LLVM::LLVMPointerType::get(ctx)), i8(IntegerType::get(ctx, 8)),
        i32(IntegerType::get(ctx, 32)), i64(IntegerType::get(ctx, 64)),
        importEntry(LLVM::LLVMStructType::getLiteral(ctx, {ptr, ptr})) {}

  LogicalResult run(gpu::GPUModuleOp kernels);

private:
  /// Moves the gpu.module's symbols into the host module (renamed, internal)
  /// and returns the moved functions.
  FailureOr<SmallVector<LLVM::LLVMFuncOp>> moveIntoHost(gpu::GPUModuleOp gm);
  /// Lays out the address space 3 globals in the block's shared memory.
  LogicalResult layOutShared(ArrayRef<LLVM::GlobalOp> shared);
  /// Rewrites one op of a kernel; failure after an error naming it.
  LogicalResult rewrite(Operation *op);
  LogicalResult rewriteNvvm(Operation *op);
  LogicalResult rewriteIntrinsic(LLVM::CallIntrinsicOp op);
  /// `imports[name].fn(args)`: a call of the emulator ABI.
  Value callImport(OpBuilder &b, Location loc, StringRef name, Type result,
                   ValueRange args);
  /// An alloca of `type` in the entry block of the function around `at`.
  Value entryAlloca(Operation *at, Type type);
  Value intConstant(OpBuilder &b, Location loc, Type type, int64_t value);
  StringRef stringGlobal(StringRef name, StringRef value);
  LLVM::LLVMFuncOp emitWrapper(LLVM::LLVMFuncOp kernel, StringRef name);
  void emitImage(ArrayRef<std::pair<std::string, LLVM::LLVMFuncOp>> wrappers);

  ModuleOp module;
  MLIRContext *ctx;
  Type ptr, i8, i32, i64;
  LLVM::LLVMStructType importEntry;
  llvm::StringMap<unsigned> importIndex;
  SmallVector<std::string> importNames;
  llvm::StringMap<int64_t> sharedOffset; // global -> offset (-1: dynamic)
  int64_t staticShared = 0;
  unsigned nextString = 0;
};

Value KernelEmulation::intConstant(OpBuilder &b, Location loc, Type type,
                                   int64_t value) {
  if (auto vector = dyn_cast<VectorType>(type))
    return LLVM::ConstantOp::create(
        b, loc, type,
        DenseElementsAttr::get(
            vector, IntegerAttr::get(vector.getElementType(), value)));
  return LLVM::ConstantOp::create(b, loc, type, IntegerAttr::get(type, value));
}

StringRef KernelEmulation::stringGlobal(StringRef name, StringRef value) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  std::string text = value.str();
  text.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(i8, text.size());
  return LLVM::GlobalOp::create(b, module.getLoc(), type, /*isConstant=*/true,
                                LLVM::Linkage::Internal, name,
                                b.getStringAttr(text))
      .getSymName();
}

Value KernelEmulation::callImport(OpBuilder &b, Location loc, StringRef name,
                                  Type result, ValueRange args) {
  auto [it, inserted] = importIndex.try_emplace(name, importNames.size());
  if (inserted)
    importNames.push_back(name.str());
  Value table = LLVM::AddressOfOp::create(b, loc, ptr, kImports);
  Value slot =
      LLVM::GEPOp::create(b, loc, ptr, importEntry, table,
                          ArrayRef<LLVM::GEPArg>{int32_t(it->second), 1});
  Value fn = LLVM::LoadOp::create(b, loc, ptr, slot);
  SmallVector<Type> argTypes(args.getTypes());
  auto type = LLVM::LLVMFunctionType::get(
      result ? result : LLVM::LLVMVoidType::get(ctx), argTypes);
  SmallVector<Value> operands = {fn};
  operands.append(args.begin(), args.end());
  auto call = LLVM::CallOp::create(b, loc, type, operands);
  return result ? call.getResult() : Value();
}

Value KernelEmulation::entryAlloca(Operation *at, Type type) {
  auto func = at->getParentOfType<LLVM::LLVMFuncOp>();
  OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
  Value one = LLVM::ConstantOp::create(b, at->getLoc(), i64, 1);
  return LLVM::AllocaOp::create(b, at->getLoc(), ptr, type, one);
}

FailureOr<SmallVector<LLVM::LLVMFuncOp>>
KernelEmulation::moveIntoHost(gpu::GPUModuleOp gm) {
  SymbolTable hostSymbols(module);
  // The new names first, then one walk of the module that rewrites every
  // reference (a walk per renamed symbol was quadratic: a fifth of tfc-emu's
  // time on a two-layer spec).
  DenseMap<Attribute, Attribute> renamed; // FlatSymbolRefAttr -> new one.
  SmallVector<Operation *> toMove, duplicates;
  SmallVector<std::pair<Operation *, StringAttr>> toRename;
  for (Operation &op : gm.getBody()->without_terminator()) {
    auto symbol = dyn_cast<SymbolOpInterface>(&op);
    if (!symbol)
      return op.emitOpError("in a gpu.module cannot be emulated");
    StringRef name = symbol.getName();
    auto func = dyn_cast<LLVM::LLVMFuncOp>(&op);
    std::string newName;
    bool duplicate = false;
    if (func && func.isExternal()) {
      // libdevice's math (__nv_sin) is libm's on the host.
      newName =
          name.starts_with("__nv_") ? name.drop_front(5).str() : name.str();
      if (Operation *existing = hostSymbols.lookup(newName)) {
        auto hostFunc = dyn_cast<LLVM::LLVMFuncOp>(existing);
        if (!hostFunc || hostFunc.getFunctionType() != func.getFunctionType())
          return op.emitOpError("declares @")
                 << newName << ", which the host module defines differently";
        duplicate = true;
      }
    } else {
      newName = ("__tfc_emu_" + gm.getName() + "_" + name).str();
      if (hostSymbols.lookup(newName))
        return op.emitOpError("cannot be renamed @")
               << newName << ": the name is taken";
    }
    auto newAttr = StringAttr::get(ctx, newName);
    if (newName != name) {
      renamed[FlatSymbolRefAttr::get(ctx, name)] =
          FlatSymbolRefAttr::get(newAttr);
      if (!duplicate)
        toRename.emplace_back(&op, newAttr);
    }
    (duplicate ? duplicates : toMove).push_back(&op);
  }
  if (!renamed.empty()) {
    AttrTypeReplacer replacer;
    replacer.addReplacement(
        [&](FlatSymbolRefAttr ref) -> std::optional<Attribute> {
          if (Attribute to = renamed.lookup(ref))
            return to;
          return std::nullopt;
        });
    replacer.recursivelyReplaceElementsIn(gm, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/false);
  }
  for (auto [op, name] : toRename)
    SymbolTable::setSymbolName(op, name);
  for (Operation *op : duplicates)
    op->erase();
  SmallVector<LLVM::LLVMFuncOp> moved;
  for (Operation *op : toMove) {
    op->remove();
    module.getBody()->push_back(op);
    if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op)) {
      if (!func.isExternal())
        func.setLinkage(LLVM::Linkage::Internal);
      moved.push_back(func);
    } else if (auto global = dyn_cast<LLVM::GlobalOp>(op)) {
      global.setLinkage(LLVM::Linkage::Internal);
    }
  }
  return moved;
}

LogicalResult KernelEmulation::layOutShared(ArrayRef<LLVM::GlobalOp> shared) {
  DataLayout layout(module);
  SmallVector<LLVM::GlobalOp> dynamic;
  for (LLVM::GlobalOp global : shared) {
    Type type = global.getGlobalType();
    uint64_t size = layout.getTypeSize(type).getFixedValue();
    uint64_t align = std::max<uint64_t>(global.getAlignment().value_or(0),
                                        layout.getTypeABIAlignment(type));
    // gpu.dynamic_shared_memory is an external zero-sized array.
    if (size == 0) {
      dynamic.push_back(global);
      continue;
    }
    staticShared = llvm::alignTo(staticShared, align);
    sharedOffset[global.getSymName()] = staticShared;
    staticShared += size;
  }
  int64_t dynamicStart = llvm::alignTo(staticShared, kDynamicSharedAlign);
  for (LLVM::GlobalOp global : dynamic)
    sharedOffset[global.getSymName()] = dynamicStart;
  return success();
}

LogicalResult KernelEmulation::rewriteIntrinsic(LLVM::CallIntrinsicOp op) {
  StringRef name = op.getIntrin();
  if (!name.starts_with("llvm.nvvm."))
    return success();
  StringRef what = name.drop_front(strlen("llvm.nvvm."));
  OpBuilder b(op);
  Location loc = op.getLoc();
  ValueRange args = op.getArgs();
  Value result;
  if (what == "sqrt.rn.f" || what == "sqrt.rn.d" || what == "sqrt.f")
    result = LLVM::SqrtOp::create(b, loc, args[0]);
  else if (what == "fma.rn.f" || what == "fma.rn.d")
    result = LLVM::FMAOp::create(b, loc, args[0], args[1], args[2]);
  else if (what == "fabs.f" || what == "fabs.d")
    result = LLVM::FAbsOp::create(b, loc, args[0]);
  else if (what == "div.rn.f" || what == "div.rn.d")
    result = LLVM::FDivOp::create(b, loc, args[0], args[1]);
  else if (what == "rcp.rn.f" || what == "rcp.rn.d") {
    Type type = args[0].getType();
    Value one = LLVM::ConstantOp::create(b, loc, type, b.getFloatAttr(type, 1));
    result = LLVM::FDivOp::create(b, loc, one, args[0]);
  } else if (what == "fmin.f" || what == "fmin.d")
    result = LLVM::MinNumOp::create(b, loc, args[0], args[1]);
  else if (what == "fmax.f" || what == "fmax.d")
    result = LLVM::MaxNumOp::create(b, loc, args[0], args[1]);
  else
    return op.emitOpError("calls ")
           << name << ", which the CUDA emulator cannot emulate";
  op->getResult(0).replaceAllUsesWith(result);
  op.erase();
  return success();
}

LogicalResult KernelEmulation::rewriteNvvm(Operation *op) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  StringRef name = op->getName().getStringRef();
  auto replace = [&](Value value) {
    op->getResult(0).replaceAllUsesWith(value);
    op->erase();
    return success();
  };

  // Special registers: tid, ntid, ctaid, nctaid (.x/.y/.z) and laneid.
  if (name.consume_front("nvvm.read.ptx.sreg.")) {
    if (name == "warpsize")
      return replace(intConstant(b, loc, i32, 32));
    static const char *const known[] = {
        "tid.x",    "tid.y",    "tid.z",   "ntid.x",  "ntid.y",
        "ntid.z",   "ctaid.x",  "ctaid.y", "ctaid.z", "nctaid.x",
        "nctaid.y", "nctaid.z", "laneid"};
    if (llvm::is_contained(known, name)) {
      std::string fn = ("__tfc_emu_" + name).str();
      std::replace(fn.begin(), fn.end(), '.', '_');
      return replace(callImport(b, loc, fn, i32, {}));
    }
  } else if (isa<NVVM::Barrier0Op>(op) ||
             (isa<NVVM::BarrierOp>(op) && op->getNumOperands() == 0 &&
              op->getNumResults() == 0)) {
    callImport(b, loc, "__tfc_emu_barrier", Type(), {});
    op->erase();
    return success();
  } else if (auto shfl = dyn_cast<NVVM::ShflOp>(op)) {
    // (valid << 32) | bits = __tfc_emu_shfl(mode, member mask, bits, b, c).
    Value value = shfl.getVal();
    Type valueType = value.getType();
    if (valueType != i32)
      value = LLVM::BitcastOp::create(b, loc, i32, value);
    Value packed =
        callImport(b, loc, "__tfc_emu_shfl", i64,
                   {intConstant(b, loc, i32, shflMode(shfl.getKind())),
                    shfl.getThreadMask(), value, shfl.getOffset(),
                    shfl.getMaskAndClamp()});
    Value bits = LLVM::TruncOp::create(b, loc, i32, packed);
    Value result = bits;
    if (valueType != i32)
      result = LLVM::BitcastOp::create(b, loc, valueType, bits);
    if (!shfl.getReturnValueAndIsValid())
      return replace(result);
    Value valid = LLVM::TruncOp::create(
        b, loc, b.getI1Type(),
        LLVM::LShrOp::create(b, loc, packed, intConstant(b, loc, i64, 32)));
    Type structType = shfl.getType();
    Value pair = LLVM::UndefOp::create(b, loc, structType);
    pair =
        LLVM::InsertValueOp::create(b, loc, pair, result, ArrayRef<int64_t>{0});
    pair =
        LLVM::InsertValueOp::create(b, loc, pair, valid, ArrayRef<int64_t>{1});
    return replace(pair);
  } else if (auto mma = dyn_cast<NVVM::MmaOp>(op)) {
    // m16n8k16 / m16n8k8, bf16 x bf16 + f32 -> f32, A row-major, B col-major.
    NVVM::MMAShapeAttr shape = mma.getShape();
    auto aType = mma.getMultiplicandAPtxType();
    auto bType = mma.getMultiplicandBPtxType();
    int64_t k = shape.getK();
    size_t aRegs = k == 16 ? 4 : 2, bRegs = k == 16 ? 2 : 1;
    Type f32 = Float32Type::get(ctx);
    auto resultType = dyn_cast<LLVM::LLVMStructType>(mma.getType());
    bool supported =
        shape.getM() == 16 && shape.getN() == 8 && (k == 16 || k == 8) &&
        aType == NVVM::MMATypes::bf16 && bType == NVVM::MMATypes::bf16 &&
        mma.getLayoutA() == NVVM::MMALayout::row &&
        mma.getLayoutB() == NVVM::MMALayout::col &&
        mma.getOperandA().size() == aRegs &&
        mma.getOperandB().size() == bRegs && mma.getOperandC().size() == 4 &&
        llvm::all_of(mma.getOperandC(),
                     [&](Value v) { return v.getType() == f32; }) &&
        resultType && resultType.getBody().size() == 4;
    if (supported) {
      auto fragment = [&](ValueRange values, Type element) {
        Value slot =
            entryAlloca(op, LLVM::LLVMArrayType::get(element, values.size()));
        for (auto [i, v] : llvm::enumerate(values)) {
          Value bits = v.getType() == element
                           ? v
                           : LLVM::BitcastOp::create(b, loc, element, v);
          Value at = LLVM::GEPOp::create(b, loc, ptr, element, slot,
                                         ArrayRef<LLVM::GEPArg>{int32_t(i)});
          LLVM::StoreOp::create(b, loc, bits, at);
        }
        return slot;
      };
      Value a = fragment(mma.getOperandA(), i32);
      Value bFrag = fragment(mma.getOperandB(), i32);
      Value c = fragment(mma.getOperandC(), f32);
      Value d = entryAlloca(op, LLVM::LLVMArrayType::get(f32, 4));
      callImport(b, loc, "__tfc_emu_mma_bf16_f32", Type(),
                 {intConstant(b, loc, i32, k), a, bFrag, c, d});
      Value result = LLVM::UndefOp::create(b, loc, resultType);
      for (int64_t i = 0; i < 4; ++i) {
        Value at = LLVM::GEPOp::create(b, loc, ptr, f32, d,
                                       ArrayRef<LLVM::GEPArg>{int32_t(i)});
        result = LLVM::InsertValueOp::create(
            b, loc, result, LLVM::LoadOp::create(b, loc, f32, at),
            ArrayRef<int64_t>{i});
      }
      return replace(result);
    }
  } else if (auto ld = dyn_cast<NVVM::LdMatrixOp>(op)) {
    // m8n8 .b16, x1/x2/x4, .trans for a column-major layout.
    int32_t num = ld.getNum();
    if (ld.getShape().getM() == 8 && ld.getShape().getN() == 8 &&
        ld.getEltType() == NVVM::LdStMatrixEltType::B16 &&
        (num == 1 || num == 2 || num == 4)) {
      Value out = entryAlloca(op, LLVM::LLVMArrayType::get(i32, num));
      bool trans = ld.getLayout() == NVVM::MMALayout::col;
      callImport(b, loc, "__tfc_emu_ldmatrix", Type(),
                 {intConstant(b, loc, i32, num),
                  intConstant(b, loc, i32, trans), ld.getPtr(), out});
      auto load = [&](int32_t i) -> Value {
        Value at = LLVM::GEPOp::create(b, loc, ptr, i32, out,
                                       ArrayRef<LLVM::GEPArg>{i});
        return LLVM::LoadOp::create(b, loc, i32, at);
      };
      if (num == 1)
        return replace(load(0));
      Value result = LLVM::UndefOp::create(b, loc, ld.getType());
      for (int32_t i = 0; i < num; ++i)
        result = LLVM::InsertValueOp::create(b, loc, result, load(i),
                                             ArrayRef<int64_t>{i});
      return replace(result);
    }
  }
  return op->emitOpError("cannot be emulated by the CUDA emulator");
}

/// The element type of a scalar or vector type.
Type elementOf(Type type) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.getElementType();
  return type;
}

/// `type` with its element type replaced by `element`.
Type withElement(Type type, Type element) {
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.clone(element);
  return element;
}

LogicalResult KernelEmulation::rewrite(Operation *op) {
  if (op->getDialect() && isa<NVVM::NVVMDialect>(op->getDialect()))
    return rewriteNvvm(op);
  if (auto intrinsic = dyn_cast<LLVM::CallIntrinsicOp>(op))
    return rewriteIntrinsic(intrinsic);
  if (isa<LLVM::InlineAsmOp>(op))
    return op->emitOpError("(inline PTX) cannot be emulated by the CUDA "
                           "emulator");
  // f32 -> bf16, rounding to nearest even; NaN stays a (quiet) NaN. x86
  // would call libgcc's __truncsfbf2, which older libgcc lacks.
  if (auto trunc = dyn_cast<LLVM::FPTruncOp>(op)) {
    Type type = trunc.getType();
    if (!elementOf(type).isBF16())
      return success();
    Value x = trunc.getArg();
    if (!elementOf(x.getType()).isF32())
      return op->emitOpError("truncates to bf16 from a type other than f32, "
                             "which the CUDA emulator does not expand");
    OpBuilder b(op);
    Location loc = op->getLoc();
    Type wide = withElement(type, i32);
    Value bits = LLVM::BitcastOp::create(b, loc, wide, x);
    Value lsb = LLVM::AndOp::create(
        b, loc,
        LLVM::LShrOp::create(b, loc, bits, intConstant(b, loc, wide, 16)),
        intConstant(b, loc, wide, 1));
    Value rounded = LLVM::AddOp::create(
        b, loc, bits,
        LLVM::AddOp::create(b, loc, lsb, intConstant(b, loc, wide, 0x7fff)));
    Value quiet =
        LLVM::OrOp::create(b, loc, bits, intConstant(b, loc, wide, 0x400000));
    Value isNan = LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::uno, x, x);
    Value chosen = LLVM::SelectOp::create(b, loc, isNan, quiet, rounded);
    Value high =
        LLVM::LShrOp::create(b, loc, chosen, intConstant(b, loc, wide, 16));
    Value narrow = LLVM::TruncOp::create(
        b, loc, withElement(type, IntegerType::get(ctx, 16)), high);
    op->getResult(0).replaceAllUsesWith(
        LLVM::BitcastOp::create(b, loc, type, narrow));
    op->erase();
    return success();
  }
  // bf16 -> f32 is exact: the bits, shifted up.
  if (auto ext = dyn_cast<LLVM::FPExtOp>(op)) {
    Value x = ext.getArg();
    Type type = ext.getType();
    if (!elementOf(x.getType()).isBF16() || !elementOf(type).isF32())
      return success();
    OpBuilder b(op);
    Location loc = op->getLoc();
    Type wide = withElement(type, i32);
    Value bits = LLVM::BitcastOp::create(
        b, loc, withElement(type, IntegerType::get(ctx, 16)), x);
    Value shifted =
        LLVM::ShlOp::create(b, loc, LLVM::ZExtOp::create(b, loc, wide, bits),
                            intConstant(b, loc, wide, 16));
    op->getResult(0).replaceAllUsesWith(
        LLVM::BitcastOp::create(b, loc, type, shifted));
    op->erase();
    return success();
  }
  return success();
}

LLVM::LLVMFuncOp KernelEmulation::emitWrapper(LLVM::LLVMFuncOp kernel,
                                              StringRef name) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = kernel.getLoc();
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr});
  auto wrapper =
      LLVM::LLVMFuncOp::create(b, loc, name, type, LLVM::Linkage::Internal);
  b.setInsertionPointToStart(wrapper.addEntryBlock(b));
  Value params = wrapper.getArgument(0);
  SmallVector<Value> args;
  for (auto [i, argType] :
       llvm::enumerate(kernel.getFunctionType().getParams())) {
    Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, params,
                                     ArrayRef<LLVM::GEPArg>{int32_t(i)});
    Value argPtr = LLVM::LoadOp::create(b, loc, ptr, slot);
    args.push_back(LLVM::LoadOp::create(b, loc, argType, argPtr));
  }
  LLVM::CallOp::create(b, loc, kernel, args);
  LLVM::ReturnOp::create(b, loc, ValueRange{});
  return wrapper;
}

void KernelEmulation::emitImage(
    ArrayRef<std::pair<std::string, LLVM::LLVMFuncOp>> wrappers) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  auto address = [&](StringRef name) -> Value {
    return LLVM::AddressOfOp::create(b, loc, ptr, name);
  };
  auto fill = [&](LLVM::GlobalOp global, auto &&body) {
    b.setInsertionPointToStart(b.createBlock(&global.getInitializerRegion()));
    LLVM::ReturnOp::create(b, loc, body());
    b.setInsertionPointAfter(global);
  };
  // struct { const char *name; void *fn; } imports[], filled at load time.
  SmallVector<std::string> importStrings;
  for (StringRef name : importNames)
    importStrings.push_back(
        stringGlobal(("__tfc_emu_str" + Twine(nextString++)).str(), name)
            .str());
  SmallVector<std::string> kernelStrings;
  for (auto &[name, wrapper] : wrappers)
    kernelStrings.push_back(
        stringGlobal(("__tfc_emu_str" + Twine(nextString++)).str(), name)
            .str());
  b.setInsertionPointToEnd(module.getBody());

  auto table = [&](StringRef name, ArrayRef<std::string> strings, auto &&second,
                   bool constant) {
    auto type = LLVM::LLVMArrayType::get(importEntry, strings.size());
    auto global = LLVM::GlobalOp::create(
        b, loc, type, constant, LLVM::Linkage::Internal, name, Attribute());
    fill(global, [&]() -> Value {
      Value value = LLVM::UndefOp::create(b, loc, type);
      for (auto [i, s] : llvm::enumerate(strings)) {
        value = LLVM::InsertValueOp::create(b, loc, value, address(s),
                                            ArrayRef<int64_t>{int64_t(i), 0});
        value = LLVM::InsertValueOp::create(b, loc, value, second(i),
                                            ArrayRef<int64_t>{int64_t(i), 1});
      }
      return value;
    });
  };
  table(
      kImports, importStrings,
      [&](size_t) -> Value { return LLVM::ZeroOp::create(b, loc, ptr); },
      /*constant=*/false);
  table(
      kKernels, kernelStrings,
      [&](size_t i) -> Value {
        return address(LLVM::LLVMFuncOp(wrappers[i].second).getSymName());
      },
      /*constant=*/true);

  // struct tfc_emu_image { char magic[8]; u32 version, num_kernels,
  //   num_imports, static_shared_bytes; kernels *; imports *; }.
  auto magicType = LLVM::LLVMArrayType::get(i8, 8);
  auto type = LLVM::LLVMStructType::getLiteral(
      ctx, {magicType, i32, i32, i32, i32, ptr, ptr});
  auto image =
      LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/false,
                             LLVM::Linkage::Internal, kImage, Attribute());
  fill(image, [&]() -> Value {
    std::string magic = kMagic.str();
    magic.push_back('\0');
    Value value = LLVM::UndefOp::create(b, loc, type);
    Value magicValue =
        LLVM::ConstantOp::create(b, loc, magicType, b.getStringAttr(magic));
    Value fields[] = {magicValue,
                      intConstant(b, loc, i32, kVersion),
                      intConstant(b, loc, i32, wrappers.size()),
                      intConstant(b, loc, i32, importNames.size()),
                      intConstant(b, loc, i32, staticShared),
                      address(kKernels),
                      address(kImports)};
    for (auto [i, field] : llvm::enumerate(fields))
      value = LLVM::InsertValueOp::create(b, loc, value, field,
                                          ArrayRef<int64_t>{int64_t(i)});
    return value;
  });
}

LogicalResult KernelEmulation::run(gpu::GPUModuleOp gm) {
  std::string moduleName = gm.getName().str();
  Attribute target = NVVM::NVVMTargetAttr::get(ctx);
  if (ArrayAttr targets = gm.getTargetsAttr(); targets && !targets.empty())
    target = targets[0];
  SmallVector<std::string> kernelNames;
  for (auto func : gm.getOps<LLVM::LLVMFuncOp>())
    if (func->hasAttr(gpu::GPUDialect::getKernelFuncAttrName()) ||
        func->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
      kernelNames.push_back(func.getName().str());

  FailureOr<SmallVector<LLVM::LLVMFuncOp>> funcs = moveIntoHost(gm);
  if (failed(funcs))
    return failure();

  // Shared memory: offsets from the block's base, which the emulator gives.
  SmallVector<LLVM::GlobalOp> shared;
  std::string prefix = "__tfc_emu_" + moduleName + "_";
  for (auto global : module.getOps<LLVM::GlobalOp>())
    if (global.getSymName().starts_with(prefix) && global.getAddrSpace() == 3)
      shared.push_back(global);
  if (failed(layOutShared(shared)))
    return failure();
  for (LLVM::LLVMFuncOp func : *funcs) {
    SmallVector<LLVM::AddressOfOp> uses;
    func.walk([&](LLVM::AddressOfOp op) {
      if (sharedOffset.count(op.getGlobalName()))
        uses.push_back(op);
    });
    for (LLVM::AddressOfOp op : uses) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value base = callImport(b, loc, "__tfc_emu_shared", ptr, {});
      Value at =
          LLVM::GEPOp::create(b, loc, ptr, i8, base,
                              ArrayRef<LLVM::GEPArg>{int32_t(
                                  sharedOffset.lookup(op.getGlobalName()))});
      // Address spaces are erased below; keep the types consistent.
      op.getResult().replaceAllUsesWith(
          LLVM::AddrSpaceCastOp::create(b, loc, op.getType(), at));
      op.erase();
    }
  }
  for (LLVM::GlobalOp global : shared)
    global.erase();

  // One address space on the host: every pointer is a plain !llvm.ptr.
  AttrTypeReplacer replacer;
  replacer.addReplacement(
      [&](LLVM::LLVMPointerType type) -> Type { return ptr; });
  for (LLVM::LLVMFuncOp func : *funcs) {
    replacer.recursivelyReplaceElementsIn(func, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/true);
    func.walk([](LLVM::AddrSpaceCastOp cast) {
      if (cast.getType() == cast.getArg().getType()) {
        cast.getResult().replaceAllUsesWith(cast.getArg());
        cast.erase();
      }
    });
  }
  for (auto global : module.getOps<LLVM::GlobalOp>())
    if (global.getSymName().starts_with(prefix)) {
      replacer.recursivelyReplaceElementsIn(global, true, false, true);
      global.setAddrSpace(0);
    }

  for (LLVM::LLVMFuncOp func : *funcs) {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : ops)
      if (failed(rewrite(op)))
        return failure();
    SmallVector<StringAttr> deviceAttrs;
    for (NamedAttribute attr : func->getDiscardableAttrs())
      if (attr.getName().strref().starts_with("nvvm.") ||
          attr.getName().strref().starts_with("gpu."))
        deviceAttrs.push_back(attr.getName());
    for (StringAttr attr : deviceAttrs)
      func->removeAttr(attr);
  }

  SmallVector<std::pair<std::string, LLVM::LLVMFuncOp>> wrappers;
  for (const std::string &kernel : kernelNames) {
    auto func = module.lookupSymbol<LLVM::LLVMFuncOp>(prefix + kernel);
    for (Type type : func.getFunctionType().getParams())
      if (!LLVM::isCompatibleType(type) || isa<LLVM::LLVMStructType>(type))
        return func.emitOpError("takes a parameter of type ")
               << type << ", which the emulator's wrapper cannot unpack";
    wrappers.push_back(
        {kernel,
         emitWrapper(func, "__tfc_emu_wrap_" + moduleName + "_" + kernel)});
  }
  emitImage(wrappers);

  // The launches keep naming @module::@kernel: a gpu.binary in its place
  // carries the image for tfc-gpu-launches-to-runtime.
  OpBuilder b(gm);
  auto properties = b.getDictionaryAttr(b.getNamedAttr(
      "tfc.emulator_image", FlatSymbolRefAttr::get(ctx, kImage)));
  auto object =
      gpu::ObjectAttr::get(ctx, target, gpu::CompilationTarget::Binary,
                           b.getStringAttr(""), properties, nullptr);
  gpu::BinaryOp::create(b, gm.getLoc(), moduleName, nullptr,
                        b.getArrayAttr({object}));
  gm.erase();
  return success();
}

struct EmulateGpuKernelsPass
    : public tfc::impl::TfcEmulateGpuKernelsBase<EmulateGpuKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> kernels(module.getOps<gpu::GPUModuleOp>());
    if (kernels.empty())
      return;
    if (kernels.size() > 1) {
      kernels[1].emitOpError("is a second device module; every launch "
                             "names @kernels (tfc-parallel-loops-to-gpu)");
      return signalPassFailure();
    }
    KernelEmulation emulation(module);
    if (failed(emulation.run(kernels.front())))
      signalPassFailure();
  }
};

} // namespace
