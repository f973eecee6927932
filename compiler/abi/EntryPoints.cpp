//===- EntryPoints.cpp - The C entry points' shell ------------------------===//

#include "abi/EntryPoints.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace mlir::tfc::abi {

namespace {

/// A NUL-terminated constant string (an internal global named `symbol`).
Value globalString(OpBuilder &b, Location loc, StringRef symbol,
                   StringRef text) {
  std::string value = text.str();
  value.push_back('\0');
  return LLVM::createGlobalString(loc, b, symbol, value,
                                  LLVM::Linkage::Internal);
}

/// `tfc_rt_error(status, format, args...)`: records the message, returns
/// status. `args` are i64 (printf's %lld).
Value callRtError(OpBuilder &b, Location loc, Value status, Value format,
                  ValueRange args) {
  SmallVector<Value> operands{status, format};
  operands.append(args.begin(), args.end());
  return callRuntimeFunction(b, loc, runtime::tfc_rt_error, operands)
      .getResult();
}

/// The largest value of a size argument: tfc.max_batch for batch,
/// tfc.max_seq for seq and enc_seq.
int64_t maxOfSize(func::FuncOp model, const EntryArgument &size) {
  return model
      ->getAttrOfType<IntegerAttr>(size.name == "batch" ? "tfc.max_batch"
                                                        : "tfc.max_seq")
      .getInt();
}

/// Whether `value` (i64) is outside [1, max of `size`].
Value sizeOutOfRange(OpBuilder &b, Location loc, func::FuncOp model,
                     const EntryArgument &size, Value value) {
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64);
  };
  Value low =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, value, c(1));
  Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, value,
                                     c(maxOfSize(model, size)));
  return arith::OrIOp::create(b, loc, low, high);
}

/// The LLVM-dialect type of an argument as the C ABI passes it.
Type argumentType(MLIRContext *ctx, const EntryArgument &arg) {
  switch (arg.kind) {
  case ArgumentKind::Context:
  case ArgumentKind::Array:
  case ArgumentKind::Workspace:
    return LLVM::LLVMPointerType::get(ctx);
  case ArgumentKind::WorkspaceBytes:
  case ArgumentKind::Size:
  case ArgumentKind::Seed:
    return IntegerType::get(ctx, 64);
  }
  llvm_unreachable("unknown argument kind");
}

} // namespace

void declareEntryRuntimeFunctions(ModuleOp module) {
  declareRuntimeFunction(module, runtime::tfc_rt_error);
  declareRuntimeFunction(module, runtime::tfc_rt_check_finite);
  declareRuntimeFunction(module, runtime::tfc_rt_profile_begin);
  declareRuntimeFunction(module, runtime::tfc_rt_profile_end);
}

Value memrefFromPointer(OpBuilder &b, Location loc, Value ptr, Type elementType,
                        Value numel) {
  MLIRContext *ctx = b.getContext();
  auto i64 = b.getI64Type();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto array = LLVM::LLVMArrayType::get(i64, 1);
  auto descType = LLVM::LLVMStructType::getLiteral(
      ctx, {ptrType, ptrType, i64, array, array});
  Value size = arith::IndexCastOp::create(b, loc, i64, numel);
  Value zero = LLVM::ConstantOp::create(b, loc, i64, 0);
  Value one = LLVM::ConstantOp::create(b, loc, i64, 1);
  Value desc = LLVM::PoisonOp::create(b, loc, descType);
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, ptr, ArrayRef<int64_t>{1});
  desc = LLVM::InsertValueOp::create(b, loc, desc, zero, ArrayRef<int64_t>{2});
  desc =
      LLVM::InsertValueOp::create(b, loc, desc, size, ArrayRef<int64_t>{3, 0});
  desc =
      LLVM::InsertValueOp::create(b, loc, desc, one, ArrayRef<int64_t>{4, 0});
  auto type = MemRefType::get({ShapedType::kDynamic}, elementType);
  return UnrealizedConversionCastOp::create(b, loc, type, desc).getResult(0);
}

EntryPointBuilder::EntryPointBuilder(OpBuilder &mb, func::FuncOp model,
                                     const EntrySignature &signature,
                                     const EntryPoint &entry)
    : model(model), signature(signature), entry(entry) {
  assert(entry.kind != EntryKind::ParamCount && entry.kind != EntryKind::Init &&
         "the header defines the parameter count; init is the runtime's");
  bool sizeQuery = entry.kind == EntryKind::WorkspaceSize ||
                   entry.kind == EntryKind::KvCacheSize;
  Location loc = model.getLoc();
  MLIRContext *ctx = model.getContext();
  SmallVector<Type> argTypes;
  for (const EntryArgument &arg : entry.arguments)
    argTypes.push_back(argumentType(ctx, arg));
  Type result = IntegerType::get(ctx, sizeQuery ? 64 : 32);
  func = func::FuncOp::create(mb, loc, entry.name,
                              FunctionType::get(ctx, argTypes, {result}));
  OpBuilder b = OpBuilder::atBlockBegin(func.addEntryBlock());
  if (sizeQuery)
    emitSizeChecks(b);
  else
    emitArgumentChecks(b);
}

Value EntryPointBuilder::argument(const EntryArgument &arg) const {
  return function().getArgument(&arg - entry.arguments.begin());
}

Value EntryPointBuilder::array(StringRef name) const {
  for (const EntryArgument *arg : entry.arrays())
    if (arg->name == name)
      return argument(*arg);
  llvm_unreachable("the entry point has no array of that name");
}

Value EntryPointBuilder::array(ArraySource source) const {
  for (const EntryArgument *arg : entry.arrays())
    if (arg->source && arg->source->kind == source.kind &&
        arg->source->index == source.index)
      return argument(*arg);
  llvm_unreachable("no array of the entry point is that value");
}

Value EntryPointBuilder::workspace() const {
  for (const EntryArgument &arg : entry.arguments)
    if (arg.kind == ArgumentKind::Workspace)
      return argument(arg);
  llvm_unreachable("the entry point has no workspace");
}

ValueRange EntryPointBuilder::sizes() const {
  SmallVector<const EntryArgument *> sizes = entry.sizes();
  // The sizes end every entry point's arguments.
  assert(!sizes.empty() && sizes.back() == &entry.arguments.back());
  return function().getArguments().take_back(sizes.size());
}

Value EntryPointBuilder::string(OpBuilder &b, StringRef text) {
  return globalString(b, func.getLoc(),
                      (func.getName() + ".str" + Twine(numStrings++)).str(),
                      text);
}

/// The label of an entry's profile ("forward"), or empty for the entries
/// without hooks (sizes and set-up).
static StringRef profileLabel(EntryKind kind) {
  switch (kind) {
  case EntryKind::Forward:
    return "forward";
  case EntryKind::Backward:
    return "backward";
  case EntryKind::Prefill:
    return "prefill";
  case EntryKind::Decode:
    return "decode";
  default:
    return "";
  }
}

Value EntryPointBuilder::profileBegin(OpBuilder &b, Location loc) {
  if (signature.cuda || profileLabel(entry.kind).empty())
    return Value();
  return callRuntimeFunction(b, loc, runtime::tfc_rt_profile_begin,
                             ValueRange{func.getArgument(0)})
      .getResult();
}

void EntryPointBuilder::profileEnd(OpBuilder &b, Location loc, StringRef what,
                                   Value start) {
  std::string text = profileLabel(entry.kind).str();
  if (!what.empty())
    text += (" " + what).str();
  // One string per name: an op emitted in several places shares it.
  auto [symbol, inserted] = profileNames.try_emplace(text);
  Value name;
  if (inserted) {
    symbol->second =
        (func.getName() + ".profile" + Twine(profileNames.size())).str();
    name = globalString(b, loc, symbol->second, text);
  } else {
    name = LLVM::AddressOfOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), symbol->second);
  }
  callRuntimeFunction(b, loc, runtime::tfc_rt_profile_end,
                      ValueRange{func.getArgument(0), name, start});
}

Value EntryPointBuilder::reportError(OpBuilder &b, Location loc,
                                     tfc_status status, StringRef format,
                                     ValueRange values) {
  Value text = string(b, (func.getName() + ": " + format).str());
  Value code = statusConstant(b, loc, status);
  return callRtError(b, loc, code, text, values);
}

/// NAME_workspace_size: -1 for sizes outside their range, else the body's
/// size (the caller's NULL and workspace checks belong to the entry points
/// that take pointers).
void EntryPointBuilder::emitSizeChecks(OpBuilder &b) {
  Location loc = model.getLoc();
  ValueRange values = sizes();
  Value bad = arith::ConstantIntOp::create(b, loc, 0, 1);
  for (auto [size, value] : llvm::zip_equal(entry.sizes(), values))
    bad = arith::OrIOp::create(b, loc, bad,
                               sizeOutOfRange(b, loc, model, *size, value));
  auto ifBad = scf::IfOp::create(b, loc, TypeRange{b.getI64Type()}, bad,
                                 /*withElseRegion=*/true);
  b.setInsertionPointToStart(&ifBad.getThenRegion().front());
  scf::YieldOp::create(
      b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, -1, 64)});
  valid = &ifBad.getElseRegion().front();
  b.setInsertionPointAfter(ifBad);
  func::ReturnOp::create(b, loc, ifBad.getResult(0));
}

void EntryPointBuilder::emitArgumentChecks(OpBuilder &b) {
  Location loc = model.getLoc();
  MLIRContext *ctx = model.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = b.getI32Type(), i64 = b.getI64Type();
  // The generated code passes the runtime handle to what it calls (the
  // parallel loops' outlining and tiling look for it).
  func->setAttr("tfc.runtime_handle", UnitAttr::get(ctx));

  // Each check: when it fails, its status and message (a printf format
  // taking up to two i64 values). In priority order: the first failing
  // check wins (NULL pointers, then sizes, then the workspace).
  struct Check {
    Value failed;
    tfc_status status;
    std::string format;
    SmallVector<Value, 2> values;
  };
  SmallVector<Check> checks;
  Value null = LLVM::ZeroOp::create(b, loc, ptr);
  // The arrays and the workspace; the context may be NULL (the default
  // runtime or stream).
  for (const EntryArgument &arg : entry.arguments)
    if (arg.kind == ArgumentKind::Array || arg.kind == ArgumentKind::Workspace)
      checks.push_back({LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq,
                                             argument(arg), null),
                        TFC_ERR_NULL_POINTER, arg.name + " is NULL"});
  for (auto [size, value] : llvm::zip_equal(entry.sizes(), sizes()))
    checks.push_back({sizeOutOfRange(b, loc, model, *size, value),
                      TFC_ERR_BAD_SHAPE,
                      llvm::formatv("{0} = %lld is outside [1, {1}]",
                                    size->name, maxOfSize(model, *size))
                          .str(),
                      {value}});
  // The buffers the generated code carves (the workspace) or reads words of
  // (the KV cache) are 64-byte aligned.
  for (const EntryArgument &arg : entry.arguments) {
    if (arg.kind != ArgumentKind::Workspace && arg.name != "kv_cache")
      continue;
    Value address = LLVM::PtrToIntOp::create(b, loc, i64, argument(arg));
    checks.push_back(
        {arith::CmpIOp::create(
             b, loc, arith::CmpIPredicate::ne,
             arith::AndIOp::create(
                 b, loc, address, arith::ConstantIntOp::create(b, loc, 63, 64)),
             arith::ConstantIntOp::create(b, loc, 0, 64)),
         arg.kind == ArgumentKind::Workspace ? TFC_ERR_WORKSPACE
                                             : TFC_ERR_BAD_ARGUMENT,
         arg.name + " 0x%llx is not 64-byte aligned",
         {address}});
  }
  // The size the caller must provide: NAME_workspace_size is the same plan
  // (-1 for out-of-range sizes, caught by a check above); decode's is that
  // of one position per sequence. NAME_kv_cache_init's cache: its size.
  Value bytes;
  for (const EntryArgument &arg : entry.arguments)
    if (arg.kind == ArgumentKind::WorkspaceBytes ||
        arg.kind == ArgumentKind::CacheBytes)
      bytes = argument(arg);
  bool cacheInit = entry.kind == EntryKind::KvCacheInit;
  const EntryPoint &sizeEntry =
      cacheInit ? *signature.kvCacheSize : signature.workspaceSize;
  SmallVector<Value> sizeValues(sizes());
  SmallVector<std::string> sizeNames;
  for (const EntryArgument &arg : sizeEntry.arguments)
    sizeNames.push_back(arg.name);
  if (entry.kind == EntryKind::Decode) {
    sizeValues.push_back(arith::ConstantIntOp::create(b, loc, 1, 64));
    sizeNames.back() = "1";
  }
  Value needed =
      func::CallOp::create(b, loc, sizeEntry.name, TypeRange{i64}, sizeValues)
          .getResult(0);
  checks.push_back(
      {arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, bytes, needed),
       cacheInit ? TFC_ERR_BAD_ARGUMENT : TFC_ERR_WORKSPACE,
       (cacheInit ? "kv_cache_bytes" : "workspace_bytes") +
           std::string(" = %lld is below ") + sizeEntry.name + "(" +
           llvm::join(sizeNames, ", ") + ") = %lld",
       {bytes, needed}});

  // Folds the checks, lowest priority first, into the status, the format
  // and its values of the first failing one.
  Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value status = statusConstant(b, loc, TFC_OK), format = null;
  SmallVector<Value, 2> values{zero64, zero64};
  for (Check &check : llvm::reverse(checks)) {
    status = arith::SelectOp::create(
        b, loc, check.failed, statusConstant(b, loc, check.status), status);
    format = LLVM::SelectOp::create(
        b, loc, check.failed,
        string(b, (func.getName() + ": " + check.format).str()), format);
    for (auto [k, value] : llvm::enumerate(check.values))
      values[k] =
          arith::SelectOp::create(b, loc, check.failed, value, values[k]);
  }

  Value isOk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, status,
                                     statusConstant(b, loc, TFC_OK));
  auto whenValid = scf::IfOp::create(b, loc, TypeRange{i32}, isOk,
                                     /*withElseRegion=*/true);
  b.setInsertionPointToStart(&whenValid.getElseRegion().front());
  scf::YieldOp::create(b, loc, callRtError(b, loc, status, format, values));
  b.setInsertionPointAfter(whenValid);
  func::ReturnOp::create(b, loc, whenValid.getResult(0));
  valid = &whenValid.getThenRegion().front();
}

Value EntryPointBuilder::finiteStatus(
    OpBuilder &b, Location loc,
    llvm::function_ref<Value(const EntryArgument &)> numelOf) {
  SmallVector<std::pair<const EntryArgument *, Value>> written;
  for (const EntryArgument *arg : entry.arrays())
    if (arg->written)
      written.emplace_back(arg, numelOf(*arg));
  Value status = statusConstant(b, loc, TFC_OK);
  if (signature.cuda)
    return status; // The runtime's scan reads host memory.
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = b.getI64Type();
  Value function = string(b, func.getName());
  Value null = LLVM::ZeroOp::create(b, loc, ptr);
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
  for (auto [arg, numel] : written) {
    // d_params' messages name the tensor (the optional tfc.param_names and
    // tfc.param_ranges: offset, numel pairs).
    Value names = null, ranges = null, numTensors = zero;
    auto nameList = model->getAttrOfType<ArrayAttr>("tfc.param_names");
    auto rangeList =
        model->getAttrOfType<DenseI64ArrayAttr>("tfc.param_ranges");
    if (arg->name == "d_params" && nameList && rangeList &&
        rangeList.size() == 2 * int64_t(nameList.size())) {
      std::string blob;
      for (Attribute n : nameList) {
        blob += cast<StringAttr>(n).getValue().str();
        blob.push_back('\0');
      }
      // globalString adds the last NUL; the names keep their own.
      blob.pop_back();
      names = string(b, blob);
      auto arrayType = LLVM::LLVMArrayType::get(i64, rangeList.size());
      std::string symbol =
          (func.getName() + ".ranges" + Twine(numStrings++)).str();
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(func->getParentOfType<ModuleOp>().getBody());
        LLVM::GlobalOp::create(
            b, loc, arrayType, /*isConstant=*/true, LLVM::Linkage::Internal,
            symbol,
            DenseElementsAttr::get(
                RankedTensorType::get({int64_t(rangeList.size())}, i64),
                rangeList.asArrayRef()));
      }
      ranges = LLVM::AddressOfOp::create(b, loc, ptr, symbol);
      numTensors =
          arith::ConstantIntOp::create(b, loc, int64_t(nameList.size()), 64);
    }
    Value n = arith::IndexCastOp::create(b, loc, i64, numel);
    status =
        callRuntimeFunction(b, loc, runtime::tfc_rt_check_finite,
                            ValueRange{status, func.getArgument(0), function,
                                       string(b, arg->name), argument(*arg), n,
                                       names, ranges, numTensors})
            .getResult();
  }
  return status;
}

} // namespace mlir::tfc::abi
