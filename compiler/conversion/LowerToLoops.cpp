//===- LowerToLoops.cpp - tfc model function -> C-ABI loops -----*- C++ -*-===//
//
// Rebuilds each `tfc.model` function as `NAME_forward` and
// `NAME_workspace_size` (see Passes.td). A model function looks like
//
//   func.func @gpt2(%params: tensor<?xf32> {tfc.role = "params"},
//                   %tokens: tensor<?x?xi32> {tfc.role = "tokens"}, ...)
//       -> (tensor<?x?x50257xf32> {tfc.role = "logits"}, ...)
//       attributes {tfc.model = "gpt2", tfc.max_batch = 8, tfc.max_seq = 1024}
//
// Roles fix the meaning of dynamic dimensions: x, tokens, targets, y and
// logits are [batch, seq, ...]; enc is [batch, enc_seq, d]. The body is tfc
// ops, index constants and at most one level of scf.for (the depth loop).
// Roles are also the argument names of the C ABI and of error messages.
//
// Every failing entry point records a message with the runtime's
// tfc_rt_error before it returns (one call per kind of failure: the
// argument checks share one), and every entry point chains
// tfc_rt_check_finite over the arrays it wrote (the runtime's numerical
// guard; a no-op unless turned on). The optional `tfc.param_names` (array of
// strings) and `tfc.param_ranges` (offset, numel pairs) attributes of the
// model name d_params' tensors in those messages.
//
//===----------------------------------------------------------------------===//

#include "conversion/LoweringPatterns.h"
#include "conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <tuple>

namespace mlir::tfc {
#define GEN_PASS_DEF_TFCLOWERTOLOOPS
#include "conversion/Passes.h.inc"
} // namespace mlir::tfc

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// Status codes of tfc/runtime.h.
enum Status : int32_t {
  kOk = 0,
  kNullPointer = 1,
  kBadShape = 2,
  kBadArgument = 3,
  kWorkspace = 5
};

/// `int32_t tfc_rt_error(int32_t status, const char *format, ...)`.
constexpr StringLiteral kRtError = "tfc_rt_error";
/// `int32_t tfc_rt_check_finite(int32_t status, const tfc_runtime *rt,
///     const char *function, const char *what, const float *data, int64_t n,
///     const char *names, const int64_t *ranges, int64_t num_tensors)`.
constexpr StringLiteral kRtCheckFinite = "tfc_rt_check_finite";

LLVM::LLVMFunctionType rtErrorType(MLIRContext *ctx) {
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = IntegerType::get(ctx, 32);
  return LLVM::LLVMFunctionType::get(i32, {i32, ptr}, /*isVarArg=*/true);
}

LLVM::LLVMFunctionType rtCheckFiniteType(MLIRContext *ctx) {
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = IntegerType::get(ctx, 32), i64 = IntegerType::get(ctx, 64);
  return LLVM::LLVMFunctionType::get(
      i32, {i32, ptr, ptr, ptr, ptr, i64, ptr, ptr, i64});
}

/// Declares the runtime functions the entry points call, once per module.
void declareRuntimeFunctions(ModuleOp module) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  MLIRContext *ctx = module.getContext();
  if (!module.lookupSymbol(kRtError))
    LLVM::LLVMFuncOp::create(b, module.getLoc(), kRtError, rtErrorType(ctx));
  if (!module.lookupSymbol(kRtCheckFinite))
    LLVM::LLVMFuncOp::create(b, module.getLoc(), kRtCheckFinite,
                             rtCheckFiniteType(ctx));
}

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
  return LLVM::CallOp::create(b, loc, rtErrorType(b.getContext()),
                              FlatSymbolRefAttr::get(b.getContext(), kRtError),
                              operands)
      .getResult();
}

StringRef roleOf(ArrayAttr attrs, unsigned i) {
  if (!attrs)
    return "";
  auto dict = dyn_cast_or_null<DictionaryAttr>(attrs[i]);
  auto role = dict ? dict.getAs<StringAttr>("tfc.role") : StringAttr();
  return role ? role.getValue() : "";
}

/// A rank-1 memref descriptor around a raw pointer of `numel` elements.
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

/// The roles of a model (or backward) function's arguments and results.
struct Interface {
  SmallVector<StringRef> argRoles;
  SmallVector<StringRef> resultRoles;
  bool hasEncoder = false;

  explicit Interface(func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      argRoles.push_back(roleOf(func.getArgAttrsAttr(), i));
      hasEncoder |= argRoles.back() == "enc";
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      resultRoles.push_back(roleOf(func.getResAttrsAttr(), i));
  }
};

/// Lowers one model: NAME_forward, NAME_backward (when tfc-derive-backward
/// made NAME_grad) and NAME_workspace_size.
class ModelLowering {
public:
  ModelLowering(func::FuncOp model, func::FuncOp grad, int64_t vectorWidth,
                bool hostMemory)
      : model(model), grad(grad), vectorWidth(vectorWidth),
        hostMemory(hostMemory),
        name(model->getAttrOfType<StringAttr>("tfc.model").getValue().str()) {}

  LogicalResult emitForward(OpBuilder &mb);
  LogicalResult emitBackward(OpBuilder &mb);
  LogicalResult emitWorkspaceSize(OpBuilder &mb);

private:
  /// A Lowering for this model and target.
  Lowering makeLowering(OpBuilder &b, Location loc, Lowering::Mode mode) {
    Lowering l(b, loc, mode, vectorWidth);
    l.gpu = !hostMemory;
    auto dtype = model->getAttrOfType<StringAttr>("tfc.linear_dtype");
    l.bf16Linear = dtype && dtype.getValue() == "bf16";
    return l;
  }

  /// A C entry point `int32_t f(rt, pointers..., workspace, workspace_bytes,
  /// sizes...)` whose argument checks (with their messages) are emitted; `l`
  /// builds inside the all-valid branch. `pointerNames` name the pointers
  /// after rt in messages (the ABI's argument names).
  struct Entry {
    func::FuncOp func;
    ValueRange pointers; // After rt, before the workspace.
    ValueRange sizes;    // batch, seq [, enc_seq] as i64.
    Value workspace;     // !llvm.ptr
    Operation *marker;   // The allocation point.
    scf::IfOp whenValid;
    unsigned numStrings = 0; // Constant strings made so far (symbol names).
  };
  Entry createEntry(OpBuilder &mb, StringRef suffix,
                    ArrayRef<std::string> pointerNames);
  /// A constant string private to the entry's function.
  Value entryString(OpBuilder &b, Entry &entry, StringRef text);
  /// The finite check over `arrays` (name, pointer, numel as index), chained
  /// after `status`; d_params uses the model's tensor names when it has
  /// them. Returns the status to return.
  Value checkFinite(Lowering &l, Entry &entry, Value status,
                    ArrayRef<std::tuple<StringRef, Value, Value>> arrays);
  void finishEntry(Lowering &l, Entry &entry);
  /// Sizes, the parameter buffer (pointers[0]) and the workspace of an
  /// entry point; returns the parameter count as an index value.
  Value bindEntry(Lowering &l, Entry &entry);

  /// batch, seq and enc_seq as index values at the allocation point.
  void bindSizes(Lowering &l, ValueRange sizes);
  SmallVector<Value> shapeForRole(Lowering &l, StringRef role, Type type);
  Value rangeStatus(OpBuilder &b, Location loc, ValueRange sizes);
  /// Whether sizes[i] is outside [1, max of that size].
  Value sizeOutOfRange(OpBuilder &b, Location loc, ValueRange sizes,
                       unsigned i);
  int64_t maxOfSize(unsigned i);
  /// A user array of `role`'s shape (Emit mode), or its dims only.
  Buffer userBuffer(Lowering &l, Value ptr, StringRef role, Type type);

  /// Forward's walk, shared by NAME_forward (Emit), the replay that finds
  /// the saved slots for NAME_backward, and NAME_workspace_size (SizeOnly).
  /// `inputs` are the user's arrays in argument order (params excluded);
  /// `outputs` the user's result arrays.
  LogicalResult walkForward(Lowering &l, ArrayRef<Buffer> inputs,
                            ArrayRef<Buffer> outputs);
  /// walkForward in SizeOnly mode with the user's arrays as shapes only:
  /// reproduces forward's allocations (and saved slots) in another function.
  LogicalResult replayForward(Lowering &l);
  /// The workspace word where forward's token check leaves the index of the
  /// first token id outside the vocabulary (-1: none), allocated before
  /// walkForward's buffers by forward and by every replay; null without
  /// tokens.
  Buffer allocateTokenCheck(Lowering &l);
  LogicalResult walkBackward(Lowering &l, ArrayRef<Buffer> dOutputs,
                             Buffer dParams, ArrayRef<Buffer> dInputs);

  LogicalResult lowerBody(Lowering &l, Block &block);
  LogicalResult lowerOp(Lowering &l, Operation *op);
  LogicalResult lowerLoop(Lowering &l, scf::ForOp loop);
  LogicalResult lowerConstant(Lowering &l, arith::ConstantOp constant);

  func::FuncOp model, grad;
  int64_t vectorWidth;
  bool hostMemory; // The host may read the user's arrays (not CUDA).
  std::string name;
  Value params;             // Flat parameter memref (Emit mode).
  Value batch, seq, encSeq; // index values at the allocation point.
  IRMapping scalars;        // Index values of the model -> lowered ones.
};

SmallVector<Value> ModelLowering::shapeForRole(Lowering &l, StringRef role,
                                               Type type) {
  return l.shapeOf(cast<ShapedType>(type), [&](unsigned i) -> Value {
    if (i == 0)
      return batch;
    return role == "enc" || role == "d_enc" ? encSeq : seq;
  });
}

int64_t ModelLowering::maxOfSize(unsigned i) {
  return model
      ->getAttrOfType<IntegerAttr>(i == 0 ? "tfc.max_batch" : "tfc.max_seq")
      .getInt();
}

Value ModelLowering::sizeOutOfRange(OpBuilder &b, Location loc,
                                    ValueRange sizes, unsigned i) {
  auto c = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64);
  };
  Value low =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, sizes[i], c(1));
  Value high = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt,
                                     sizes[i], c(maxOfSize(i)));
  return arith::OrIOp::create(b, loc, low, high);
}

Value ModelLowering::rangeStatus(OpBuilder &b, Location loc, ValueRange sizes) {
  Value bad = arith::ConstantIntOp::create(b, loc, 0, 1);
  for (unsigned i = 0; i < sizes.size(); ++i)
    bad = arith::OrIOp::create(b, loc, bad, sizeOutOfRange(b, loc, sizes, i));
  return bad;
}

void ModelLowering::bindSizes(Lowering &l, ValueRange sizes) {
  l.atAllocationPoint([&] {
    auto toIndex = [&](Value v) -> Value {
      return arith::IndexCastOp::create(l.b, l.loc, l.b.getIndexType(), v);
    };
    batch = toIndex(sizes[0]);
    seq = toIndex(sizes[1]);
    encSeq = sizes.size() > 2 ? toIndex(sizes[2]) : Value();
  });
}

Buffer ModelLowering::userBuffer(Lowering &l, Value ptr, StringRef role,
                                 Type type) {
  Buffer buffer;
  l.atAllocationPoint([&] {
    buffer.dims = shapeForRole(l, role, type);
    if (!l.sizeOnly())
      buffer.flat = memrefFromPointer(l.b, l.loc, ptr,
                                      cast<ShapedType>(type).getElementType(),
                                      l.product(buffer.dims));
  });
  return buffer;
}

ModelLowering::Entry
ModelLowering::createEntry(OpBuilder &mb, StringRef suffix,
                           ArrayRef<std::string> pointerNames) {
  Location loc = model.getLoc();
  MLIRContext *ctx = model.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = mb.getI64Type(), i32 = mb.getI32Type();
  bool hasEncoder = Interface(model).hasEncoder;
  unsigned numPointers = pointerNames.size();
  // rt, pointers..., workspace, workspace_bytes, batch, seq [, enc_seq].
  SmallVector<Type> argTypes(numPointers + 2, ptr);
  argTypes.append(hasEncoder ? 4 : 3, i64);
  Entry entry;
  std::string funcName = (name + suffix).str();
  entry.func = func::FuncOp::create(mb, loc, funcName,
                                    FunctionType::get(ctx, argTypes, {i32}));
  entry.func->setAttr("tfc.runtime_handle", UnitAttr::get(ctx));
  Block *block = entry.func.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockBegin(block);
  ValueRange args = block->getArguments();
  entry.pointers = args.slice(1, numPointers);
  entry.workspace = args[numPointers + 1];
  Value workspaceBytes = args[numPointers + 2];
  entry.sizes = args.drop_front(numPointers + 3);

  // Each check: when it fails, its status and message (a printf format
  // taking up to two i64 values). In priority order: the first failing
  // check wins (NULL pointers, then sizes, then the workspace).
  struct Check {
    Value failed;
    int32_t status;
    std::string format;
    SmallVector<Value, 2> values;
  };
  SmallVector<Check> checks;
  Value null = LLVM::ZeroOp::create(b, loc, ptr);
  SmallVector<std::string> names(pointerNames);
  names.push_back("workspace");
  for (unsigned i = 0; i <= numPointers; ++i)
    checks.push_back({LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq,
                                           args[1 + i], null),
                      kNullPointer, names[i] + " is NULL"});
  const char *sizeNames[] = {"batch", "seq", "enc_seq"};
  for (unsigned i = 0; i < entry.sizes.size(); ++i)
    checks.push_back({sizeOutOfRange(b, loc, entry.sizes, i),
                      kBadShape,
                      llvm::formatv("{0} = %lld is outside [1, {1}]",
                                    sizeNames[i], maxOfSize(i))
                          .str(),
                      {entry.sizes[i]}});
  Value wsInt = LLVM::PtrToIntOp::create(b, loc, i64, entry.workspace);
  checks.push_back(
      {arith::CmpIOp::create(
           b, loc, arith::CmpIPredicate::ne,
           arith::AndIOp::create(b, loc, wsInt,
                                 arith::ConstantIntOp::create(b, loc, 63, 64)),
           arith::ConstantIntOp::create(b, loc, 0, 64)),
       kWorkspace,
       "workspace 0x%llx is not 64-byte aligned",
       {wsInt}});
  // The size the caller must provide: NAME_workspace_size replays the same
  // allocations (-1 for out-of-range sizes, caught by a check above).
  Value needed = func::CallOp::create(b, loc, name + "_workspace_size",
                                      TypeRange{i64}, entry.sizes)
                     .getResult(0);
  checks.push_back(
      {arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, workspaceBytes,
                             needed),
       kWorkspace,
       "workspace_bytes = %lld is below " + name + "_workspace_size(" +
           (hasEncoder ? "batch, seq, enc_seq" : "batch, seq") + ") = %lld",
       {workspaceBytes, needed}});

  // Folds the checks, lowest priority first, into the status, the format
  // and its values of the first failing one.
  auto c32 = [&](int32_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 32);
  };
  Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value status = c32(kOk), format = null;
  SmallVector<Value, 2> values{zero64, zero64};
  for (Check &check : llvm::reverse(checks)) {
    status = arith::SelectOp::create(b, loc, check.failed, c32(check.status),
                                     status);
    format = LLVM::SelectOp::create(
        b, loc, check.failed,
        entryString(b, entry, funcName + ": " + check.format), format);
    for (auto [k, value] : llvm::enumerate(check.values))
      values[k] =
          arith::SelectOp::create(b, loc, check.failed, value, values[k]);
  }

  Value isOk =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, status, c32(kOk));
  entry.whenValid = scf::IfOp::create(b, loc, TypeRange{i32}, isOk,
                                      /*withElseRegion=*/true);
  b.setInsertionPointToStart(&entry.whenValid.getElseRegion().front());
  scf::YieldOp::create(b, loc, callRtError(b, loc, status, format, values));
  b.setInsertionPointAfter(entry.whenValid);
  func::ReturnOp::create(b, loc, entry.whenValid.getResult(0));
  b.setInsertionPointToStart(&entry.whenValid.getThenRegion().front());
  // Allocation arithmetic goes before `marker`, compute after it.
  entry.marker = arith::ConstantIndexOp::create(b, loc, 0);
  return entry;
}

Value ModelLowering::entryString(OpBuilder &b, Entry &entry, StringRef text) {
  return globalString(
      b, entry.func.getLoc(),
      (entry.func.getName() + ".str" + Twine(entry.numStrings++)).str(), text);
}

Value ModelLowering::checkFinite(
    Lowering &l, Entry &entry, Value status,
    ArrayRef<std::tuple<StringRef, Value, Value>> arrays) {
  if (!hostMemory)
    return status; // The runtime's scan reads host memory.
  OpBuilder &b = l.b;
  Location loc = l.loc;
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = b.getI64Type();
  Value function = entryString(b, entry, entry.func.getName());
  Value null = LLVM::ZeroOp::create(b, loc, ptr);
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
  for (auto [what, data, numel] : arrays) {
    Value names = null, ranges = null, numTensors = zero;
    auto nameList = model->getAttrOfType<ArrayAttr>("tfc.param_names");
    auto rangeList =
        model->getAttrOfType<DenseI64ArrayAttr>("tfc.param_ranges");
    if (what == "d_params" && nameList && rangeList &&
        rangeList.size() == 2 * int64_t(nameList.size())) {
      std::string blob;
      for (Attribute n : nameList) {
        blob += cast<StringAttr>(n).getValue().str();
        blob.push_back('\0');
      }
      // globalString adds the last NUL; the names keep their own.
      blob.pop_back();
      names = entryString(b, entry, blob);
      auto arrayType = LLVM::LLVMArrayType::get(i64, rangeList.size());
      std::string symbol =
          (entry.func.getName() + ".ranges" + Twine(entry.numStrings++)).str();
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(
            entry.func->getParentOfType<ModuleOp>().getBody());
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
        LLVM::CallOp::create(b, loc, rtCheckFiniteType(ctx),
                             FlatSymbolRefAttr::get(ctx, kRtCheckFinite),
                             ValueRange{status, entry.func.getArgument(0),
                                        function, entryString(b, entry, what),
                                        data, n, names, ranges, numTensors})
            .getResult();
  }
  return status;
}

Value ModelLowering::bindEntry(Lowering &l, Entry &entry) {
  bindSizes(l, entry.sizes);
  Value paramCount;
  l.atAllocationPoint([&] {
    paramCount =
        l.index(model->getAttrOfType<IntegerAttr>("tfc.param_count").getInt());
    params = memrefFromPointer(l.b, l.loc, entry.pointers[0], l.b.getF32Type(),
                               paramCount);
    // The workspace's size is the caller's promise (NAME_workspace_size).
    l.setWorkspace(memrefFromPointer(l.b, l.loc, entry.workspace,
                                     l.b.getI8Type(), l.index(INT64_MAX / 2)));
  });
  return paramCount;
}

void ModelLowering::finishEntry(Lowering &l, Entry &entry) {
  entry.marker->erase();
}

LogicalResult ModelLowering::emitForward(OpBuilder &mb) {
  Interface iface(model);
  SmallVector<unsigned> inputArgs;
  for (auto [i, role] : llvm::enumerate(iface.argRoles))
    if (role != "params")
      inputArgs.push_back(i);
  // params, inputs..., outputs...
  SmallVector<std::string> pointerNames{"params"};
  for (unsigned i : inputArgs)
    pointerNames.push_back(iface.argRoles[i].str());
  for (StringRef role : iface.resultRoles)
    pointerNames.push_back(role.str());
  Entry entry = createEntry(mb, "_forward", pointerNames);
  OpBuilder b(entry.marker->getContext());
  b.setInsertionPointAfter(entry.marker);
  Location loc = model.getLoc();
  Lowering l = makeLowering(b, loc, Lowering::Mode::Emit);
  l.setAllocationPoint(entry.marker);
  bindEntry(l, entry);
  SmallVector<Buffer> inputs, outputs;
  Value tokens;
  for (auto [k, i] : llvm::enumerate(inputArgs)) {
    inputs.push_back(userBuffer(l, entry.pointers[1 + k], iface.argRoles[i],
                                model.getArgument(i).getType()));
    if (iface.argRoles[i] == "tokens")
      tokens = inputs.back().flat;
  }
  for (auto [i, role] : llvm::enumerate(iface.resultRoles))
    outputs.push_back(userBuffer(l, entry.pointers[1 + inputArgs.size() + i],
                                 role, model.getResultTypes()[i]));

  // Token ids outside the vocabulary are an argument error, found before any
  // compute: the loop finds the first one (-1: none).
  auto i64 = b.getI64Type();
  Value noBadToken = arith::ConstantIntOp::create(b, loc, -1, 64);
  Value firstBad = noBadToken;
  int64_t vocab = 0;
  if (tokens) {
    vocab = model->getAttrOfType<IntegerAttr>("tfc.vocab").getInt();
    Value vocabI32 = arith::ConstantIntOp::create(b, loc, vocab, 32);
    Value zeroI32 = arith::ConstantIntOp::create(b, loc, 0, 32);
    // One serial scan in a one-iteration parallel loop (a kernel on CUDA)
    // whose result the host reads back from the workspace.
    Buffer result = allocateTokenCheck(l);
    l.kernelName = "token_check";
    l.parallelFor(l.index(1), [&](Value) {
      Value scan = l.forLoop(
          l.index(0), l.mul(batch, seq), ValueRange{firstBad},
          [&](Value i, ValueRange acc) -> SmallVector<Value> {
            Value id = l.load(tokens, i);
            Value inRange = arith::AndIOp::create(
                b, loc,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, id,
                                      zeroI32),
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, id,
                                      vocabI32));
            Value firstHere = arith::AndIOp::create(
                b, loc,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, acc[0],
                                      noBadToken),
                arith::XOrIOp::create(
                    b, loc, inRange,
                    arith::ConstantIntOp::create(b, loc, 1, 1)));
            return {arith::SelectOp::create(
                b, loc, firstHere, arith::IndexCastOp::create(b, loc, i64, i),
                acc[0])};
          })[0];
      l.store(scan, result.flat, l.index(0));
    });
    l.kernelName.clear();
    firstBad = l.load(result.flat, l.index(0));
  }
  Value tokensOk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                         firstBad, noBadToken);
  auto ifTokens = scf::IfOp::create(b, loc, TypeRange{b.getI32Type()}, tokensOk,
                                    /*withElseRegion=*/true);
  scf::YieldOp::create(b, loc, ifTokens.getResult(0));
  b.setInsertionPointToStart(&ifTokens.getElseRegion().front());
  if (tokens) {
    Value id = arith::ExtSIOp::create(
        b, loc, i64,
        l.load(tokens,
               arith::IndexCastOp::create(b, loc, b.getIndexType(), firstBad)));
    std::string format = llvm::formatv("{0}_forward: tokens[%lld] = %lld is "
                                       "outside [0, {1})",
                                       name, vocab)
                             .str();
    scf::YieldOp::create(
        b, loc,
        callRtError(b, loc,
                    arith::ConstantIntOp::create(b, loc, kBadArgument, 32),
                    entryString(b, entry, format), {firstBad, id}));
  } else {
    scf::YieldOp::create(
        b, loc,
        ValueRange{arith::ConstantIntOp::create(b, loc, kBadArgument, 32)});
  }
  b.setInsertionPointToStart(&ifTokens.getThenRegion().front());
  if (failed(walkForward(l, inputs, outputs)))
    return failure();
  SmallVector<std::tuple<StringRef, Value, Value>> written;
  for (auto [i, role] : llvm::enumerate(iface.resultRoles))
    written.emplace_back(role, entry.pointers[1 + inputArgs.size() + i],
                         l.product(outputs[i].dims));
  scf::YieldOp::create(
      b, loc,
      checkFinite(l, entry, arith::ConstantIntOp::create(b, loc, kOk, 32),
                  written));
  finishEntry(l, entry);
  return success();
}

LogicalResult ModelLowering::walkForward(Lowering &l, ArrayRef<Buffer> inputs,
                                         ArrayRef<Buffer> outputs) {
  Block &body = model.getBody().front();
  unsigned input = 0;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (roleOf(model.getArgAttrsAttr(), i) == "params")
      continue;
    Buffer buffer = inputs[input++];
    // An input backward needs is copied into the workspace: backward gets
    // only the workspace, not forward's inputs.
    if (auto slot = model.getArgAttrOfType<IntegerAttr>(i, "tfc.save")) {
      Type elementType = cast<ShapedType>(arg.getType()).getElementType();
      Buffer saved = l.allocateSaved(slot.getInt(), elementType, buffer.dims);
      if (!l.sizeOnly())
        emitCopy(l, buffer.flat, saved.flat, l.product(buffer.dims));
      buffer = saved;
    }
    l.bind(arg, buffer);
  }
  // Results produced directly by a top-level op write into the caller's
  // arrays; the others (depth-loop results, values saved for backward) are
  // copied at the end.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (Operation *def = value.getDefiningOp();
        def && def->getBlock() == &body && isa<TfcDialect>(def->getDialect()) &&
        !getSaveSlot(cast<OpResult>(value)))
      l.preassign(value, outputs[i]);
  if (failed(lowerBody(l, body)))
    return failure();
  if (l.sizeOnly())
    return success();
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (l.lookup(value).flat != outputs[i].flat)
      emitCopy(l, l.lookup(value).flat, outputs[i].flat,
               l.product(outputs[i].dims));
  return success();
}

LogicalResult ModelLowering::replayForward(Lowering &l) {
  assert(l.sizeOnly() && "a replay emits no compute");
  Interface iface(model);
  SmallVector<Buffer> inputs, outputs;
  for (auto [i, role] : llvm::enumerate(iface.argRoles))
    if (role != "params")
      inputs.push_back(
          userBuffer(l, Value(), role, model.getArgument(i).getType()));
  for (auto [i, role] : llvm::enumerate(iface.resultRoles))
    outputs.push_back(userBuffer(l, Value(), role, model.getResultTypes()[i]));
  allocateTokenCheck(l);
  return walkForward(l, inputs, outputs);
}

Buffer ModelLowering::allocateTokenCheck(Lowering &l) {
  if (!llvm::is_contained(Interface(model).argRoles, "tokens"))
    return Buffer();
  return l.allocate(l.b.getI64Type(), {l.allocIndex(1)});
}

LogicalResult ModelLowering::emitBackward(OpBuilder &mb) {
  Interface iface(grad);
  // params, d_outputs..., d_inputs..., d_params (docs/abi.md).
  SmallVector<unsigned> dOutputArgs;
  unsigned dParamsArg = 0;
  for (auto [i, role] : llvm::enumerate(iface.argRoles)) {
    if (role == "d_params")
      dParamsArg = i;
    else if (role != "params")
      dOutputArgs.push_back(i);
  }
  unsigned numDInputs = grad.getNumResults() - 1;
  SmallVector<std::string> pointerNames{"params"};
  for (unsigned i : dOutputArgs)
    pointerNames.push_back(iface.argRoles[i].str());
  for (unsigned k = 0; k < numDInputs; ++k)
    pointerNames.push_back(iface.resultRoles[1 + k].str());
  pointerNames.push_back("d_params");
  Entry entry = createEntry(mb, "_backward", pointerNames);
  OpBuilder b(entry.marker->getContext());
  b.setInsertionPointAfter(entry.marker);
  Location loc = model.getLoc();
  Lowering l = makeLowering(b, loc, Lowering::Mode::Emit);
  l.setAllocationPoint(entry.marker);
  Value paramCount = bindEntry(l, entry);

  // Replay forward's allocations: the saved slots are where forward left
  // them, and backward's own buffers come after forward's.
  l.setMode(Lowering::Mode::SizeOnly);
  if (failed(replayForward(l)))
    return failure();
  l.setMode(Lowering::Mode::Emit);

  SmallVector<Buffer> dOutputs, dInputs;
  for (auto [k, i] : llvm::enumerate(dOutputArgs))
    dOutputs.push_back(userBuffer(l, entry.pointers[1 + k], iface.argRoles[i],
                                  grad.getArgument(i).getType()));
  for (unsigned k = 0; k < numDInputs; ++k)
    dInputs.push_back(userBuffer(l, entry.pointers[1 + dOutputArgs.size() + k],
                                 iface.resultRoles[1 + k],
                                 grad.getResultTypes()[1 + k]));
  Buffer dParams;
  l.atAllocationPoint([&] {
    dParams.dims = {paramCount};
    dParams.flat = memrefFromPointer(b, loc, entry.pointers.back(),
                                     b.getF32Type(), paramCount);
  });
  if (failed(walkBackward(l, dOutputs, dParams, dInputs)))
    return failure();
  SmallVector<std::tuple<StringRef, Value, Value>> written;
  for (unsigned k = 0; k < numDInputs; ++k)
    written.emplace_back(iface.resultRoles[1 + k],
                         entry.pointers[1 + dOutputArgs.size() + k],
                         l.product(dInputs[k].dims));
  written.emplace_back("d_params", entry.pointers.back(), paramCount);
  scf::YieldOp::create(
      b, loc,
      checkFinite(l, entry, arith::ConstantIntOp::create(b, loc, kOk, 32),
                  written));
  finishEntry(l, entry);
  return success();
}

LogicalResult ModelLowering::walkBackward(Lowering &l,
                                          ArrayRef<Buffer> dOutputs,
                                          Buffer dParams,
                                          ArrayRef<Buffer> dInputs) {
  Block &body = grad.getBody().front();
  unsigned next = 0;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    StringRef role = roleOf(grad.getArgAttrsAttr(), i);
    if (role == "params")
      continue;
    if (role == "d_params") {
      // Accumulated in place: every version of d_params is the user's array.
      l.markInPlace(dParams.flat);
      l.bind(arg, dParams);
      continue;
    }
    l.bind(arg, dOutputs[next++]);
  }
  if (failed(lowerBody(l, body)))
    return failure();
  if (l.sizeOnly())
    return success();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [k, value] : llvm::enumerate(ret.getOperands().drop_front()))
    emitCopy(l, l.lookup(value).flat, dInputs[k].flat,
             l.product(dInputs[k].dims));
  return success();
}

LogicalResult ModelLowering::emitWorkspaceSize(OpBuilder &mb) {
  Location loc = model.getLoc();
  MLIRContext *ctx = model.getContext();
  auto i64 = mb.getI64Type();
  SmallVector<Type> argTypes(Interface(model).hasEncoder ? 3 : 2, i64);
  auto func = func::FuncOp::create(mb, loc, name + "_workspace_size",
                                   FunctionType::get(ctx, argTypes, {i64}));
  OpBuilder b(ctx);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  ValueRange sizes = entry->getArguments();
  auto ifBad =
      scf::IfOp::create(b, loc, TypeRange{i64}, rangeStatus(b, loc, sizes),
                        /*withElseRegion=*/true);
  b.setInsertionPointToStart(&ifBad.getThenRegion().front());
  scf::YieldOp::create(
      b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, -1, 64)});
  b.setInsertionPointToStart(&ifBad.getElseRegion().front());

  Operation *marker = arith::ConstantIndexOp::create(b, loc, 0);
  Lowering l = makeLowering(b, loc, Lowering::Mode::SizeOnly);
  l.setAllocationPoint(marker);
  bindSizes(l, sizes);
  // Forward's buffers, then (for training) backward's after them.
  if (failed(replayForward(l)))
    return failure();
  if (grad) {
    Interface gradIface(grad);
    SmallVector<Buffer> dOutputs, dInputs;
    for (auto [i, role] : llvm::enumerate(gradIface.argRoles))
      if (role != "params" && role != "d_params")
        dOutputs.push_back(
            userBuffer(l, Value(), role, grad.getArgument(i).getType()));
    Buffer dParams;
    l.atAllocationPoint([&] {
      dParams.dims = {l.index(
          model->getAttrOfType<IntegerAttr>("tfc.param_count").getInt())};
    });
    if (failed(walkBackward(l, dOutputs, dParams, dInputs)))
      return failure();
  }
  Value total;
  l.atAllocationPoint([&] {
    total = arith::IndexCastOp::create(b, loc, i64, l.currentOffset());
  });
  scf::YieldOp::create(b, loc, total);
  marker->erase();
  b.setInsertionPointAfter(ifBad);
  func::ReturnOp::create(b, loc, ifBad.getResult(0));
  return success();
}

LogicalResult ModelLowering::lowerBody(Lowering &l, Block &block) {
  for (Operation &op : block.without_terminator()) {
    l.kernelName = op.getName().stripDialect().str();
    if (failed(lowerOp(l, &op)))
      return failure();
  }
  l.kernelName.clear();
  return success();
}

LogicalResult ModelLowering::lowerConstant(Lowering &l,
                                           arith::ConstantOp constant) {
  if (constant.getType().isIndex()) {
    Value lowered;
    l.atAllocationPoint([&] { lowered = l.b.clone(*constant)->getResult(0); });
    scalars.map(constant.getResult(), lowered);
    return success();
  }
  // A splat f32 tensor (the seed 1 of d_loss): a filled buffer.
  auto type = dyn_cast<RankedTensorType>(constant.getType());
  auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
  if (!type || !splat || !type.getElementType().isF32() ||
      !type.hasStaticShape())
    return constant.emitOpError(
        "only index constants and static splat f32 tensors can be lowered");
  SmallVector<Value> dims = l.shapeOf(type, [](unsigned) { return Value(); });
  Buffer buffer = l.allocateResult(constant.getResult(), dims);
  if (l.sizeOnly())
    return success();
  Value value = l.f32(splat.getSplatValue<APFloat>().convertToDouble());
  l.parallelFor(l.product(dims),
                [&](Value i) { l.store(value, buffer.flat, i); });
  return success();
}

LogicalResult ModelLowering::lowerOp(Lowering &l, Operation *op) {
  auto indexArith = [&](Operation *arith) -> LogicalResult {
    if (!arith->getResult(0).getType().isIndex())
      return arith->emitOpError("only index arithmetic can be lowered");
    scalars.map(arith->getResult(0), l.b.clone(*arith, scalars)->getResult(0));
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](arith::ConstantOp c) { return lowerConstant(l, c); })
      .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp>(
          indexArith)
      .Case([&](scf::ForOp loop) { return lowerLoop(l, loop); })
      .Case([&](ParamOp p) {
        Value layer = p.getLayer() ? scalars.lookup(p.getLayer()) : Value();
        return lowerParam(p, l, params, layer);
      })
      .Case([&](ParamGradOp p) {
        Value layer = p.getLayer() ? scalars.lookup(p.getLayer()) : Value();
        return lowerParamGrad(p, l, layer);
      })
      .Case([&](SavedOp s) -> LogicalResult {
        if (!l.hasSlot(s.getSlot()))
          return s.emitOpError("reads slot ")
                 << s.getSlot() << ", which forward does not save";
        Value layer = s.getLayer() ? scalars.lookup(s.getLayer()) : Value();
        l.bind(s.getResult(), l.savedView(s.getSlot(), layer));
        return success();
      })
      .Case([&](LinearOp o) { return lowerLinear(o, l); })
      .Case([&](LayerNormOp o) { return lowerLayerNorm(o, l); })
      .Case([&](RMSNormOp o) { return lowerRMSNorm(o, l); })
      .Case([&](SplitHeadsOp o) { return lowerSplitHeads(o, l); })
      .Case([&](MergeHeadsOp o) { return lowerMergeHeads(o, l); })
      .Case([&](AttentionScoresOp o) { return lowerAttentionScores(o, l); })
      .Case([&](AttentionContextOp o) { return lowerAttentionContext(o, l); })
      .Case([&](MaskOp o) { return lowerMask(o, l); })
      .Case([&](SoftmaxOp o) { return lowerSoftmax(o, l); })
      .Case([&](ScaleOp o) { return lowerScale(o, l); })
      .Case([&](ActivationOp o) { return lowerActivation(o, l); })
      .Case([&](GLUOp o) { return lowerGLU(o, l); })
      .Case([&](ResidualAddOp o) { return lowerResidualAdd(o, l); })
      .Case([&](EmbeddingOp o) { return lowerEmbedding(o, l); })
      .Case([&](AddPositionsOp o) { return lowerAddPositions(o, l); })
      .Case([&](CrossEntropyOp o) { return lowerCrossEntropy(o, l); })
      .Case([&](AddOp o) { return lowerAdd(o, l); })
      .Case([&](ZerosLikeOp o) { return lowerZerosLike(o, l); })
      .Case([&](LinearWeightGradOp o) { return lowerLinearWeightGrad(o, l); })
      .Case([&](ReduceRowsOp o) { return lowerReduceRows(o, l); })
      .Case([&](BatchMatmulOp o) { return lowerBatchMatmul(o, l); })
      .Case([&](LayerNormGradOp o) { return lowerLayerNormGrad(o, l); })
      .Case([&](RMSNormGradOp o) { return lowerRMSNormGrad(o, l); })
      .Case([&](SoftmaxGradOp o) { return lowerSoftmaxGrad(o, l); })
      .Case([&](MaskGradOp o) { return lowerMaskGrad(o, l); })
      .Case([&](ActivationGradOp o) { return lowerActivationGrad(o, l); })
      .Case([&](GLUGradOp o) { return lowerGLUGrad(o, l); })
      .Case([&](EmbeddingGradOp o) { return lowerEmbeddingGrad(o, l); })
      .Case([&](PositionsGradOp o) { return lowerPositionsGrad(o, l); })
      .Case([&](CrossEntropyGradOp o) { return lowerCrossEntropyGrad(o, l); })
      .Case([&](LinearActOp o) { return lowerLinearAct(o, l); })
      .Case([&](MergedLinearOp o) { return lowerMergedLinear(o, l); })
      .Case([&](GLULinearOp o) { return lowerGLULinear(o, l); })
      .Case([&](MergedInputGradOp o) { return lowerMergedInputGrad(o, l); })
      .Case([&](MergedWeightGradOp o) { return lowerMergedWeightGrad(o, l); })
      .Case([&](LinearActWeightGradOp o) {
        return lowerLinearActWeightGrad(o, l);
      })
      .Case([&](ResidualNormOp o) { return lowerResidualNorm(o, l); })
      .Case([&](ResidualNormGradOp o) { return lowerResidualNormGrad(o, l); })
      .Case([&](LossHeadOp o) { return lowerLossHead(o, l); })
      .Case([&](ScaleByOp o) { return lowerScaleBy(o, l); })
      .Case([&](FlashAttentionOp o) { return lowerFlashAttention(o, l); })
      .Case(
          [&](FlashAttentionGradOp o) { return lowerFlashAttentionGrad(o, l); })
      .Default([&](Operation *other) {
        return other->emitOpError("cannot be lowered by tfc-lower-to-loops");
      });
}

/// A loop carries tensors in buffers: values updated in place (d_params)
/// keep theirs; the others (the residual stream and its gradient) live in
/// one carry buffer each, which the yielded value is copied back into. The
/// body's other buffers have fixed offsets, reused by every iteration,
/// except what forward saves for backward: one copy per layer.
LogicalResult ModelLowering::lowerLoop(Lowering &l, scf::ForOp loop) {
  if (!matchPattern(loop.getLowerBound(), m_Zero()) ||
      !matchPattern(loop.getStep(), m_One()))
    return loop.emitOpError("the depth loop must run from 0 with step 1");
  Block &body = *loop.getBody();
  auto yield = cast<scf::YieldOp>(body.getTerminator());
  SmallVector<Buffer> carries;
  for (auto [k, init] : llvm::enumerate(loop.getInitArgs())) {
    Buffer initBuf = l.lookup(init);
    Buffer carry =
        l.isInPlace(initBuf.flat)
            ? initBuf
            : l.allocate(cast<ShapedType>(init.getType()).getElementType(),
                         initBuf.dims);
    if (!l.sizeOnly() && carry.flat != initBuf.flat)
      emitCopy(l, initBuf.flat, carry.flat, l.product(carry.dims));
    carries.push_back(carry);
    l.bind(body.getArgument(1 + k), carry);
    l.bind(loop.getResult(k), carry);
  }
  if (l.isInPlace(carries.empty() ? Value() : carries[0].flat))
    return loop.emitOpError("the first loop-carried value cannot be in place");

  Value depth = scalars.lookup(loop.getUpperBound());
  auto iterArgSlot = loop->getAttrOfType<IntegerAttr>("tfc.save_iter_arg");
  // Saves the layer's input before the body overwrites nothing: the carry
  // is only written at the yield, so a copy at the top is the input.
  auto saveIterArg = [&](Value layer) {
    if (!iterArgSlot)
      return;
    l.setLoopContext(depth, layer);
    Buffer saved = l.allocateSaved(
        iterArgSlot.getInt(),
        cast<ShapedType>(body.getArgument(1).getType()).getElementType(),
        carries[0].dims);
    if (!l.sizeOnly())
      emitCopy(l, carries[0].flat, saved.flat, l.product(saved.dims));
  };

  // The loop's result saved for backward (tfc.save on the loop): a copy
  // after the loop.
  auto saveResult = [&]() {
    auto slot = loop->getAttrOfType<IntegerAttr>("tfc.save");
    if (!slot)
      return;
    Buffer saved = l.allocateSaved(
        slot.getInt(),
        cast<ShapedType>(loop.getResult(0).getType()).getElementType(),
        carries[0].dims);
    if (!l.sizeOnly())
      emitCopy(l, carries[0].flat, saved.flat, l.product(saved.dims));
    l.bind(loop.getResult(0), saved);
  };

  if (l.sizeOnly()) {
    Value layer = l.index(0);
    scalars.map(loop.getInductionVar(), layer);
    saveIterArg(layer);
    l.setLoopContext(depth, layer);
    LogicalResult result = lowerBody(l, body);
    l.setLoopContext(Value(), Value());
    saveResult();
    return result;
  }
  auto lowered = scf::ForOp::create(l.b, l.loc, l.index(0), depth, l.index(1));
  OpBuilder::InsertionGuard guard(l.b);
  l.b.setInsertionPoint(lowered.getBody()->getTerminator());
  scalars.map(loop.getInductionVar(), lowered.getInductionVar());
  saveIterArg(lowered.getInductionVar());
  l.setLoopContext(depth, lowered.getInductionVar());
  if (failed(lowerBody(l, body)))
    return failure();
  l.setLoopContext(Value(), Value());
  for (auto [k, yielded] : llvm::enumerate(yield.getOperands())) {
    Value flat = l.lookup(yielded).flat;
    if (flat != carries[k].flat)
      emitCopy(l, flat, carries[k].flat, l.product(carries[k].dims));
  }
  l.b.setInsertionPointAfter(lowered);
  saveResult();
  return success();
}

/// The attributes the lowering reads, with the types it reads them as.
LogicalResult verifyModelAttributes(func::FuncOp model, bool bf16Allowed) {
  if (!model->getAttrOfType<StringAttr>("tfc.model"))
    return model.emitOpError("tfc.model must be a string (the model's name)");
  for (StringRef name : {"tfc.max_batch", "tfc.max_seq", "tfc.param_count"})
    if (!model->getAttrOfType<IntegerAttr>(name))
      return model.emitOpError("a tfc.model function needs an integer ")
             << name;
  for (unsigned i = 0; i < model.getNumArguments(); ++i)
    if (roleOf(model.getArgAttrsAttr(), i) == "tokens" &&
        !model->getAttrOfType<IntegerAttr>("tfc.vocab"))
      return model.emitOpError(
          "a tfc.model function with token ids needs an integer tfc.vocab");
  if (Attribute dtype = model->getAttr("tfc.linear_dtype")) {
    auto name = dyn_cast<StringAttr>(dtype);
    if (!name || (name.getValue() != "f32" && name.getValue() != "bf16"))
      return model.emitOpError(
                 "tfc.linear_dtype must be \"f32\" or \"bf16\", not ")
             << dtype;
    if (name.getValue() == "bf16" && !bf16Allowed)
      return model.emitOpError(
          "tfc.linear_dtype = \"bf16\" needs a GPU with bf16 tensor cores "
          "(sm_80 or newer)");
  }
  return success();
}

struct TfcLowerToLoops : tfc::impl::TfcLowerToLoopsBase<TfcLowerToLoops> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> models;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr("tfc.model"))
        models.push_back(func);
    if (!models.empty())
      declareRuntimeFunctions(module);
    for (func::FuncOp model : models) {
      if (failed(verifyModelAttributes(model, hostMemory || bf16TensorCores)))
        return signalPassFailure();
      OpBuilder mb(model);
      func::FuncOp grad;
      for (auto func : module.getOps<func::FuncOp>())
        if (auto of = func->getAttrOfType<StringAttr>("tfc.backward_of");
            of && of == model->getAttr("tfc.model"))
          grad = func;
      // Each entry point gets a fresh lowering: they share no SSA values.
      if (failed(ModelLowering(model, grad, vectorWidth, hostMemory)
                     .emitForward(mb)) ||
          (grad && failed(ModelLowering(model, grad, vectorWidth, hostMemory)
                              .emitBackward(mb))) ||
          failed(ModelLowering(model, grad, vectorWidth, hostMemory)
                     .emitWorkspaceSize(mb)))
        return signalPassFailure();
      if (grad)
        grad.erase();
      model.erase();
    }
  }
};

} // namespace
