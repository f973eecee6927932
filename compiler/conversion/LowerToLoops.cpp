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

#include "abi/RuntimeAbi.h"
#include "conversion/OpLowering.h"
#include "conversion/Passes.h"
#include "kernels/Elementwise.h"
#include "kernels/TargetKernels.h"
#include "tfc/Dialect/TfcDialect.h"
#include "tfc/Dialect/TfcRoles.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
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

/// Declares the runtime functions the entry points call, once per module:
/// their types come from tfc/runtime.h (abi/RuntimeAbi.h).
void declareRuntimeFunctions(ModuleOp module) {
  abi::declareRuntimeFunction(module, abi::runtime::tfc_rt_error);
  abi::declareRuntimeFunction(module, abi::runtime::tfc_rt_check_finite);
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
  return abi::callRuntimeFunction(b, loc, abi::runtime::tfc_rt_error, operands)
      .getResult();
}

/// An i32 status constant of tfc/runtime.h.
Value statusOf(OpBuilder &b, Location loc, tfc_status status) {
  return abi::statusConstant(b, loc, status);
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
      argRoles.push_back(getArgRole(func, i));
      hasEncoder |= argRoles.back() == "enc";
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      resultRoles.push_back(getResultRole(func, i));
  }
};

/// Lowers one model: NAME_forward, NAME_backward (when tfc-derive-backward
/// made NAME_grad) and NAME_workspace_size.
class ModelLowering {
public:
  ModelLowering(func::FuncOp model, func::FuncOp grad, int64_t vectorWidth,
                bool hostMemory, const OpLoweringSet &lowerings)
      : model(model), grad(grad), vectorWidth(vectorWidth),
        hostMemory(hostMemory), lowerings(lowerings),
        name(model->getAttrOfType<StringAttr>("tfc.model").getValue().str()) {}

  LogicalResult emitForward(OpBuilder &mb);
  LogicalResult emitBackward(OpBuilder &mb);
  LogicalResult emitWorkspaceSize(OpBuilder &mb);

private:
  /// A Lowering for this model and target.
  Lowering makeLowering(OpBuilder &b, Location loc) {
    Lowering l(b, loc, vectorWidth,
               hostMemory ? getCpuKernels() : getCudaKernels());
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

  /// Forward's plan, shared by NAME_forward, NAME_backward (which needs
  /// forward's saved slots, and puts its own buffers after forward's) and
  /// NAME_workspace_size. `inputs` are the user's arrays in argument order
  /// (params excluded); `outputs` the user's result arrays.
  LogicalResult planForward(Lowering &l, ArrayRef<Buffer> inputs,
                            ArrayRef<Buffer> outputs);
  /// Forward's compute into the planned buffers.
  LogicalResult emitForwardBody(Lowering &l, ArrayRef<Buffer> inputs,
                                ArrayRef<Buffer> outputs);
  /// planForward with placeholder user arrays (shapes only): forward's
  /// allocations (and saved slots) in another function.
  LogicalResult planForwardOnly(Lowering &l);
  /// The workspace word where forward's token check leaves the index of the
  /// first token id outside the vocabulary (-1: none), reserved before
  /// forward's buffers by every plan of forward; null without tokens.
  Buffer allocateTokenCheck(Lowering &l);
  LogicalResult planBackward(Lowering &l, ArrayRef<Buffer> dOutputs,
                             Buffer dParams);
  LogicalResult emitBackwardBody(Lowering &l, ArrayRef<Buffer> dInputs);

  /// The two phases over a block: plan reserves (with the builder at the
  /// allocation point), emit writes the loops.
  LogicalResult planBody(Lowering &l, Block &block);
  LogicalResult emitBody(Lowering &l, Block &block);
  LogicalResult planLoop(Lowering &l, scf::ForOp loop);
  LogicalResult emitLoop(Lowering &l, scf::ForOp loop);
  /// A tfc op through its OpLowering.
  LogicalResult planOp(Lowering &l, Operation *op);
  LogicalResult emitOp(Lowering &l, Operation *op);

  func::FuncOp model, grad;
  int64_t vectorWidth;
  bool hostMemory; // The host may read the user's arrays (not CUDA).
  const OpLoweringSet &lowerings;
  std::string name;
  Value batch, seq, encSeq; // index values at the allocation point.
  /// The depth loops' carry buffers, from their plan to their emission.
  llvm::DenseMap<Operation *, SmallVector<Buffer>> loopCarries;
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
    // Functions without the array (plans of forward elsewhere) view null:
    // their plan sees the same buffers, and the view is dead code.
    if (!ptr)
      ptr = LLVM::ZeroOp::create(l.b, l.loc,
                                 LLVM::LLVMPointerType::get(l.b.getContext()));
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
    tfc_status status;
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
                      TFC_ERR_NULL_POINTER, names[i] + " is NULL"});
  const char *sizeNames[] = {"batch", "seq", "enc_seq"};
  for (unsigned i = 0; i < entry.sizes.size(); ++i)
    checks.push_back({sizeOutOfRange(b, loc, entry.sizes, i),
                      TFC_ERR_BAD_SHAPE,
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
       TFC_ERR_WORKSPACE,
       "workspace 0x%llx is not 64-byte aligned",
       {wsInt}});
  // The size the caller must provide: NAME_workspace_size is the same plan
  // (-1 for out-of-range sizes, caught by a check above).
  Value needed = func::CallOp::create(b, loc, name + "_workspace_size",
                                      TypeRange{i64}, entry.sizes)
                     .getResult(0);
  checks.push_back(
      {arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, workspaceBytes,
                             needed),
       TFC_ERR_WORKSPACE,
       "workspace_bytes = %lld is below " + name + "_workspace_size(" +
           (hasEncoder ? "batch, seq, enc_seq" : "batch, seq") + ") = %lld",
       {workspaceBytes, needed}});

  // Folds the checks, lowest priority first, into the status, the format
  // and its values of the first failing one.
  Value zero64 = arith::ConstantIntOp::create(b, loc, 0, 64);
  Value status = statusOf(b, loc, TFC_OK), format = null;
  SmallVector<Value, 2> values{zero64, zero64};
  for (Check &check : llvm::reverse(checks)) {
    status = arith::SelectOp::create(b, loc, check.failed,
                                     statusOf(b, loc, check.status), status);
    format = LLVM::SelectOp::create(
        b, loc, check.failed,
        entryString(b, entry, funcName + ": " + check.format), format);
    for (auto [k, value] : llvm::enumerate(check.values))
      values[k] =
          arith::SelectOp::create(b, loc, check.failed, value, values[k]);
  }

  Value isOk = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, status,
                                     statusOf(b, loc, TFC_OK));
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
    status = abi::callRuntimeFunction(
                 b, loc, abi::runtime::tfc_rt_check_finite,
                 ValueRange{status, entry.func.getArgument(0), function,
                            entryString(b, entry, what), data, n, names, ranges,
                            numTensors})
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
    l.setParams(memrefFromPointer(l.b, l.loc, entry.pointers[0],
                                  l.b.getF32Type(), paramCount));
    // The workspace's size is the caller's promise (NAME_workspace_size).
    l.setWorkspace(memrefFromPointer(l.b, l.loc, entry.workspace,
                                     l.b.getI8Type(), l.index(INT64_MAX / 2)));
  });
  return paramCount;
}

/// Erases the views and index arithmetic nothing reads: the plans of
/// functions that only need their sizes (NAME_workspace_size, forward's plan
/// in NAME_backward) leave them behind.
static void eraseDeadPlanCode(func::FuncOp func) {
  // In reverse pre-order, users (and nested ops) come before what they use
  // (and their parents): an erased op's operands are visited after it, and
  // nothing visited was erased with a parent.
  SmallVector<Operation *> ops;
  func->walk<WalkOrder::PreOrder>([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops))
    if (op != func && isOpTriviallyDead(op))
      op->erase();
}

void ModelLowering::finishEntry(Lowering &l, Entry &entry) {
  entry.marker->erase();
  eraseDeadPlanCode(entry.func);
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
  Lowering l = makeLowering(b, loc);
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
  // The plan: the token check's word, then forward's buffers.
  Buffer tokenCheck = allocateTokenCheck(l);
  if (failed(planForward(l, inputs, outputs)))
    return failure();
  l.setPhase(Lowering::Phase::Emit);

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
    Buffer result = tokenCheck;
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
        callRtError(b, loc, statusOf(b, loc, TFC_ERR_BAD_ARGUMENT),
                    entryString(b, entry, format), {firstBad, id}));
  } else {
    scf::YieldOp::create(b, loc,
                         ValueRange{statusOf(b, loc, TFC_ERR_BAD_ARGUMENT)});
  }
  b.setInsertionPointToStart(&ifTokens.getThenRegion().front());
  if (failed(emitForwardBody(l, inputs, outputs)))
    return failure();
  SmallVector<std::tuple<StringRef, Value, Value>> written;
  for (auto [i, role] : llvm::enumerate(iface.resultRoles))
    written.emplace_back(role, entry.pointers[1 + inputArgs.size() + i],
                         l.product(outputs[i].dims));
  scf::YieldOp::create(
      b, loc, checkFinite(l, entry, statusOf(b, loc, TFC_OK), written));
  finishEntry(l, entry);
  return success();
}

LogicalResult ModelLowering::planForward(Lowering &l, ArrayRef<Buffer> inputs,
                                         ArrayRef<Buffer> outputs) {
  Block &body = model.getBody().front();
  unsigned input = 0;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (getArgRole(model, i) == "params")
      continue;
    Buffer buffer = inputs[input++];
    // An input backward needs is copied into the workspace: backward gets
    // only the workspace, not forward's inputs.
    if (auto slot = model.getArgAttrOfType<IntegerAttr>(i, "tfc.save")) {
      Type elementType = cast<ShapedType>(arg.getType()).getElementType();
      l.atAllocationPoint([&] {
        buffer = l.allocateSaved(slot.getInt(), elementType, buffer.dims);
      });
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
  return planBody(l, body);
}

LogicalResult ModelLowering::emitForwardBody(Lowering &l,
                                             ArrayRef<Buffer> inputs,
                                             ArrayRef<Buffer> outputs) {
  Block &body = model.getBody().front();
  unsigned input = 0;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (getArgRole(model, i) == "params")
      continue;
    const Buffer &user = inputs[input++];
    Buffer planned = l.lookup(arg);
    if (planned.flat != user.flat)
      emitCopy(l, user.flat, planned.flat, l.product(user.dims));
  }
  if (failed(emitBody(l, body)))
    return failure();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands()))
    if (l.lookup(value).flat != outputs[i].flat)
      emitCopy(l, l.lookup(value).flat, outputs[i].flat,
               l.product(outputs[i].dims));
  return success();
}

LogicalResult ModelLowering::planForwardOnly(Lowering &l) {
  assert(l.phase() == Lowering::Phase::Plan && "a plan emits no compute");
  Interface iface(model);
  SmallVector<Buffer> inputs, outputs;
  for (auto [i, role] : llvm::enumerate(iface.argRoles))
    if (role != "params")
      inputs.push_back(
          userBuffer(l, Value(), role, model.getArgument(i).getType()));
  for (auto [i, role] : llvm::enumerate(iface.resultRoles))
    outputs.push_back(userBuffer(l, Value(), role, model.getResultTypes()[i]));
  allocateTokenCheck(l);
  return planForward(l, inputs, outputs);
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
  Lowering l = makeLowering(b, loc);
  l.setAllocationPoint(entry.marker);
  Value paramCount = bindEntry(l, entry);

  // Forward's plan: the saved slots are where forward left them, and
  // backward's own buffers come after forward's.
  if (failed(planForwardOnly(l)))
    return failure();

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
  if (failed(planBackward(l, dOutputs, dParams)))
    return failure();
  l.setPhase(Lowering::Phase::Emit);
  if (failed(emitBackwardBody(l, dInputs)))
    return failure();
  SmallVector<std::tuple<StringRef, Value, Value>> written;
  for (unsigned k = 0; k < numDInputs; ++k)
    written.emplace_back(iface.resultRoles[1 + k],
                         entry.pointers[1 + dOutputArgs.size() + k],
                         l.product(dInputs[k].dims));
  written.emplace_back("d_params", entry.pointers.back(), paramCount);
  scf::YieldOp::create(
      b, loc, checkFinite(l, entry, statusOf(b, loc, TFC_OK), written));
  finishEntry(l, entry);
  return success();
}

LogicalResult ModelLowering::planBackward(Lowering &l,
                                          ArrayRef<Buffer> dOutputs,
                                          Buffer dParams) {
  Block &body = grad.getBody().front();
  unsigned next = 0;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    StringRef role = getArgRole(grad, i);
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
  return planBody(l, body);
}

LogicalResult ModelLowering::emitBackwardBody(Lowering &l,
                                              ArrayRef<Buffer> dInputs) {
  Block &body = grad.getBody().front();
  if (failed(emitBody(l, body)))
    return failure();
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
  Lowering l = makeLowering(b, loc);
  l.setAllocationPoint(marker);
  bindSizes(l, sizes);
  // The plans of the entry points: a null workspace, whose views are dead.
  l.atAllocationPoint([&] {
    Value null = LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(ctx));
    l.setWorkspace(
        memrefFromPointer(b, loc, null, b.getI8Type(), l.index(INT64_MAX / 2)));
  });
  // Forward's buffers, then (for training) backward's after them.
  if (failed(planForwardOnly(l)))
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
      Value null =
          LLVM::ZeroOp::create(b, loc, LLVM::LLVMPointerType::get(ctx));
      dParams.flat =
          memrefFromPointer(b, loc, null, b.getF32Type(), dParams.dims[0]);
    });
    if (failed(planBackward(l, dOutputs, dParams)))
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
  eraseDeadPlanCode(func);
  return success();
}

LogicalResult ModelLowering::planBody(Lowering &l, Block &block) {
  OpBuilder::InsertionGuard guard(l.b);
  for (Operation &op : block.without_terminator()) {
    l.b.setInsertionPoint(l.allocationPoint());
    LogicalResult planned =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](arith::ConstantOp constant) -> LogicalResult {
              if (constant.getType().isIndex()) {
                l.mapScalar(constant, l.b.clone(*constant)->getResult(0));
                return success();
              }
              // A splat f32 tensor (the seed 1 of d_loss): a filled buffer.
              auto type = dyn_cast<RankedTensorType>(constant.getType());
              if (!type || !isa<SplatElementsAttr>(constant.getValue()) ||
                  !type.getElementType().isF32() || !type.hasStaticShape())
                return constant.emitOpError(
                    "only index constants and static splat f32 tensors can "
                    "be lowered");
              l.allocateResult(
                  constant, l.shapeOf(type, [](unsigned) { return Value(); }));
              return success();
            })
            .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp>(
                [&](Operation *arith) -> LogicalResult {
                  // Lowered where they are (they may use the layer index).
                  if (!arith->getResult(0).getType().isIndex())
                    return arith->emitOpError(
                        "only index arithmetic can be lowered");
                  return success();
                })
            .Case([&](scf::ForOp loop) { return planLoop(l, loop); })
            .Default([&](Operation *other) { return planOp(l, other); });
    if (failed(planned))
      return failure();
  }
  return success();
}

LogicalResult ModelLowering::emitBody(Lowering &l, Block &block) {
  for (Operation &op : block.without_terminator()) {
    // Every op's loops are kernels named after it on CUDA ("for": the depth
    // loop's carry copies).
    l.kernelName = op.getName().stripDialect().str();
    LogicalResult emitted =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](arith::ConstantOp constant) {
              if (constant.getType().isIndex())
                return success();
              Buffer buffer = l.lookup(constant);
              auto splat = cast<SplatElementsAttr>(constant.getValue());
              Value value =
                  l.f32(splat.getSplatValue<APFloat>().convertToDouble());
              l.parallelFor(l.product(buffer.dims),
                            [&](Value i) { l.store(value, buffer.flat, i); });
              return success();
            })
            .Case<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivUIOp>(
                [&](Operation *arith) {
                  l.mapScalar(
                      arith->getResult(0),
                      l.b.clone(*arith, l.scalarMapping())->getResult(0));
                  return success();
                })
            .Case([&](scf::ForOp loop) { return emitLoop(l, loop); })
            .Default([&](Operation *other) { return emitOp(l, other); });
    if (failed(emitted))
      return failure();
  }
  l.kernelName.clear();
  return success();
}

LogicalResult ModelLowering::planOp(Lowering &l, Operation *op) {
  const OpLowering *lowering = lowerings.lookup(op);
  if (!lowering)
    return op->emitOpError("cannot be lowered by tfc-lower-to-loops");
  l.beginOp(op);
  if (failed(lowering->plan(op, l)))
    return failure();
  return l.endOp();
}

LogicalResult ModelLowering::emitOp(Lowering &l, Operation *op) {
  l.beginOp(op);
  l.bindSavedResults(op);
  if (failed(lowerings.lookup(op)->emit(op, l)))
    return failure();
  return l.endOp();
}

/// A loop carries tensors in buffers: values updated in place (d_params)
/// keep theirs; the others (the residual stream and its gradient) live in
/// one carry buffer each, which the yielded value is copied back into. The
/// body's other buffers have fixed offsets, reused by every iteration,
/// except what forward saves for backward: one copy per layer.
LogicalResult ModelLowering::planLoop(Lowering &l, scf::ForOp loop) {
  if (!matchPattern(loop.getLowerBound(), m_Zero()) ||
      !matchPattern(loop.getStep(), m_One()))
    return loop.emitOpError("the depth loop must run from 0 with step 1");
  Value depth = l.scalar(loop.getUpperBound());
  if (!depth)
    return loop.emitOpError("the depth loop's trip count must be a constant");
  Block &body = *loop.getBody();
  SmallVector<Buffer> &carries = loopCarries[loop];
  for (auto [k, init] : llvm::enumerate(loop.getInitArgs())) {
    Buffer initBuf = l.lookup(init);
    Buffer carry =
        l.isInPlace(initBuf.flat)
            ? initBuf
            : l.allocate(cast<ShapedType>(init.getType()).getElementType(),
                         initBuf.dims);
    carries.push_back(carry);
    l.bind(body.getArgument(1 + k), carry);
    l.bind(loop.getResult(k), carry);
  }
  if (l.isInPlace(carries.empty() ? Value() : carries[0].flat))
    return loop.emitOpError("the first loop-carried value cannot be in place");

  l.setLoopContext(depth, Value());
  // The layer's input, saved per layer (copied at the top of each layer).
  if (auto slot = loop->getAttrOfType<IntegerAttr>("tfc.save_iter_arg"))
    l.allocateSaved(
        slot.getInt(),
        cast<ShapedType>(body.getArgument(1).getType()).getElementType(),
        carries[0].dims);
  LogicalResult result = planBody(l, body);
  l.setLoopContext(Value(), Value());
  // The loop's result saved for backward (tfc.save on the loop): a copy
  // after the loop.
  if (auto slot = loop->getAttrOfType<IntegerAttr>("tfc.save"))
    l.bind(loop.getResult(0),
           l.allocateSaved(
               slot.getInt(),
               cast<ShapedType>(loop.getResult(0).getType()).getElementType(),
               carries[0].dims));
  return result;
}

LogicalResult ModelLowering::emitLoop(Lowering &l, scf::ForOp loop) {
  Block &body = *loop.getBody();
  auto yield = cast<scf::YieldOp>(body.getTerminator());
  const SmallVector<Buffer> &carries = loopCarries[loop];
  for (auto [k, init] : llvm::enumerate(loop.getInitArgs())) {
    Buffer initBuf = l.lookup(init);
    if (carries[k].flat != initBuf.flat)
      emitCopy(l, initBuf.flat, carries[k].flat, l.product(carries[k].dims));
  }
  Value depth = l.scalar(loop.getUpperBound());
  auto lowered = scf::ForOp::create(l.b, l.loc, l.index(0), depth, l.index(1));
  {
    OpBuilder::InsertionGuard guard(l.b);
    l.b.setInsertionPoint(lowered.getBody()->getTerminator());
    Value layer = lowered.getInductionVar();
    l.mapScalar(loop.getInductionVar(), layer);
    l.setLoopContext(depth, layer);
    // The carry is only written at the yield, so a copy at the top is the
    // layer's input.
    if (auto slot = loop->getAttrOfType<IntegerAttr>("tfc.save_iter_arg")) {
      Buffer saved = l.savedView(slot.getInt(), layer);
      emitCopy(l, carries[0].flat, saved.flat, l.product(saved.dims));
    }
    if (failed(emitBody(l, body)))
      return failure();
    l.setLoopContext(Value(), Value());
    for (auto [k, yielded] : llvm::enumerate(yield.getOperands())) {
      Value flat = l.lookup(yielded).flat;
      if (flat != carries[k].flat)
        emitCopy(l, flat, carries[k].flat, l.product(carries[k].dims));
    }
  }
  if (loop->getAttrOfType<IntegerAttr>("tfc.save")) {
    Buffer saved = l.lookup(loop.getResult(0));
    emitCopy(l, carries[0].flat, saved.flat, l.product(saved.dims));
  }
  return success();
}

/// What the target must support for this model. The model's attributes
/// themselves are the dialect's to verify
/// (TfcDialect::verifyOperationAttribute).
LogicalResult verifyTargetSupports(func::FuncOp model, bool bf16Allowed) {
  auto dtype = model->getAttrOfType<StringAttr>("tfc.linear_dtype");
  if (dtype && dtype.getValue() == "bf16" && !bf16Allowed)
    return model.emitOpError(
        "tfc.linear_dtype = \"bf16\" needs a GPU with bf16 tensor cores "
        "(sm_80 or newer)");
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
    OpLoweringSet lowerings;
    populateTfcLowerings(lowerings);
    for (func::FuncOp model : models) {
      if (failed(verifyTargetSupports(model, hostMemory || bf16TensorCores)))
        return signalPassFailure();
      OpBuilder mb(model);
      func::FuncOp grad;
      for (auto func : module.getOps<func::FuncOp>())
        if (auto of = func->getAttrOfType<StringAttr>("tfc.backward_of");
            of && of == model->getAttr("tfc.model"))
          grad = func;
      // Each entry point gets a fresh lowering: they share no SSA values.
      if (failed(ModelLowering(model, grad, vectorWidth, hostMemory, lowerings)
                     .emitForward(mb)) ||
          (grad &&
           failed(ModelLowering(model, grad, vectorWidth, hostMemory, lowerings)
                      .emitBackward(mb))) ||
          failed(ModelLowering(model, grad, vectorWidth, hostMemory, lowerings)
                     .emitWorkspaceSize(mb)))
        return signalPassFailure();
      if (grad)
        grad.erase();
      model.erase();
    }
  }
};

} // namespace
